"""seed-job, the entry point of each replica of a cluster job.

The first tests feed it the variables Vertex AI gives learner and actor replicas
(CLUSTER_SPEC, TF_CONFIG, AIP_*) and check the role, actor id, learner address and
command it derives, and its refusals. The last runs a two-"host" job as Vertex would:
the learner replica in one network namespace and an actor replica in another, both
told only CLUSTER_SPEC and a shared run directory; they meet over TLS made in the job,
the learner checkpoints on SIGTERM (a Spot preemption), and the job submitted again
resumes from that checkpoint with its counters.
"""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from seed.cluster import job, roles, run_paths
from tests.processes import REPO, _env, netns_exec

POOL0, POOL1 = 'workerpool0-1a2b-0:2222', ['workerpool1-1a2b-0:2222', 'workerpool1-1a2b-1:2222']


def cluster_spec(task_type, index, pools=None):
  pools = pools or {'workerpool0': [POOL0], 'workerpool1': POOL1}
  return json.dumps({'cluster': pools, 'task': {'type': task_type, 'index': index},
                     'environment': 'cloud', 'job': '{}'})


def test_cluster_spec_pool0_is_the_learner():
  role = roles.from_cluster_spec(cluster_spec('workerpool0', 0))
  assert role == roles.Role(roles.LEARNER, 'workerpool0-1a2b-0', 2222, None, 'CLUSTER_SPEC')
  assert role.learner_address == POOL0


def test_cluster_spec_pool1_replica_i_is_actor_i():
  for index in (0, 1):
    role = roles.from_cluster_spec(cluster_spec('workerpool1', index))
    assert (role.kind, role.actor_id, role.learner_address) == (roles.ACTOR, index, POOL0)


def test_tf_config_chief_or_master_is_the_learner_and_workers_are_actors():
  for chief in ('chief', 'master'):
    spec = {'cluster': {chief: ['learner-host:2222'], 'worker': ['w0:2222', 'w1:2222']}}
    learner = roles.from_tf_config(json.dumps({**spec, 'task': {'type': chief, 'index': 0}}))
    actor = roles.from_tf_config(json.dumps({**spec, 'task': {'type': 'worker', 'index': 1}}))
    assert (learner.kind, learner.learner_address) == (roles.LEARNER, 'learner-host:2222')
    assert (actor.kind, actor.actor_id, actor.learner_address) == (
        roles.ACTOR, 1, 'learner-host:2222')


@pytest.mark.parametrize('text, message', [
    ('{not json', 'CLUSTER_SPEC is not JSON'),
    ('[1, 2]', 'not a JSON object'),
    ('{"task": {"type": "workerpool1", "index": 0}}', 'no "cluster" and "task"'),
    (cluster_spec('workerpool1', 0, {'workerpool1': POOL1}), 'no learner pool (workerpool0)'),
    (cluster_spec('workerpool2', 0, {'workerpool0': [POOL0], 'workerpool2': POOL1}),
     "task type 'workerpool2' is not one seed runs; expected workerpool0 or workerpool1"),
    (cluster_spec('workerpool1', 2), "task index 2 is not a replica of pool 'workerpool1'"),
    (cluster_spec('workerpool0', 0, {'workerpool0': POOL1}), 'must have exactly 1'),
    (cluster_spec('workerpool0', 0, {'workerpool0': ['no-port']}), "'no-port' is not host:port"),
])
def test_a_bad_cluster_spec_is_refused_naming_what_is_wrong(text, message):
  with pytest.raises(ValueError) as raised:
    roles.from_cluster_spec(text)
  assert message in str(raised.value)


def test_explicit_flags_need_an_address_and_an_actor_id():
  role = roles.from_flags('actor', 'node7:8686', 3)
  assert (role.kind, role.actor_id, role.learner_address) == (roles.ACTOR, 3, 'node7:8686')
  with pytest.raises(ValueError, match='needs --learner_address'):
    roles.from_flags('learner', None, None)
  with pytest.raises(ValueError, match=r'needs --actor_id >= 0.*got None'):
    roles.from_flags('actor', 'node7:8686', None)
  with pytest.raises(ValueError, match="--role='evaluator'; expected one of learner, actor"):
    roles.from_flags('evaluator', 'node7:8686', 0)
  with pytest.raises(ValueError, match='neither CLUSTER_SPEC nor TF_CONFIG'):
    job.derive_role('auto', None, None, {})


