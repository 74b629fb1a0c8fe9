"""The actor process: no TensorFlow, reconnects, stops cleanly, explains refusals."""
import signal
import subprocess
import sys
import time

import pytest

from tests.processes import REPO, _env, track
import numpy as np

from seed.envs import env_spec, make_env
from seed.envs.spec import EnvSpec
from tests.server_harness import BoxAgent, ServerHarness, free_port

pytestmark = pytest.mark.timeout(120)

# Runs the real actor entry point, then reports whether TensorFlow was imported.
_ACTOR_THEN_CHECK_TF = '''
import sys
from seed.actors import main
sys.argv = ['actor'] + sys.argv[1:]
try:
  main.run()
except SystemExit as e:
  code = e.code
print('TENSORFLOW_IMPORTED' if 'tensorflow' in sys.modules else 'NO_TENSORFLOW', flush=True)
sys.exit(code)
'''


def start_actor(address, *flags, actor_id=0, num_envs=2, env='Catch'):
  """The actor entry point as a process, killed after the test if it still runs."""
  return track(subprocess.Popen(
      [sys.executable, '-c', _ACTOR_THEN_CHECK_TF, f'--server_address={address}',
       f'--actor_id={actor_id}', f'--num_envs={num_envs}',
       f"--gin_bindings=EnvConfig.name='{env}'", *flags],
      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=_env(), cwd=REPO))


def wait_for(condition, timeout_s=60.0):
  deadline = time.monotonic() + timeout_s
  while not condition():
    if time.monotonic() > deadline:
      raise TimeoutError('condition not met')
    time.sleep(0.05)


@pytest.mark.parametrize('transport', ['grpc', 'unix'])
def test_actor_runs_without_tensorflow(transport):
  with ServerHarness(transport=transport) as harness:
    actor = start_actor(harness.address, '--max_steps=200')
    output, _ = actor.communicate(timeout=90)
  assert actor.returncode == 0, output
  assert 'NO_TENSORFLOW' in output, output
  assert harness.counters.get('env_steps') >= 2 * 199


def test_actor_reconnects_with_a_new_run_id_when_the_learner_restarts():
  port = free_port()
  with ServerHarness(port=port) as first:
    actor = start_actor(f'127.0.0.1:{port}')
    wait_for(lambda: first.counters.get('env_steps') > 20)
    first_run_id = first.table._slots[(0, 0)][0].run_id
  with ServerHarness(port=port) as second:  # the "restarted learner"
    wait_for(lambda: second.counters.get('env_steps') > 20)
    assert second.table._slots[(0, 0)][0].run_id != first_run_id
  actor.send_signal(signal.SIGTERM)
  output, _ = actor.communicate(timeout=30)
  assert actor.returncode == 0, output
  # The status a stopping server gives varies (UNAVAILABLE, or INTERNAL from
  # grpc's core); what matters is that the actor saw the end and retried.
  assert 'stream to the learner' in output and 'retrying' in output


@pytest.mark.parametrize('transport', ['grpc', 'unix'])
@pytest.mark.parametrize('signum', [signal.SIGINT, signal.SIGTERM])
def test_signals_end_the_actor_cleanly(signum, transport):
  with ServerHarness(transport=transport) as harness:
    actor = start_actor(harness.address)
    wait_for(lambda: harness.counters.get('env_steps') > 10)
    actor.send_signal(signum)
    output, _ = actor.communicate(timeout=30)
  assert actor.returncode == 0, output
  assert 'stopped after' in output and 'Traceback' not in output


@pytest.mark.parametrize('transport', ['grpc', 'unix'])
def test_a_refused_actor_exits_with_the_reason(transport):
  with ServerHarness(transport=transport) as harness:  # serves Catch
    actor = start_actor(harness.address, env='CartPole-v1')
    output, _ = actor.communicate(timeout=60)
  assert actor.returncode == 2, output
  assert "the learner refused us: FAILED_PRECONDITION" in output
  assert "'CartPole-v1' differs from the learner env 'Catch'" in output


def test_unknown_env_fails_at_start_with_the_valid_names():
  actor = start_actor(f'127.0.0.1:{free_port()}', env='NoSuchEnv')
  output, _ = actor.communicate(timeout=60)
  assert actor.returncode != 0
  assert 'NoSuchEnv' in output and 'Catch' in output and 'CartPole-v1' in output


@pytest.mark.parametrize('transport', ['grpc', 'unix'])
def test_split_actor_serves_each_group_on_its_own_stream(transport):
  with ServerHarness(transport=transport) as harness:
    actor = start_actor(harness.address, '--num_splits=2', '--max_steps=100',
                        num_envs=3)
    output, _ = actor.communicate(timeout=90)
    assert actor.returncode == 0, output
    # Groups of 1 and 2 envs, each a stream of its own, all three connected at once.
    assert harness.table.num_ordinals == 3
    assert harness.counters.get('env_steps') >= 3 * 100 - 3 * 2


def test_an_evaluation_actor_is_never_trained_on():
  with ServerHarness() as harness:
    actor = start_actor(harness.address, '--eval', '--max_steps=60',
                        env='Catch')
    output, _ = actor.communicate(timeout=90)
    assert actor.returncode == 0, output
    # 60 steps of 2 Catch envs: 12 episodes end, all reported as evaluation ones,
    # and not one step reached the agent input.
    assert len(harness.eval_episodes) >= 10 and harness.episodes == []
    assert len(harness.fifo) == 0


PENDULUM_SPEC = EnvSpec((3,), 'float32', action_shape=(1,), action_dtype='float32',
                        action_low=(-2.0,), action_high=(2.0,))


def test_continuous_actions_travel_as_float32_vectors_to_a_real_actor():
  assert env_spec(make_env('gym:Pendulum-v1')) == PENDULUM_SPEC
  with ServerHarness(spec=PENDULUM_SPEC, env_name='gym:Pendulum-v1',
                     agent=BoxAgent((1,), 1.5)) as harness:
    actor = start_actor(harness.address, '--max_steps=50', env='gym:Pendulum-v1')
    output, _ = actor.communicate(timeout=90)
  assert actor.returncode == 0, output
  assert harness.counters.get('env_steps') >= 2 * 49
  assert harness.fifo.sample(1, timeout_s=1.0).data.steps.action.dtype == np.float32


def test_the_learner_refuses_to_send_actions_outside_the_bounds():
  with ServerHarness(spec=PENDULUM_SPEC, env_name='gym:Pendulum-v1',
                     agent=BoxAgent((1,), 5.0)) as harness:
    actor = start_actor(harness.address, env='gym:Pendulum-v1')
    # INTERNAL is the learner's own fault: the actor keeps retrying; stop it.
    wait_for(lambda: harness.table._connected == {} and harness.table.num_ordinals, 60)
    time.sleep(1.0)
    actor.send_signal(signal.SIGTERM)
    output, _ = actor.communicate(timeout=60)
    assert harness.counters.get('env_steps') == 0  # not one action reached an env
  assert 'INTERNAL' in output
  assert 'outside the bounds [[-2.0], [2.0]]' in output and '[5.0]' in output
