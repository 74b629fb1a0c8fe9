"""The container images, built and run for real with podman (tests/podman.py).

Images are built once a session on a debootstrap Debian base (tests/conftest.py).
A learner container and two actor containers then train Catch over a podman network
of their own (198.18.2.0/24) with TLS and a token, the actors configured only through
SEED_* variables; a learner stopped by `podman stop` (SIGTERM) checkpoints on the
mounted run directory and a new container resumes from it. Skips where podman
cannot run (not root, podman, runc or debootstrap missing); the network tests
also skip without iptables, which netavark needs.
"""
import csv
import json
import os
import re
import shutil
import time

import pytest

from tests import podman as podman_harness
from tests.processes import REPO, make_certs
from tests.learning_runs import first_solved

_UNAVAILABLE = podman_harness.unavailable_reason()
pytestmark = [pytest.mark.skipif(_UNAVAILABLE is not None, reason=str(_UNAVAILABLE)),
              pytest.mark.timeout(1800), pytest.mark.xdist_group(podman_harness.SHARED_MACHINE_GROUP)]

SUBNET = '198.18.2.0/24'
LEARNER = 'seed-learner'  # Its DNS name on the network, and in its certificate.
ACTORS = ('seed-actor-0', 'seed-actor-1')
SEED_UID = 1000  # The images' user.

# Run inside the actor image: what is installed and whether the envs build.
ACTOR_FACTS = r'''
import importlib.util, json, os, re, subprocess, sys
import gymnasium, ale_py, mujoco, dm_control
from dm_control import suite
from seed.envs import EnvConfig
pong = EnvConfig(name='atari:Pong').make(0)
obs, _ = pong.reset()
cheetah = EnvConfig(name='dmc:cheetah-run').make(0)
cheetah_obs, _ = cheetah.reset()
pip = subprocess.run([sys.executable, '-m', 'pip', 'list', '--format=json'],
                     capture_output=True, text=True, check=True).stdout
print(json.dumps({
    'uid': os.getuid(),
    'tensorflow_found': importlib.util.find_spec('tensorflow') is not None,
    'packages': sorted(re.sub(r'[-_.]+', '-', p['name']).lower() for p in json.loads(pip)),
    'pong_observation': list(obs.shape), 'cheetah_observation': list(cheetah_obs.shape),
    'roms': len(list(__import__('pathlib').Path(ale_py.roms.__file__).parent.glob('*.bin')))}))
'''

# Run in the learner image on the test network: the plaintext health port's answer.
HEALTH_PROBE = r'''
import sys
import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
with grpc.insecure_channel(sys.argv[1]) as channel:
  reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=30)
print(health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status))
'''

LEARNER_FACTS = r'''
import json, os
import tensorflow as tf
import grpc_health.v1.health
import seed.learner.runtime
print(json.dumps({'uid': os.getuid(), 'tensorflow': tf.__version__}))
'''


def _last_json_line(output: str) -> dict:
  return json.loads([line for line in output.splitlines() if line.startswith('{')][-1])


def test_actor_image_has_its_envs_and_no_tensorflow(podman, seed_images):
  result = podman.run_once(seed_images['actor'].tag, ['-c', ACTOR_FACTS], entrypoint='python')
  assert result.returncode == 0, result.stdout + result.stderr
  facts = _last_json_line(result.stdout)
  assert facts['uid'] != 0
  assert not facts['tensorflow_found']
  assert not [p for p in facts['packages'] if p.startswith(('tensorflow', 'tf-', 'keras'))], (
      facts['packages'])
  for package in ('ale-py', 'gymnasium', 'mujoco', 'dm-control', 'seed-rl'):
    assert package in facts['packages'], facts['packages']
  assert facts['pong_observation'] == [4, 84, 84]  # ale-py's ROM ran: 4 stacked 84x84 frames
  assert facts['cheetah_observation'] == [17]
  assert facts['roms'] > 50


@pytest.mark.parametrize('image', ['actor', 'learner'])
def test_an_image_names_its_commit_and_its_base(podman, seed_images, image):
  labels = json.loads(podman.run(
      ['image', 'inspect', '--format', '{{json .Labels}}', seed_images[image].tag]).stdout)
  assert labels['org.opencontainers.image.revision'] == podman_harness.revision()
  assert labels['org.opencontainers.image.base.name'] == podman_harness.BASE_IMAGE
  assert labels['org.opencontainers.image.title'] == f'seed-{image}'


def test_learner_image_has_tensorflow_and_runs_as_non_root(podman, seed_images):
  result = podman.run_once(seed_images['learner'].tag, ['-c', LEARNER_FACTS],
                           entrypoint='python')
  assert result.returncode == 0, result.stdout + result.stderr
  facts = _last_json_line(result.stdout)
  assert facts['uid'] != 0
  assert facts['tensorflow'].startswith('2.')


