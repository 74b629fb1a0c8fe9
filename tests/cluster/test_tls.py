"""TLS and the shared token between real processes: what works, and what each mistake says.

Certificates come from scripts/make_certs.sh, the script the docs show.
"""
import logging
import pathlib
import socket
import ssl
import subprocess
import sys

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from seed.transport import security
from tests.processes import REPO, Run, _env, make_certs
from tests.server_harness import ServerHarness, free_port
from tests.integration.test_actor import start_actor, wait_for

pytestmark = pytest.mark.timeout(180)

TOKEN = 'f00dfeed' * 8


@pytest.fixture(scope='module')
def certs(tmp_path_factory):
  """good: for localhost/127.0.0.1; other: another CA, same names; elsewhere: other name."""
  root = tmp_path_factory.mktemp('certs')
  found = {name: pathlib.Path(make_certs(root / name, *hosts).directory) for name, hosts in (
      ('good', ('localhost', '127.0.0.1')), ('other', ('localhost', '127.0.0.1')),
      ('elsewhere', ('elsewhere.example',)))}
  for token in ('good', 'wrong'):
    (root / f'{token}.token').write_text(TOKEN if token == 'good' else 'not-the-token')
  found['root'] = root
  return found


def tls_harness(cert_dir, **kwargs):
  return ServerHarness(credentials=security.server_credentials(
      str(cert_dir / 'tls.crt'), str(cert_dir / 'tls.key')), **kwargs)


def finish(actor, timeout_s=60):
  """(exit code, output); an actor still running after `timeout_s` is killed and fails."""
  try:
    output, _ = actor.communicate(timeout=timeout_s)
  except subprocess.TimeoutExpired:
    actor.kill()
    output, _ = actor.communicate()
    pytest.fail(f'the actor was still running after {timeout_s} s:\n{output}')
  return actor.returncode, output


def test_right_ca_and_token_are_served(certs):
  with tls_harness(certs['good'], auth_token=TOKEN) as harness:
    port = harness.address.split(':')[1]
    actor = start_actor(f'localhost:{port}', '--max_steps=100',
                        f"--tls_ca_file={certs['good'] / 'ca.crt'}",
                        f"--auth_token_file={certs['root'] / 'good.token'}")
    code, output = finish(actor)
  assert code == 0, output
  assert harness.counters.get('env_steps') >= 2 * 99


@pytest.mark.parametrize('token', ['wrong', None])
def test_a_wrong_or_missing_token_ends_the_actor_at_its_first_attempt(certs, token):
  token_flags = [f"--auth_token_file={certs['root'] / f'{token}.token'}"] if token else []
  with tls_harness(certs['good'], auth_token=TOKEN) as harness:
    port = harness.address.split(':')[1]
    actor = start_actor(f'localhost:{port}',
                        f"--tls_ca_file={certs['good'] / 'ca.crt'}", *token_flags)
    code, output = finish(actor)
  assert code == 2, output
  assert 'the learner refused our auth token' in output, output
  assert 'retrying' not in output, output  # No retry: it ends at once.
  assert harness.counters.get('env_steps') == 0


# (learner certificate dir or None for plaintext, actor CA dir or None, actor dials, message)
MISTAKES = {
    'plaintext actor, TLS learner': (
        'good', None, '127.0.0.1',
        'seems to speak TLS (it completed a TLS handshake) and this actor connects in '
        "plaintext: pass the learner's CA certificate with --tls_ca_file"),
    'TLS actor, plaintext learner': (
        None, 'good', 'localhost', 'does not speak TLS'),
    'certificate from another CA': (
        'good', 'other', 'localhost', 'is not signed by the CA in --tls_ca_file'),
    'certificate for another name': (
        'elsewhere', 'elsewhere', 'localhost', "is not valid for the name 'localhost'"),
}


@pytest.mark.parametrize('mistake', list(MISTAKES))
def test_each_tls_mistake_ends_the_actor_with_what_to_change(certs, mistake):
  learner_certs, actor_ca, host, message = MISTAKES[mistake]
  harness = (tls_harness(certs[learner_certs], auth_token=TOKEN) if learner_certs else
             ServerHarness(auth_token=TOKEN))
  ca_flags = [f"--tls_ca_file={certs[actor_ca] / 'ca.crt'}"] if actor_ca else []
  with harness:
    port = harness.address.split(':')[1]
    actor = start_actor(f'{host}:{port}', *ca_flags,
                        f"--auth_token_file={certs['root'] / 'good.token'}")
    code, output = finish(actor)
  assert code == 2, output
  assert message in output, output
  assert 'retrying' not in output, output  # Diagnosed at the first failure.


def test_a_learner_that_is_not_up_yet_is_waited_for(certs):
  """Connection refused says nothing about TLS: the actor keeps retrying until it is up."""
  port = free_port()
  actor = start_actor(f'localhost:{port}',
                      f"--tls_ca_file={certs['good'] / 'ca.crt'}",
                      f"--auth_token_file={certs['root'] / 'good.token'}")
  try:
    lines = []
    while 'retrying' not in ''.join(lines[-1:]) and actor.poll() is None:
      lines.append(actor.stdout.readline())
    assert actor.poll() is None, ''.join(lines)
    with tls_harness(certs['good'], auth_token=TOKEN, port=port) as harness:
      wait_for(lambda: harness.counters.get('env_steps') > 20)
  finally:
    actor.terminate()
    actor.communicate(timeout=30)


