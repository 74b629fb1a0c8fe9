"""gcp/train_<scenario>.sh as a user runs them, with the real gcloud, against a stand-in.

gcloud sends its requests to an HTTP server on 127.0.0.1 (tests/vertex_standin.py)
with its configuration in a temp dir, so nothing reaches a real cloud and the
user's gcloud settings are untouched. The tests read the JSON the server received:
worker pools, replicas, machines, accelerators, Spot, images, command and
arguments, SEED_* environment, bucket paths, TensorBoard and service account, and
a tuning job's study. Bad input must fail naming the value and what is accepted,
with nothing sent. gcloud takes 2-4 s to start, so every submission of the module
runs at once, in one fixture.
"""
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from tests import vertex_standin
from tests.processes import REPO

pytestmark = pytest.mark.timeout(180)

GCP = os.path.join(REPO, 'gcp')
PROJECT, REGION = 'seed-test-project', 'us-central1'
BUCKET = 'gs://seed-test-bucket/team'
REGISTRY = f'us-central1-docker.pkg.dev/{PROJECT}/seed'
LEARNER_IMAGE, ACTOR_IMAGE = f'{REGISTRY}/seed-learner:gpu', f'{REGISTRY}/seed-actor:v1'
CPU_LEARNER_IMAGE = f'{REGISTRY}/seed-learner:cpu'  # for a learner machine without a GPU
TENSORBOARD = f'projects/{PROJECT}/locations/{REGION}/tensorboards/4711'
SERVICE_ACCOUNT = f'seed-trainer@{PROJECT}.iam.gserviceaccount.com'
TOKEN = 'standin-token-4f2a'
SETTINGS = [f'--project={PROJECT}', f'--region={REGION}', f'--bucket={BUCKET}',
            f'--learner_image={CPU_LEARNER_IMAGE}', f'--actor_image={ACTOR_IMAGE}']
GPU_IMAGE = f'--learner_image={LEARNER_IMAGE}'
HAS_GCLOUD = shutil.which('gcloud') is not None
needs_gcloud = pytest.mark.skipif(
    not HAS_GCLOUD, reason='gcloud (the Google Cloud CLI) is not installed: these tests run '
    'the real CLI against the stand-in endpoint')