# A tuning trial's report, as the learner makes it, where Vertex's tuning service has
# trials write (cloudml-hypertune issue 6: /var/hypertune, not writable by uid 1000).
HYPERTUNE_REPORT = """
import json, os
from seed.learner.tuning_report import TuningReport
TuningReport('episode_return').report(17.5, env_frames=123456)
print(json.dumps({'uid': os.getuid(), 'lines': open(os.environ['CLOUD_ML_HP_METRIC_FILE']).read().splitlines()}))
"""


def test_the_learner_image_reports_a_tuning_metric_as_its_own_user(podman, seed_images):
  result = podman.run_once(seed_images['learner'].tag, ['-c', HYPERTUNE_REPORT],
                           entrypoint='python', env={
                               'CLOUD_ML_HP_METRIC_FILE': '/var/hypertune/output.metrics',
                               'CLOUD_ML_TRIAL_ID': '3'})
  assert result.returncode == 0, result.stdout + result.stderr
  facts = _last_json_line(result.stdout)
  assert facts['uid'] == 1000
  [line] = facts['lines']
  report = json.loads(line)
  assert (report['episode_return'], report['global_step'], report['trial']) == (
      '17.5', '123456', '3')


@pytest.mark.parametrize('image,flag', [('learner', '--checkpoint_interval_s'),
                                        ('actor', '--num_envs')])
def test_entry_points_answer_help(podman, seed_images, image, flag):
  for help_flag in ('--help', '--helpfull'):
    result = podman.run_once(seed_images[image].tag, [help_flag])
    output = result.stdout + result.stderr
    # absl's help flags exit 1 after printing.
    assert result.returncode in (0, 1), output
    assert f'USAGE: /opt/seed-venv/bin/seed-{image}' in output, output
    assert flag in output, output  # Both list the entry point's own flags.