def check_health(channel) -> str:
  reply = health_pb2_grpc.HealthStub(channel).Check(
      health_pb2.HealthCheckRequest(service=''), timeout=10)
  return health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)


def test_a_tls_learner_process_trains_and_answers_health_checks(certs, tmp_path):
  """The real learner over TLS with a token, one actor configured only by SEED_* variables."""
  health_port = free_port()
  good = certs['good']
  with Run(tmp_path / 'run', 'gin/toy/vtrace.gin', learner_flags=[
      '--env=Catch', '--max_env_frames=8000', f'--health_port={health_port}',
      f"--tls_cert_file={good / 'tls.crt'}", f"--tls_key_file={good / 'tls.key'}",
      f"--auth_token_file={certs['root'] / 'good.token'}"]) as run:
    port = run.start_learner()
    env = dict(_env(), SEED_SERVER_ADDRESS=f'localhost:{port}', SEED_ACTOR_ID='7',
               SEED_NUM_ENVS='4', SEED_ENV='Catch', SEED_GIN_FILE=run.gin_file,
               SEED_TLS_CA_FILE=str(good / 'ca.crt'), SEED_AUTH_TOKEN=TOKEN)
    with open(tmp_path / 'actor.log', 'w') as log:
      actor = subprocess.Popen([sys.executable, '-m', 'seed.actors.main'], env=env, cwd=REPO,
                               stdout=log, stderr=subprocess.STDOUT)
    run.actors.append(actor)
    with grpc.insecure_channel(f'localhost:{health_port}') as channel:
      assert check_health(channel) == 'SERVING'
    with grpc.secure_channel(f'localhost:{port}', grpc.ssl_channel_credentials(
        (good / 'ca.crt').read_bytes())) as channel:
      assert check_health(channel) == 'SERVING'  # Health needs no token.
    assert run.wait_learner(timeout_s=150) == 0, run.learner_log()
  log = run.learner_log(tail_chars=None)  # The connect line is near its start.
  assert 'actor 7 split 0 connected' in log, run.learner_log()
  assert 'TLS' in log and 'reached max_env_frames' in log, run.learner_log()
  with open(tmp_path / 'run' / 'progress.csv') as f:
    last = f.read().splitlines()[-1].split(',')
  assert int(last[2]) > 0, f'no learner step in {last}'  # learner_steps


def run_learner(*flags, env=None):
  return subprocess.run([sys.executable, '-m', 'seed.learner.main', *flags],
                        capture_output=True, text=True, timeout=120, cwd=REPO,
                        env=dict(_env(), **(env or {})))


@pytest.mark.parametrize('flags,variables,message', [
    ([], {}, 'the run directory is not set: pass --logdir or set SEED_LOGDIR'),
    (['--server_address=0.0.0.0:8686'], {}, "refusing to listen on '0.0.0.0:8686' without TLS"),
    (['--tls_cert_file=/nonexistent/tls.crt', '--tls_key_file=/nonexistent/tls.key'], {},
     "--tls_cert_file='/nonexistent/tls.crt': cannot read it (No such file or directory)"),
    (['--tls_cert_file=CERT'], {}, 'TLS needs both --tls_cert_file and --tls_key_file'),
    (['--tls_cert_file=CA', '--tls_key_file=KEY'], {}, 'are not a PEM certificate and its '
                                                      'private key'),
    (['--auth_token_file=EMPTY'], {}, 'is empty'),
    ([], {'SEED_AUTH_TOKEN': 'two words'}, 'holds spaces or non-ASCII characters'),
    ([], {'SEED_HEALTH_PORT': 'eighty'}, "SEED_HEALTH_PORT='eighty' is not a valid value for "
                                         '--health_port'),
    (['--replay_parameters=[{"kind": "queue", "capacity": 1, "sample_ratio": 0.4}]'], {},
     'replay sample_ratios 0.4 sum to 0.4; accepted: a sum of 1 within 1e-06'),
    (['--replay_parameters=[{"kind": "fifo", "capacity": 1, "sample_ratio": 1}]'], {},
     "replay 0 (fifo): kind = 'fifo'; accepted: one of 'queue', 'uniform'"),
])
def test_the_learner_refuses_bad_settings_before_it_starts(certs, tmp_path, flags, variables,
                                                           message):
  (tmp_path / 'empty').write_text('\n')
  substitutions = {'CERT': certs['good'] / 'tls.crt', 'KEY': certs['good'] / 'tls.key',
                   'CA': certs['good'] / 'ca.crt', 'EMPTY': tmp_path / 'empty'}
  flags = [f.split('=')[0] + '=' + str(substitutions.get(f.split('=')[1], f.split('=')[1]))
           for f in flags]
  logdir = [] if not flags and not variables else [f'--logdir={tmp_path / "run"}']
  result = run_learner(*logdir, *flags, env=variables)
  assert result.returncode == 2, result.stdout + result.stderr
  assert message in result.stderr, result.stderr
  assert 'Traceback' not in result.stderr, result.stderr
  assert not (tmp_path / 'run').exists()  # Nothing started, not even the run directory.