# Each scenario script once, the flags a user adds, and the job it must make: the
# defaults gcp/README.md documents. atari_vtrace carries every option.
SCENARIOS = {
    'toy_vtrace': dict(
        flags=[],
        learner=('e2-standard-4', None, None), actors=(2, 'e2-standard-4'),
        timeout='21600s',  # the scenario's default, 6 h
        learner_env={'SEED_AGENT': 'vtrace', 'SEED_GIN_FILE': 'gin/toy/vtrace.gin',
                     'SEED_TARGET_RETURN': '400', 'SEED_MAX_ENV_FRAMES': '2000000'},
        actor_env={'SEED_GIN_FILE': 'gin/toy/vtrace.gin', 'SEED_NUM_ENVS': '4',
                   'SEED_ACTORS_PER_REPLICA': '1'}),
    'atari_vtrace': dict(
        flags=['--spot', f'--tensorboard={TENSORBOARD}', f'--service_account={SERVICE_ACCOUNT}',
               "--gin_bindings=EnvConfig.name='atari:Breakout'",
               '--gin_bindings=VTraceConfig.entropy_cost=0.005', '--target_return=20',
               '--num_splits=2', '--seed', '7', '--envs_per_actor=12', '--actors_per_replica=2',
               '--timeout=36h', GPU_IMAGE],
        learner=('n1-standard-8', 'NVIDIA_TESLA_T4', 1), actors=(8, 'e2-standard-4'),
        image=LEARNER_IMAGE, timeout='129600s',  # 36 h
        learner_env={'SEED_AGENT': 'vtrace', 'SEED_GIN_FILE': 'gin/atari/vtrace.gin',
                     'SEED_GIN_BINDINGS': "EnvConfig.name='atari:Breakout'\n"
                                          'VTraceConfig.entropy_cost=0.005',
                     'SEED_MAX_ENV_FRAMES': '50000000', 'SEED_TARGET_RETURN': '20',
                     'SEED_SEED': '7'},
        actor_env={'SEED_GIN_FILE': 'gin/atari/vtrace.gin',
                   'SEED_GIN_BINDINGS': "EnvConfig.name='atari:Breakout'\n"
                                        'VTraceConfig.entropy_cost=0.005',
                   'SEED_NUM_ENVS': '12', 'SEED_ACTORS_PER_REPLICA': '2', 'SEED_NUM_SPLITS': '2',
                   'SEED_SEED': '7'}),
    'atari_r2d2': dict(
        flags=['--actor_replicas=3', '--learner_accelerator_type=NVIDIA_TESLA_V100',
               '--bootstrap_timeout_s=5400', GPU_IMAGE],  # seed-job's: how long actors wait for TLS
        learner=('n1-standard-8', 'NVIDIA_TESLA_V100', 1), actors=(3, 'e2-standard-4'),
        image=LEARNER_IMAGE, timeout='259200s',  # 3 d
        learner_env={'SEED_AGENT': 'r2d2', 'SEED_GIN_FILE': 'gin/atari/r2d2.gin',
                     'SEED_MAX_ENV_FRAMES': '50000000'},
        actor_env={'SEED_GIN_FILE': 'gin/atari/r2d2.gin', 'SEED_NUM_ENVS': '4',
                   'SEED_ACTORS_PER_REPLICA': '4', 'SEED_BOOTSTRAP_TIMEOUT_S': '5400'}),
    'mujoco_sac': dict(
        flags=['--env=mujoco:Hopper-v5', '--max_env_frames=3000000'],
        learner=('e2-standard-8', None, None), actors=(1, 'e2-standard-4'),
        timeout='172800s',  # 2 d
        learner_env={'SEED_AGENT': 'sac', 'SEED_GIN_FILE': 'gin/mujoco/sac.gin',
                     'SEED_MAX_ENV_FRAMES': '3000000', 'SEED_ENV': 'mujoco:Hopper-v5'},
        actor_env={'SEED_GIN_FILE': 'gin/mujoco/sac.gin', 'SEED_NUM_ENVS': '2',
                   'SEED_ACTORS_PER_REPLICA': '1',
                   'SEED_ENV': 'mujoco:Hopper-v5'}),
    'mujoco_ppo': dict(
        flags=['--nocheckpoint_replay', '--actor_machine_type=n2-standard-4'],
        learner=('e2-standard-8', None, None), actors=(2, 'n2-standard-4'),
        timeout='86400s',  # 1 d
        learner_env={'SEED_AGENT': 'ppo', 'SEED_GIN_FILE': 'gin/mujoco/ppo.gin',
                     'SEED_MAX_ENV_FRAMES': '1000000', 'SEED_CHECKPOINT_REPLAY': 'false'},
        actor_env={'SEED_GIN_FILE': 'gin/mujoco/ppo.gin', 'SEED_NUM_ENVS': '4',
                   'SEED_ACTORS_PER_REPLICA': '4'}),
    'dmc_sac': dict(
        flags=['--learner_machine_type=g2-standard-8', '--learner_accelerator_type=NVIDIA_L4',
               '--learner_accelerator_count=1', GPU_IMAGE],
        learner=('g2-standard-8', 'NVIDIA_L4', 1), actors=(1, 'e2-standard-4'),
        image=LEARNER_IMAGE, timeout='172800s',
        learner_env={'SEED_AGENT': 'sac', 'SEED_GIN_FILE': 'gin/dmc/sac.gin',
                     'SEED_MAX_ENV_FRAMES': '1000000'},
        actor_env={'SEED_GIN_FILE': 'gin/dmc/sac.gin', 'SEED_NUM_ENVS': '2',
                   'SEED_ACTORS_PER_REPLICA': '1'}),
}
SWEEP_FLAGS = [
    '--sweep_parameter=learning_rate=VTraceConfig.learning_rate:double:1e-5:1e-2:log',
    '--sweep_parameter=entropy_cost=VTraceConfig.entropy_cost:discrete:0.03,0.001,0.01',
    '--sweep_parameter=unroll_length=VTraceConfig.unroll_length:int:10:40',
    '--sweep_parameter=torso=VTraceConfig.torso:categorical:mlp,auto',
    '--max_trial_count=12', '--parallel_trial_count=3', '--max_env_frames=500000', '--spot']