def test_both_images_run_seed_job_and_the_learner_image_makes_tls_files(podman, seed_images):
  spec = {'cluster': {'workerpool0': ['workerpool0-ab-0:2222'],
                      'workerpool1': ['workerpool1-ab-0:2222']}}
  env = {'CLOUD_ML_JOB_ID': '7', 'AIP_CHECKPOINT_DIR': 'gs://b/runs/x/checkpoints/'}
  for image, task_type in (('learner', 'workerpool0'), ('actor', 'workerpool1')):
    task_env = dict(env, CLUSTER_SPEC=json.dumps({**spec, 'task': {'type': task_type,
                                                                   'index': 0}}))
    result = podman.run_once(seed_images[image].tag, ['--print_command'], entrypoint='seed-job',
                             env=task_env, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    described = _last_json_line(result.stdout)
    assert described['role'] == image, described
    assert described['commands'][0][2] == f'seed.{image}{"s" if image == "actor" else ""}.main'
  # In a job the learner replica makes the CA, its certificate and the token (openssl).
  result = podman.run_once(
      seed_images['learner'].tag,
      ['-c', 'from seed.cluster import tls_bootstrap; import os; '
             'tls_bootstrap.publish("/tmp/tls", "workerpool0-ab-0"); '
             'print(sorted(os.listdir("/tmp/tls")))'], entrypoint='python', timeout=120)
  assert result.returncode == 0, result.stdout + result.stderr
  assert "['ca.crt', 'ready', 'tls.crt', 'tls.key', 'token']" in result.stdout, result.stdout


def test_actor_image_without_settings_names_the_missing_address(podman, seed_images):
  started = time.monotonic()
  result = podman.run_once(seed_images['actor'].tag, timeout=120)
  output = result.stdout + result.stderr
  assert result.returncode != 0, output
  assert 'SEED_SERVER_ADDRESS' in output, output
  podman_harness.report(f'actor image with no settings: exit {result.returncode} in '
                        f'{time.monotonic() - started:.1f} s')


def test_learner_image_without_tls_refuses_to_listen(podman, seed_images):
  # The image listens on 0.0.0.0 (SEED_SERVER_ADDRESS): not without TLS and a token.
  result = podman.run_once(seed_images['learner'].tag, ['--logdir=/tmp/run'], timeout=120)
  output = result.stdout + result.stderr
  assert result.returncode != 0, output
  assert "refusing to listen on '0.0.0.0:8686' without TLS" in output, output


def test_code_change_keeps_dependency_layers(podman, seed_images, tmp_path):
  """An unchanged tree rebuilds from the cache alone; a changed source file rebuilds
  only the code layers, setup.py's dependencies still from the cache."""
  for image in ('actor', 'learner'):
    again = podman.build(f'docker/Dockerfile.{image}', seed_images[image].tag)
    assert again.step_cached('pip install --no-deps'), again.log[-6000:]
  context = tmp_path / 'context'
  for name in ('setup.py', '.dockerignore'):
    context.mkdir(exist_ok=True)
    shutil.copy(os.path.join(REPO, name), context / name)
  for name in ('docker', 'seed', 'learner', 'actors', 'gin'):
    shutil.copytree(os.path.join(REPO, name), context / name,
                    ignore=shutil.ignore_patterns('__pycache__', '*.pyc'))
  with open(context / 'seed' / '__init__.py', 'a') as f:
    f.write('\n# A code change.\n')
  for image in ('actor', 'learner'):
    built = podman.build(f'docker/Dockerfile.{image}', f'seed-{image}:code-change',
                         context=str(context))
    assert built.step_cached('setup_requirements.py'), built.log[-6000:]
    assert not built.step_cached('pip install --no-deps'), built.log[-6000:]
    podman.run(['rmi', built.tag])


@pytest.fixture(scope='module')
def cluster(podman, seed_images, tmp_path_factory):
  """A network of its own and TLS files for a learner named seed-learner, readable
  by the images' user."""
  reason = podman_harness.networks_unavailable_reason()
  if reason:
    pytest.skip(reason)
  network = podman.network('seed-test', SUBNET)
  certs = make_certs(str(tmp_path_factory.mktemp('certs')), LEARNER)
  # Each side gets only its files (the CA key stays out), the key and token still
  # mode 600 but owned by the containers' user.
  mounts = {}
  for side, names in (('learner', ('tls.crt', 'tls.key', 'token')),
                      ('actor', ('ca.crt', 'token'))):
    directory = tmp_path_factory.mktemp(f'{side}-tls')
    for name in names:
      shutil.copy2(certs.path(name), directory / name)
      os.chown(directory / name, SEED_UID, SEED_UID)
    os.chown(directory, SEED_UID, SEED_UID)
    mounts[side] = f'{directory}:/certs:ro'
  yield {'network': network, 'mounts': mounts, 'images': seed_images}
  for name in (LEARNER, *ACTORS):  # Left by a test that failed before its own cleanup.
    podman.remove(name)
  podman.run(['network', 'rm', '-f', network], check=False)


def _run_dir(tmp_path, name):
  path = tmp_path / name
  path.mkdir()
  os.chown(path, SEED_UID, SEED_UID)
  return str(path)


def _start_learner(podman, cluster, run_dir, flags):
  return podman.start(
      LEARNER, cluster['images']['learner'].tag,
      ['--logdir=/run/seed', '--gin_file=gin/toy/vtrace.gin',
       "--gin_bindings=EnvConfig.name='Catch'", '--server_address=0.0.0.0:8686',
       '--tls_cert_file=/certs/tls.crt', '--tls_key_file=/certs/tls.key',
       '--auth_token_file=/certs/token', '--progress_interval_s=2', *flags],
      network=cluster['network'],
      volumes=[f'{run_dir}:/run/seed', cluster['mounts']['learner']])


def _start_actors(podman, cluster, num_envs=4):
  """Actors configured only through SEED_* variables: no flags, no rebuild."""
  names = []
  for actor_id, name in enumerate(ACTORS):
    names.append(podman.start(
        name, cluster['images']['actor'].tag,
        network=cluster['network'], volumes=[cluster['mounts']['actor']],
        env={'SEED_SERVER_ADDRESS': f'{LEARNER}:8686', 'SEED_ACTOR_ID': str(actor_id),
             'SEED_NUM_ENVS': str(num_envs), 'SEED_GIN_FILE': 'gin/toy/vtrace.gin',
             'SEED_ENV': 'Catch', 'SEED_TLS_CA_FILE': '/certs/ca.crt',
             'SEED_AUTH_TOKEN_FILE': '/certs/token'}))
  return names


def _logs(podman, names):
  return '\n'.join(f'--- {name} ---\n{podman.logs(name, 4000)}' for name in names)


def _csv_rows(path):
  if not os.path.exists(path):
    return []
  with open(path) as f:
    return list(csv.DictReader(f))


def test_learner_and_actor_containers_train_catch_over_tls(podman, cluster, tmp_path):
  target, window, max_frames = 0.9, 100, 300_000
  run_dir = _run_dir(tmp_path, 'catch')
  started = time.monotonic()
  learner = _start_learner(podman, cluster, run_dir, [
      f'--target_return={target}', f'--return_window={window}',
      f'--max_env_frames={max_frames}'])
  actors = []
  try:
    # Actors only once the learner listens, as the k8s test does: one actor solves Catch in
    # about 20 s, and in one CI run (at 3254cfa, under load) the other spent that long
    # failing to reach the network's DNS while the learner's container was being added,
    # so the run ended before it had connected.
    deadline = time.monotonic() + 300
    while 'learner listening on' not in podman.logs(learner, tail_chars=10**7):
      assert time.monotonic() < deadline, _logs(podman, [learner])
      assert podman.state(learner)['Status'] == 'running', _logs(podman, [learner])
      time.sleep(0.5)
    actors = _start_actors(podman, cluster)
    exit_code = podman.wait(learner, timeout=900)
    wall_s = time.monotonic() - started
    logs = _logs(podman, [learner, *actors])
    assert exit_code == 0, logs
    # The whole log: the line is near its start, beyond the tail in `logs`.
    assert ('learner listening on 0.0.0.0:8686 (port 8686, TLS)' in
            podman.logs(learner, tail_chars=10**7)), logs
    for actor in actors:
      assert 'connected to learner' in podman.logs(actor), logs
    episodes = [(int(r['env_frames']), float(r['episode_return']))
                for r in _csv_rows(os.path.join(run_dir, 'episodes.csv'))]
    frames, mean_return = first_solved(episodes, target, window, label='Catch in containers')
    podman_harness.report(f'Catch in containers: mean return {mean_return:.2f} over {window} '
                          f'episodes at {frames:,} frames; learner container ran {wall_s:.0f} s '
                          'from start to exit')
    assert mean_return >= target, logs
    assert frames <= max_frames
  finally:
    for name in (learner, *actors):
      podman.remove(name)


def test_sigterm_checkpoints_and_a_new_learner_container_resumes(podman, cluster, tmp_path):
  run_dir = _run_dir(tmp_path, 'resume')
  progress_csv = os.path.join(run_dir, 'progress.csv')
  learner = _start_learner(podman, cluster, run_dir, [])
  actors = _start_actors(podman, cluster)
  try:
    # Train a little: wait for frames in progress.csv.
    deadline = time.monotonic() + 300
    while not [r for r in _csv_rows(progress_csv) if int(r['env_frames']) >= 5000]:
      assert time.monotonic() < deadline, _logs(podman, [learner, *actors])
      assert podman.state(learner)['Status'] == 'running', _logs(podman, [learner])
      time.sleep(1)
    frames_before_stop = int(_csv_rows(progress_csv)[-1]['env_frames'])
    exit_code = podman.stop(learner, timeout_s=60)  # SIGTERM, SIGKILL after 60 s
    first_log = podman.logs(learner, 20000)
    assert exit_code == 0, first_log
    assert 'received SIGTERM' in first_log, first_log
    assert 'checkpoint written' in first_log, first_log
    assert os.listdir(os.path.join(run_dir, 'ckpt')), first_log
    rows_before = _csv_rows(progress_csv)
    podman.remove(learner)

    # A new container on the same run directory; the actors reconnect to it by name
    # and training goes on past the first container's last count.
    learner = _start_learner(podman, cluster, run_dir, [])
    last_frames = int(rows_before[-1]['env_frames'])
    deadline = time.monotonic() + 300
    while not [r for r in _csv_rows(progress_csv)[len(rows_before):]
               if int(r['env_frames']) > last_frames]:
      assert time.monotonic() < deadline, _logs(podman, [learner, *actors])
      assert podman.state(learner)['Status'] == 'running', _logs(podman, [learner])
      time.sleep(1)
    second_log = podman.logs(learner, 20000)
    assert 'resumed: True' in second_log, second_log
    saved = re.search(r"resumed from \S+: \{[^}]*'env_frames': (\d+)", second_log)
    assert saved, second_log
    saved_frames = int(saved.group(1))
    resumed_rows = _csv_rows(progress_csv)[len(rows_before):]
    assert saved_frames >= frames_before_stop > 0, second_log
    assert int(resumed_rows[0]['env_frames']) >= saved_frames, (resumed_rows, second_log)
    # SEED_HEALTH_PORT from the image: what a Kubernetes grpc probe would ask.
    probe = podman.run_once(cluster['images']['learner'].tag,
                            ['-c', HEALTH_PROBE, f'{LEARNER}:8687'], entrypoint='python',
                            network=cluster['network'], timeout=120)
    assert probe.stdout.strip().splitlines()[-1:] == ['SERVING'], probe.stdout + probe.stderr
    progress_frames = [int(m.replace(',', ''))
                       for m in re.findall(r'frames ([\d,]+) \|', second_log)]
    assert progress_frames and progress_frames[0] >= saved_frames, second_log
    podman_harness.report(
        f'SIGTERM/resume: {frames_before_stop:,} frames seen before podman stop, '
        f'{saved_frames:,} in the checkpoint, the new container went on at '
        f'{progress_frames[0]:,} then {int(resumed_rows[-1]["env_frames"]):,}')
  finally:
    for name in (learner, *actors):
      podman.remove(name)