@pytest.mark.parametrize('binding,message', [
    ("EnvConfig.name='Acrobot-v1'", "Unknown env name 'Acrobot-v1'"),
    ('VTraceConfig.batch_unrolls=0', 'batch_unrolls'),
    # Two normalisations of the advantages at once, and a reward scale <= 0.
    ("VTraceConfig.value_normalization='popart'\nVTraceConfig.normalize_advantages=True",
     'VTraceConfig.normalize_advantages = True and VTraceConfig.value_normalization'),
    ('VTraceConfig.reward_scale=-1.0', 'VTraceConfig.reward_scale = -1.0; accepted: a number > 0'),
    # A replay that cannot hold its share of a batch (toy V-trace: 16 unrolls, half).
    ("ReplayMixtureConfig.replays=[{'kind': 'queue', 'capacity': 1, 'sample_ratio': 0.5}, "
     "{'kind': 'uniform', 'capacity': 4, 'sample_ratio': 0.5}]",
     'replay 1 (uniform): capacity 4 is below its share of every batch'),
])
def test_a_bad_env_or_agent_binding_is_one_clear_line(tmp_path, binding, message):
  result = run_learner(f'--logdir={tmp_path / "run"}', '--agent=vtrace',
                       f'--gin_file={REPO}/gin/toy/vtrace.gin', f'--gin_bindings={binding}')
  assert result.returncode == 2, result.stdout + result.stderr
  assert message in result.stderr, result.stderr
  assert 'Traceback' not in result.stderr, result.stderr


@pytest.mark.parametrize('flags,variables,message', [
    ([], {'SEED_SERVER_ADDRESS': ''},
     "the learner's host:port is not set: pass --server_address or set SEED_SERVER_ADDRESS"),
    (['--server_address=learner'], {}, "--server_address='learner' (or SEED_SERVER_ADDRESS) "
                                       'is not host:port'),
    (['--actor_id=-1'], {}, '--actor_id=-1; expected an integer >= 0'),
    (['--tls_ca_file=/nonexistent/ca.crt'], {},
     "--tls_ca_file='/nonexistent/ca.crt': cannot read it"),
    (['--tls_ca_file=KEY'], {}, 'holds no PEM CA certificate'),
    ([], {'SEED_NUM_ENVS': '4.5'}, "SEED_NUM_ENVS='4.5' is not a valid value for --num_envs"),
])
def test_the_actor_refuses_bad_settings_before_it_starts(certs, flags, variables, message):
  flags = [f.replace('KEY', str(certs['good'] / 'tls.key')) for f in flags]
  result = subprocess.run([sys.executable, '-m', 'seed.actors.main', *flags],
                          capture_output=True, text=True, timeout=60, cwd=REPO,
                          env=dict(_env(), **variables))
  assert result.returncode == 2, result.stdout + result.stderr
  assert message in result.stderr, result.stderr
  assert 'Traceback' not in result.stderr, result.stderr


def _handshake(port: int, maximum: ssl.TLSVersion):
  """The TLS version a client offering at most `maximum` gets, or the handshake's error."""
  context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
  context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
  context.minimum_version = ssl.TLSVersion.MINIMUM_SUPPORTED
  context.maximum_version = maximum
  context.set_ciphers('ALL:@SECLEVEL=0')  # Our side would allow the old versions.
  context.set_alpn_protocols(['h2'])
  try:
    with socket.create_connection(('127.0.0.1', port), timeout=5) as raw:
      with context.wrap_socket(raw) as tls:
        return tls.version()
  except (ssl.SSLError, OSError) as e:
    return e


def test_the_learner_speaks_tls_1_2_and_newer_only(certs):
  with tls_harness(certs['good'], auth_token=TOKEN) as harness:
    port = int(harness.address.split(':')[1])
    assert _handshake(port, ssl.TLSVersion.TLSv1_3) == 'TLSv1.3'
    assert _handshake(port, ssl.TLSVersion.TLSv1_2) == 'TLSv1.2'
    for old in (ssl.TLSVersion.TLSv1_1, ssl.TLSVersion.TLSv1):
      assert isinstance(_handshake(port, old), (ssl.SSLError, OSError)), old


def test_the_token_is_never_logged(certs, caplog):
  caplog.set_level(logging.DEBUG)
  with tls_harness(certs['good'], auth_token=TOKEN) as harness:
    port = harness.address.split(':')[1]
    for token in ('good', 'wrong'):
      actor = start_actor(f'localhost:{port}', '--max_steps=5',
                          f"--tls_ca_file={certs['good'] / 'ca.crt'}",
                          f"--auth_token_file={certs['root'] / f'{token}.token'}")
      _, output = finish(actor)
      assert TOKEN not in output and 'not-the-token' not in output
  assert TOKEN not in caplog.text and 'not-the-token' not in caplog.text