# Nothing a job spec must ever hold: seed-job makes or derives these in the job.
NEVER_IN_SPEC = ('SEED_AUTH_TOKEN', 'SEED_AUTH_TOKEN_FILE', 'SEED_TLS_CERT_FILE',
                 'SEED_TLS_KEY_FILE', 'SEED_TLS_CA_FILE', 'SEED_LOGDIR', 'SEED_SERVER_ADDRESS',
                 'SEED_ACTOR_ID')


def run_script(script, args, env, tmp_dir):
  """A train_*.sh (or submit.py) as a user runs it; its own TMPDIR for the config file."""
  os.makedirs(tmp_dir, exist_ok=True)
  command = ([sys.executable, os.path.join(GCP, script)] if script.endswith('.py') else
             [os.path.join(GCP, script)])
  return subprocess.run(command + list(args), env=dict(env, TMPDIR=tmp_dir), cwd=REPO,
                        capture_output=True, text=True, timeout=120)


@pytest.fixture(scope='module')
def standin(tmp_path_factory):
  server = vertex_standin.StandIn()
  directory = str(tmp_path_factory.mktemp('gcloud'))
  env, token_file = vertex_standin.gcloud_environment(server, directory)
  yield server, env, token_file, directory
  server.close()


@pytest.fixture(scope='module')
def submitted(standin):
  """Every scenario script, a sweep and a refused submission, all at once."""
  if not HAS_GCLOUD:
    pytest.skip('gcloud (the Google Cloud CLI) is not installed: these tests run the real '
                'CLI against the stand-in endpoint')
  server, env, token_file, directory = standin
  token = [f'--gcloud_flag=--access-token-file={token_file}']
  runs = {name: (f'train_{name}.sh', SETTINGS + case['flags'] + [f'--run_name={name}-1'])
          for name, case in SCENARIOS.items()}
  runs['sweep'] = ('train_toy_vtrace.sh', SETTINGS + SWEEP_FLAGS + ['--run_name=sweep-1'])
  server.refuse('refused-1', 403, 'PERMISSION_DENIED',
                "Permission 'aiplatform.customJobs.create' denied on resource")
  runs['refused'] = ('train_toy_vtrace.sh', SETTINGS + ['--run_name=refused-1'])
  with concurrent.futures.ThreadPoolExecutor(len(runs)) as pool:
    futures = {name: pool.submit(run_script, script, args + token, env,
                                 os.path.join(directory, 'tmp', name))
               for name, (script, args) in runs.items()}
    results = {name: future.result() for name, future in futures.items()}
  return results, server, directory


def received(server, display_name, collection):
  """The one create request the stand-in got for this job, checked for place and token."""
  requests = server.requests(display_name)
  assert len(requests) == 1, requests
  request = requests[0]
  assert request.method == 'POST'
  assert request.path == f'/v1/projects/{PROJECT}/locations/{REGION}/{collection}'
  assert request.headers['authorization'] == f'Bearer {TOKEN}'
  return request.body


def environment(pool):
  return {item['name']: item['value'] for item in pool['containerSpec'].get('env', [])}