def test_run_directory_comes_through_the_gcs_mount_and_per_trial():
  assert run_paths.local_path('gs://bucket/runs/x') == '/gcs/bucket/runs/x'
  assert run_paths.local_path('/shared/runs/x') == '/shared/runs/x'
  with pytest.raises(ValueError, match='names no bucket'):
    run_paths.local_path('gs:///runs')
  trial = {'AIP_CHECKPOINT_DIR': 'gs://bucket/runs/sweep/7/checkpoints/',
           'AIP_TENSORBOARD_LOG_DIR': 'gs://bucket/runs/sweep/7/logs/'}
  assert run_paths.run_dir(None, trial) == '/gcs/bucket/runs/sweep/7'
  assert run_paths.summary_dir(None, trial) == '/gcs/bucket/runs/sweep/7/logs'
  assert run_paths.run_dir('gs://b/elsewhere', trial) == '/gcs/b/elsewhere'
  with pytest.raises(ValueError, match='no run directory: pass --run_dir'):
    run_paths.run_dir(None, {})


def test_trial_arguments_become_gin_bindings():
  declared = ['learning_rate=VTraceConfig.learning_rate', 'torso=VTraceConfig.torso']
  assert job.sweep_bindings(declared, ['--learning_rate=0.0003', '--torso', 'mlp']) == [
      'VTraceConfig.learning_rate=0.0003', "VTraceConfig.torso='mlp'"]
  with pytest.raises(ValueError, match=r'unknown argument --entropy=0.1; sweep parameters '
                     r'accepted: --learning_rate, --torso'):
    job.sweep_bindings(declared, ['--entropy=0.1'])
  with pytest.raises(ValueError, match='expected NAME=Configurable.parameter'):
    job.sweep_bindings(['learning_rate'], [])
  with pytest.raises(ValueError, match='has no value'):
    job.sweep_bindings(declared, ['--torso'])


def print_command(env, *args):
  """seed-job --print_command's JSON, run as a replica with `env` would run it."""
  result = subprocess.run([sys.executable, '-m', 'seed.cluster.job', '--print_command', *args],
                          capture_output=True, text=True, env=dict(_env(), **env), cwd=REPO,
                          timeout=60)
  assert result.returncode == 0, result.stderr
  return json.loads(result.stdout)


VERTEX_ENV = {'CLOUD_ML_JOB_ID': '4242', 'AIP_CHECKPOINT_DIR': 'gs://b/runs/x/checkpoints/',
              'AIP_TENSORBOARD_LOG_DIR': 'gs://b/runs/x/logs/',
              'SEED_GIN_BINDINGS': "EnvConfig.name='Catch'"}


def test_a_vertex_learner_replica_serves_tls_on_its_pool_port_into_the_bucket():
  out = print_command(dict(VERTEX_ENV, CLUSTER_SPEC=cluster_spec('workerpool0', 0)),
                      '--sweep_binding=lr=VTraceConfig.learning_rate', '--lr=0.001')
  tls = '/gcs/b/runs/x/tls/4242-workerpool0-1a2b-0'
  assert (out['role'], out['learner_address'], out['source']) == (
      'learner', POOL0, 'CLUSTER_SPEC')
  assert out['commands'][0][1:] == [
      '-m', 'seed.learner.main', '--logdir=/gcs/b/runs/x', '--server_address=0.0.0.0:2222',
      '--summary_dir=/gcs/b/runs/x/logs', f'--tls_cert_file={tls}/tls.crt',
      f'--tls_key_file={tls}/tls.key', f'--auth_token_file={tls}/token',
      "--gin_bindings=EnvConfig.name='Catch'", '--gin_bindings=VTraceConfig.learning_rate=0.001']