def check_pools(spec, case, args=None):
  learner_image = case.get('image', CPU_LEARNER_IMAGE)
  learner, actors = spec['workerPoolSpecs']
  machine, accelerator, count = case['learner']
  expected_machine = {'machineType': machine}
  if accelerator:
    expected_machine.update(acceleratorType=accelerator, acceleratorCount=count)
  assert learner['machineSpec'] == expected_machine
  # gcloud sends int64 as a string; a dry run prints the spec's own integers.
  assert str(learner['replicaCount']) == '1'
  replicas, actor_machine = case['actors']
  assert actors['machineSpec'] == {'machineType': actor_machine}
  assert str(actors['replicaCount']) == str(replicas)
  for pool, image in ((learner, learner_image), (actors, ACTOR_IMAGE)):
    container = pool['containerSpec']
    assert container['imageUri'] == image
    assert container['command'] == ['seed-job']
    assert container.get('args') == args
    assert not set(environment(pool)) & set(NEVER_IN_SPEC)
  assert environment(learner) == case['learner_env']
  assert environment(actors) == case['actor_env']


@needs_gcloud
@pytest.mark.parametrize('scenario', list(SCENARIOS))
def test_each_script_submits_its_custom_job(submitted, scenario):
  results, server, directory = submitted
  result, case, run_name = results[scenario], SCENARIOS[scenario], f'{scenario}-1'
  assert result.returncode == 0, result.stderr
  run_dir = f'{BUCKET}/runs/{run_name}'
  assert f'run directory: {run_dir}' in result.stderr
  assert f'--run_name={run_name}' in result.stderr  # how to resume it
  body = received(server, run_name, 'customJobs')
  assert body['labels'] == {'seed_scenario': scenario}
  spec = body['jobSpec']
  check_pools(spec, case)
  assert spec['baseOutputDirectory'] == {'outputUriPrefix': run_dir}
  everything = scenario == 'atari_vtrace'
  # Every job has a timeout, the scenario's unless given: a learner that never exits 0
  # must not keep a job, and its bill, running for Vertex's 7 days.
  assert spec['scheduling'] == ({'strategy': 'SPOT', 'timeout': case['timeout']} if everything
                                else {'timeout': case['timeout']})
  if everything:
    assert spec['tensorboard'] == TENSORBOARD
    assert spec['serviceAccount'] == SERVICE_ACCOUNT
  else:
    assert 'tensorboard' not in spec and 'serviceAccount' not in spec
  assert os.listdir(os.path.join(directory, 'tmp', scenario)) == []  # config file removed


@needs_gcloud
def test_a_sweep_submits_a_tuning_job_whose_trials_bind_the_parameters(submitted):
  results, server, _ = submitted
  result = results['sweep']
  assert result.returncode == 0, result.stderr
  assert 'YAML' not in result.stderr  # 1e-05 written as 1.0e-05: no YAML 1.1 float warning
  body = received(server, 'sweep-1', 'hyperparameterTuningJobs')
  assert body['maxTrialCount'] == 12 and body['parallelTrialCount'] == 3
  assert body['labels'] == {'seed_scenario': 'toy_vtrace'}
  study = body['studySpec']
  assert study['metrics'] == [{'metricId': 'episode_return', 'goal': 'MAXIMIZE'}]
  assert 'algorithm' not in study  # Vertex's default search
  assert study['parameters'] == [
      {'parameterId': 'learning_rate', 'doubleValueSpec': {'minValue': 1e-05, 'maxValue': 0.01},
       'scaleType': 'UNIT_LOG_SCALE'},
      {'parameterId': 'entropy_cost', 'discreteValueSpec': {'values': [0.001, 0.01, 0.03]}},
      {'parameterId': 'unroll_length', 'integerValueSpec': {'minValue': '10', 'maxValue': '40'},
       'scaleType': 'UNIT_LINEAR_SCALE'},
      {'parameterId': 'torso', 'categoricalValueSpec': {'values': ['mlp', 'auto']}}]
  trial = body['trialJobSpec']
  case = dict(SCENARIOS['toy_vtrace'])
  case['learner_env'] = dict(case['learner_env'], SEED_MAX_ENV_FRAMES='500000',
                             SEED_HYPERTUNE_METRIC='episode_return')
  check_pools(trial, case, args=[
      '--sweep_binding=learning_rate=VTraceConfig.learning_rate',
      '--sweep_binding=entropy_cost=VTraceConfig.entropy_cost',
      '--sweep_binding=unroll_length=VTraceConfig.unroll_length',
      '--sweep_binding=torso=VTraceConfig.torso'])
  assert trial['baseOutputDirectory'] == {'outputUriPrefix': f'{BUCKET}/runs/sweep-1'}
  assert trial['scheduling'] == {'strategy': 'SPOT', 'timeout': '21600s'}  # each trial's


@needs_gcloud
def test_a_refused_submission_fails_with_the_servers_reason(submitted):
  results, server, directory = submitted
  result = results['refused']
  assert result.returncode != 0
  assert "Permission 'aiplatform.customJobs.create' denied" in result.stderr
  assert 'run directory' not in result.stderr
  assert len(server.requests('refused-1')) == 1
  assert os.listdir(os.path.join(directory, 'tmp', 'refused')) == []


def test_dry_run_prints_the_spec_and_the_command_and_submits_nothing(standin, tmp_path):
  server, env, token_file, _ = standin
  before = len(server.requests())
  result = run_script('train_toy_vtrace.sh', SETTINGS + [
      '--dry_run', f'--gcloud_flag=--access-token-file={token_file}'], env, str(tmp_path))
  assert result.returncode == 0, result.stderr
  spec = json.loads(result.stdout)  # a config file as it stands: --dry_run > SPEC.yaml
  check_pools(spec, SCENARIOS['toy_vtrace'])
  assert spec['scheduling'] == {'timeout': '21600s'}
  run_name = re.fullmatch(r'gs://seed-test-bucket/team/runs/(toy_vtrace-\d{8}-\d{6})',
                          spec['baseOutputDirectory']['outputUriPrefix']).group(1)
  assert 'nothing submitted' in result.stderr
  assert (f'gcloud ai custom-jobs create --project={PROJECT} --region={REGION} '
          f'--display-name={run_name} --labels=seed_scenario=toy_vtrace --config=SPEC.yaml '
          f'--access-token-file={token_file}') in result.stderr
  assert len(server.requests()) == before


@pytest.mark.parametrize('script, flags, machine', [
    ('train_atari_vtrace.sh', ['--learner_accelerator_type=none'],
     {'machineType': 'n1-standard-8'}),
    ('train_toy_vtrace.sh', ['--learner_machine_type=n1-standard-4',
                             '--learner_accelerator_type=NVIDIA_TESLA_T4'],
     {'machineType': 'n1-standard-4', 'acceleratorType': 'NVIDIA_TESLA_T4',
      'acceleratorCount': 1}),
])
def test_an_accelerator_type_without_a_count_brings_its_own(standin, tmp_path, script,
                                                           flags, machine):
  _, env, _, _ = standin
  result = run_script(script, SETTINGS + flags + ['--dry_run'], env, str(tmp_path))
  assert result.returncode == 0, result.stderr
  assert json.loads(result.stdout)['workerPoolSpecs'][0]['machineSpec'] == machine


def test_a_learner_on_four_gpus_gets_them_all_named(standin, tmp_path):
  _, env, _, _ = standin
  result = run_script('train_atari_r2d2.sh', SETTINGS + [
      '--learner_machine_type=a2-highgpu-4g', '--learner_accelerator_type=NVIDIA_TESLA_A100',
      '--learner_accelerator_count=4', '--learner_devices=GPU:0,GPU:1,GPU:2,GPU:3',
      '--inference_devices=GPU:0,GPU:1', '--dry_run'], env, str(tmp_path))
  assert result.returncode == 0, result.stderr
  learner = json.loads(result.stdout)['workerPoolSpecs'][0]
  assert learner['machineSpec'] == {'machineType': 'a2-highgpu-4g',
                                    'acceleratorType': 'NVIDIA_TESLA_A100',
                                    'acceleratorCount': 4}
  assert environment(learner)['SEED_LEARNER_DEVICES'] == 'GPU:0,GPU:1,GPU:2,GPU:3'
  assert environment(learner)['SEED_INFERENCE_DEVICES'] == 'GPU:0,GPU:1'