def test_a_vertex_actor_replica_dials_pool0_with_the_jobs_ca():
  out = print_command(dict(VERTEX_ENV, CLUSTER_SPEC=cluster_spec('workerpool1', 1)))
  tls = '/gcs/b/runs/x/tls/4242-workerpool0-1a2b-0'
  assert (out['role'], out['actor_ids']) == ('actor', [1])
  assert out['commands'][0][1:] == [
      '-m', 'seed.actors.main', f'--server_address={POOL0}', '--actor_id=1',
      f'--tls_ca_file={tls}/ca.crt', f'--auth_token_file={tls}/token']


def test_a_replica_with_several_actor_processes_numbers_them_apart():
  out = print_command(dict(VERTEX_ENV, CLUSTER_SPEC=cluster_spec('workerpool1', 1),
                           SEED_ACTORS_PER_REPLICA='4'))
  assert out['actor_ids'] == [4, 5, 6, 7]
  assert [c[4] for c in out['commands']] == [f'--actor_id={i}' for i in range(4, 8)]


def test_explicit_roles_on_one_host_stay_on_localhost_in_plaintext():
  learner = print_command({}, '--role=learner', '--learner_address=localhost:8686',
                          '--run_dir=/tmp/seed-runs/x')
  actor = print_command({}, '--role=actor', '--actor_id=0', '--learner_address=localhost:8686')
  assert learner['commands'][0][3:] == ['--logdir=/tmp/seed-runs/x',
                                    '--server_address=localhost:8686']
  assert actor['commands'][0][3:] == ['--server_address=localhost:8686', '--actor_id=0']
  # TLS by name on one test host: listen where told, certificate for the name dialled.
  forced = print_command({}, '--role=learner', '--learner_address=node1:8686', '--tls=always',
                         '--listen_host=127.0.0.1', '--run_dir=/tmp/seed-runs/x', '--job_id=j')
  assert forced['commands'][0][3:6] == ['--logdir=/tmp/seed-runs/x', '--server_address=127.0.0.1:8686',
                                    '--tls_cert_file=/tmp/seed-runs/x/tls/j-node1/tls.crt']


@pytest.mark.parametrize('env, args, message', [
    ({'CLUSTER_SPEC': '{oops'}, [], 'CLUSTER_SPEC is not JSON'),
    ({}, [], 'neither CLUSTER_SPEC nor TF_CONFIG is set'),
    ({'CLUSTER_SPEC': cluster_spec('workerpool0', 0)}, [], 'no run directory: pass --run_dir'),
    ({'CLUSTER_SPEC': cluster_spec('workerpool1', 0)}, ['--run_dir=/tmp/x'],
     'needs a run directory shared by all replicas (--run_dir) and a job id'),
    ({'SEED_ROLE': 'evaluator'}, [], "SEED_ROLE='evaluator' is not a valid value for --role"),
    ({'CLUSTER_SPEC': cluster_spec('workerpool1', 0)}, ['--tls=never', '--actors_per_replica=0'],
     '--actors_per_replica=0; expected an integer >= 1'),
    (VERTEX_ENV | {'CLUSTER_SPEC': cluster_spec('workerpool0', 0)}, ['--lr=1'],
     'unknown argument --lr=1; sweep parameters accepted: none'),
])
def test_seed_job_refuses_bad_settings_in_one_line(env, args, message):
  result = subprocess.run([sys.executable, '-m', 'seed.cluster.job', '--print_command', *args],
                          capture_output=True, text=True, env=dict(_env(), **env), cwd=REPO,
                          timeout=60)
  assert result.returncode == 2, result.stdout + result.stderr
  assert message in result.stderr
  assert 'Traceback' not in result.stderr


# --- A two-host job, as Vertex AI runs it --------------------------------------------------


def _start_replica(hosts_prefix, env, log_path, *args):
  log = open(log_path, 'a')
  return subprocess.Popen(hosts_prefix + [sys.executable, '-m', 'seed.cluster.job', *args],
                          env=dict(_env(), **env), cwd=REPO, stdout=log, stderr=subprocess.STDOUT,
                          start_new_session=True)