def without(flag):
  return [s for s in SETTINGS if not s.startswith(f'--{flag}=')]


# (script, arguments, what the message must say); each must send nothing.
BAD_INPUT = {
    'unknown scenario': ('submit.py', ['--scenario=atari_ppo'] + SETTINGS, [
        "unknown scenario 'atari_ppo'", 'known scenarios: toy_vtrace, atari_vtrace, '
        'atari_r2d2, mujoco_sac, mujoco_ppo, dmc_sac']),
    'no project': ('train_toy_vtrace.sh', without('project'), [
        '--project is not set', 'a Google Cloud project id', 'CLOUDSDK_CORE_PROJECT']),
    'no region': ('train_toy_vtrace.sh', without('region'), [
        '--region is not set', 'a Vertex AI region such as us-central1']),
    'no bucket': ('train_mujoco_sac.sh', without('bucket'), [
        '--bucket is not set', 'gs://BUCKET or gs://BUCKET/PREFIX']),
    'bucket not on Cloud Storage': ('train_toy_vtrace.sh', SETTINGS + ['--bucket=s3://runs'], [
        '--bucket=s3://runs is not valid', 'gs://BUCKET']),
    'no learner image': ('train_atari_vtrace.sh', without('learner_image'), [
        '--learner_image is not set', 'docker.pkg.dev/PROJECT/seed/seed-learner:TAG']),
    'no actor image': ('train_atari_r2d2.sh', without('actor_image'), [
        '--actor_image is not set', 'docker.pkg.dev/PROJECT/seed/seed-actor:TAG']),
    'no actors': ('train_mujoco_ppo.sh', SETTINGS + ['--actor_replicas=0'], [
        '--actor_replicas=0', 'expected an integer >= 1']),
    'unknown accelerator': ('train_atari_vtrace.sh', SETTINGS + [
        '--learner_accelerator_type=NVIDIA_TESLA_K80'], [
        'unknown accelerator --learner_accelerator_type=NVIDIA_TESLA_K80',
        'accepted: none, NVIDIA_TESLA_T4', 'NVIDIA_H100_80GB']),
    'accelerator on the wrong machine': ('train_toy_vtrace.sh', SETTINGS + [
        '--learner_accelerator_type=NVIDIA_TESLA_T4', '--learner_accelerator_count=1'], [
        'NVIDIA_TESLA_T4 attaches to n1-* machine types',
        '--learner_machine_type=e2-standard-4']),
    'learner devices the machine lacks': ('train_atari_vtrace.sh', SETTINGS + [
        '--learner_devices=GPU:0,GPU:1'], [
        '--learner_devices=GPU:0,GPU:1 names GPU:1; the learner has 1 GPU(s) '
        '(--learner_accelerator_count=1)']),
    'GPUs the learner would leave idle': ('train_atari_r2d2.sh', SETTINGS + [
        '--learner_machine_type=n1-standard-16', '--learner_accelerator_count=2'], [
        '--learner_accelerator_count=2: the learner uses more than one GPU only when told',
        '--learner_devices=GPU:0,GPU:1']),
    'misspelt learner flag': ('train_atari_vtrace.sh', SETTINGS + ['--max_env_frame=10'], [
        'unknown flag --max_env_frame', 'max_env_frames', 'num_splits']),
    'flag seed-job sets': ('train_toy_vtrace.sh', SETTINGS + ['--logdir=gs://b/x'], [
        '--logdir cannot be set here', 'BUCKET/runs/RUN_NAME']),
    'bootstrap timeout not positive': ('train_toy_vtrace.sh', SETTINGS + [
        '--bootstrap_timeout_s=0'], ['--bootstrap_timeout_s=0; expected seconds > 0']),
    'a value the actors would refuse': ('train_toy_vtrace.sh', SETTINGS + ['--num_splits=0'], [
        '--num_splits=0; expected groups >= 1']),
    'timeout not a duration': ('train_toy_vtrace.sh', SETTINGS + ['--timeout=2days'], [
        '--timeout=2days is not valid', 'e.g. 90m, 36h or 3d']),
    'timeout zero': ('train_toy_vtrace.sh', SETTINGS + ['--timeout=0h'], [
        '--timeout=0h is not valid', 'a positive duration']),
    'GPU image without an accelerator': ('train_toy_vtrace.sh', SETTINGS + [GPU_IMAGE], [
        f'--learner_image={LEARNER_IMAGE} is a GPU build (its tag \'gpu\')',
        '--learner_machine_type=e2-standard-4 has no accelerator',
        '--learner_accelerator_type', 'the CPU image (seed-learner:cpu-TAG']),
    'GPU image, accelerator taken away': ('train_atari_vtrace.sh', SETTINGS + [
        GPU_IMAGE, '--learner_accelerator_type=none'], ['is a GPU build']),
    'TensorBoard without a service account': ('train_toy_vtrace.sh', SETTINGS + [
        f'--tensorboard={TENSORBOARD}'], ['--tensorboard needs --service_account']),
    "another agent's parameter": ('train_atari_vtrace.sh', SETTINGS + [
        '--sweep_parameter=lr=R2D2Config.learning_rate:double:1e-4:1e-3'], [
        "R2D2Config is another agent's", 'this scenario trains with VTraceConfig']),
    'agent class instead of its config': ('train_atari_vtrace.sh', SETTINGS + [
        '--sweep_parameter=lr=VTraceAgent.learning_rate:double:1e-4:1e-3'], [
        "bound on the agent's config class", 'VTraceConfig.learning_rate']),
    'misspelt sweep parameter': ('train_atari_vtrace.sh', SETTINGS + [
        '--sweep_parameter=lr=VTraceConfig.learnin_rate:double:1e-4:1e-3'], [
        "VTraceConfig has no parameter 'learnin_rate'", 'learning_rate']),
    'sweep range upside down': ('train_mujoco_ppo.sh', SETTINGS + [
        '--sweep_parameter=lr=PPOConfig.learning_rate:double:1e-3:1e-4:log'], [
        'MIN 1e-3 is not below MAX 1e-4', ':double:MIN:MAX']),
}


@pytest.mark.parametrize('case', list(BAD_INPUT))
def test_bad_input_names_the_value_and_what_is_accepted_and_sends_nothing(
    standin, tmp_path, case):
  server, env, token_file, _ = standin
  script, args, expected = BAD_INPUT[case]
  before = len(server.requests())
  result = run_script(script, args + [f'--gcloud_flag=--access-token-file={token_file}'],
                      env, str(tmp_path))
  assert result.returncode == 2, result.stderr
  for text in expected:
    assert text in result.stderr
  assert 'nothing submitted' in result.stderr
  assert result.stdout == ''
  assert len(server.requests()) == before
  assert os.listdir(tmp_path) == []  # no config file was written


def test_without_gcloud_it_says_so_and_sends_nothing(standin, tmp_path):
  server, env, _, _ = standin
  bin_dir = tmp_path / 'bin'
  bin_dir.mkdir()
  # What the script needs, and no gcloud (python3 itself: a pyenv shim needs bash).
  (bin_dir / 'python3').symlink_to(os.path.realpath(sys.executable))
  (bin_dir / 'dirname').symlink_to(shutil.which('dirname'))
  before = len(server.requests())
  result = subprocess.run(['/bin/bash', os.path.join(GCP, 'train_toy_vtrace.sh'), *SETTINGS],
                          env=dict(env, PATH=str(bin_dir)), capture_output=True, text=True,
                          timeout=60)
  assert result.returncode == 2
  assert 'gcloud is not on PATH' in result.stderr and '--dry_run' in result.stderr
  assert len(server.requests()) == before