def _wait_for(predicate, timeout_s, what, logs):
  deadline = time.monotonic() + timeout_s
  while time.monotonic() < deadline:
    if predicate():
      return
    time.sleep(0.5)
  raise AssertionError(f'{what} within {timeout_s} s; logs:\n' + '\n'.join(
      open(p).read()[-3000:] for p in logs if os.path.exists(p)))


def _frames(run_dir):
  path = os.path.join(run_dir, 'progress.csv')
  if not os.path.exists(path):
    return 0
  rows = open(path).read().splitlines()[1:]
  return max((int(r.split(',')[1]) for r in rows), default=0)


def _stop(processes):
  for process in processes:  # To seed-job's pid: it passes the signal on to its actors.
    if process.poll() is None:
      os.kill(process.pid, signal.SIGTERM)
  for process in processes:
    try:
      process.wait(timeout=60)
    except subprocess.TimeoutExpired:
      os.killpg(process.pid, signal.SIGKILL)
      process.wait()


@pytest.mark.timeout(600)
def test_replicas_on_two_hosts_meet_over_job_made_tls_and_a_resubmission_resumes(tmp_path,
                                                                                   hosts):
  bucket = tmp_path / 'bucket'  # What /gcs/BUCKET is to Vertex replicas: shared by both.
  run_dir = bucket / 'runs' / 'catch'
  learner_address = f'{hosts.address_a}:2222'
  pools = {'workerpool0': [learner_address], 'workerpool1': [f'{hosts.address_b}:2222']}
  metrics_file = tmp_path / 'hypertune' / 'output.metrics'
  common = {'SEED_GIN_FILE': 'gin/toy/vtrace.gin', 'SEED_GIN_BINDINGS': "EnvConfig.name='Catch'",
            'SEED_NUM_ENVS': '2', 'SEED_ACTORS_PER_REPLICA': '2', 'SEED_RETURN_WINDOW': '10', 'SEED_PROGRESS_INTERVAL_S': '1',
            'SEED_HYPERTUNE_METRIC': 'episode_return',
            'CLOUD_ML_HP_METRIC_FILE': str(metrics_file)}
  sweep = ['--sweep_binding=lr=VTraceConfig.learning_rate', '--lr=0.002']
  logs = [str(tmp_path / 'learner.log'), str(tmp_path / 'actor.log')]

  def submit(job_id, learner_env=None):
    env = dict(common, CLOUD_ML_JOB_ID=job_id, **(learner_env or {}))
    learner = _start_replica(netns_exec(hosts.a),
                             dict(env, CLUSTER_SPEC=json.dumps(
                                 {'cluster': pools, 'task': {'type': 'workerpool0', 'index': 0}})),
                             logs[0], f'--run_dir={run_dir}', *sweep)
    actor = _start_replica(netns_exec(hosts.b),
                           dict(env, CLUSTER_SPEC=json.dumps(
                               {'cluster': pools, 'task': {'type': 'workerpool1', 'index': 0}})),
                           logs[1], f'--run_dir={run_dir}', *sweep)
    return learner, actor

  replicas = submit('job-1')
  try:
    _wait_for(lambda: _frames(run_dir) >= 5000, 240, 'the learner served 5000 frames', logs)
    # A Spot preemption: SIGTERM to every replica; the learner checkpoints on the way out.
    _stop(replicas)
    assert replicas[0].returncode == 0, open(logs[0]).read()[-3000:]
    first_frames = _frames(run_dir)
    assert os.listdir(run_dir / 'ckpt'), 'no checkpoint after SIGTERM'
    learner_log, actor_log = (open(p).read() for p in logs)
    assert 'learner listening on 0.0.0.0:2222 (port 2222, TLS)' in learner_log, learner_log
    for actor_id in (0, 1):  # Both actor processes of the replica, each stopped cleanly.
      assert f'actor {actor_id} split 0 connected to learner' in actor_log, actor_log
      assert f'actor {actor_id} stopped after' in actor_log, actor_log
    assert replicas[1].returncode == 0, actor_log
    assert (run_dir / 'tls' / f'job-1-{hosts.address_a}' / 'ready').exists()
    assert not (run_dir / 'tls' / f'job-1-{hosts.address_a}' / 'ca.key').exists()
    assert 'VTraceConfig.learning_rate = 0.002' in (run_dir / 'operative_config.gin').read_text()
    reported = [json.loads(line) for line in metrics_file.read_text().splitlines()]
    assert reported and 'episode_return' in reported[-1], reported

    # Submitted again (a new job id: new TLS files): it resumes, counters and all.
    replicas = submit('job-2', {'SEED_MAX_ENV_FRAMES': str(first_frames + 3000)})
    assert replicas[0].wait(timeout=240) == 0, open(logs[0]).read()[-3000:]
    _stop(replicas)
    learner_log = open(logs[0]).read()
    assert learner_log.count('resumed: True') == 1, learner_log
    assert _frames(run_dir) >= first_frames + 3000
    assert (run_dir / 'tls' / f'job-2-{hosts.address_a}' / 'ready').exists()
  finally:
    _stop(replicas)


@pytest.mark.timeout(300)
def test_an_actor_that_dies_is_started_again_and_one_that_finishes_is_not(tmp_path):
  # A Slurm actor task or a Vertex actor replica runs its actors under seed-job: one
  # killed (the OOM killer) comes back after a delay; when the learner finishes the run,
  # the actors exit 0 and seed-job with them. Its frames come from that actor alone, so
  # the run cannot end before the actor is back, however small the budget.
  import psutil  # pylint: disable=g-import-not-at-top
  from tests.processes import Run  # pylint: disable=g-import-not-at-top
  run = Run(tmp_path / 'run', 'gin/toy/vtrace.gin', gin_bindings=["EnvConfig.name='Catch'"],
            learner_flags=['--max_env_frames=10000'])
  log_path = str(tmp_path / 'seed_job.log')
  with run:
    port = run.start_learner()
    replica = _start_replica([], {'SEED_GIN_FILE': 'gin/toy/vtrace.gin', 'SEED_NUM_ENVS': '2',
                                  'SEED_GIN_BINDINGS': "EnvConfig.name='Catch'"},
                             log_path, '--role=actor', f'--learner_address=localhost:{port}',
                             '--actor_id=3', '--tls=never')
    try:
      _wait_for(lambda: run.learner_log().count('actor 3 split 0 connected') == 1, 120,
                'actor 3 connected', [log_path])
      actor = psutil.Process(replica.pid).children()[0]
      actor.kill()  # SIGKILL: no goodbye
      _wait_for(lambda: run.learner_log().count('actor 3 split 0 connected') == 2, 120,
                'actor 3 connected again', [log_path, run.logdir + '/logs/learner.log'])
      assert 'seed-job: actor 3 exited with 137; starting it again in 1 s (restart 1)' in (
          open(log_path).read())
      assert run.wait_learner(timeout_s=200) == 0, run.learner_log()
      assert replica.wait(timeout=60) == 0, open(log_path).read()[-3000:]
      log = open(log_path).read()
      assert log.count('starting it again') == 1, log  # not after the run finished
      assert 'the learner finished the run' in log, log
    finally:
      _stop([replica])


@pytest.mark.timeout(300)
def test_an_actor_that_finds_no_learner_for_its_limit_is_not_started_again(tmp_path):
  # Exit 3 (seed.process.exit_codes.LEARNER_LOST): another start would only wait again, and a
  # Slurm step or a Vertex replica would hold its CPUs for nothing.
  from tests.server_harness import free_port  # pylint: disable=g-import-not-at-top
  log_path = str(tmp_path / 'seed_job.log')
  replica = _start_replica([], {'SEED_GIN_FILE': 'gin/toy/vtrace.gin', 'SEED_NUM_ENVS': '2',
                                'SEED_ENV': 'Catch', 'SEED_LEARNER_LOST_LIMIT_S': '2'},
                           log_path, '--role=actor', f'--learner_address=localhost:{free_port()}',
                           '--actor_id=0', '--tls=never')
  try:
    assert replica.wait(timeout=120) == 3, open(log_path).read()[-3000:]
  finally:
    _stop([replica])
  log = open(log_path).read()
  assert 'more than --learner_lost_limit_s=2' in log and 'starting it again' not in log, log
