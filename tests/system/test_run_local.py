"""./run_local.sh as a user runs it: start, progress, Ctrl-C, resume, bad arguments."""
import os
import signal
import subprocess
import time

import pytest

from tests.processes import REPO, _env, track
from tests.server_harness import free_port

pytestmark = pytest.mark.timeout(300)


def _default_interrupts():
  # A shell started with SIGINT ignored cannot trap it (bash ignores signals that were
  # ignored on entry): so it is when pytest itself runs as a background job of a
  # script, e.g. `nohup ./run_tests.sh &`. A user's terminal delivers Ctrl-C with the
  # default action, as here.
  signal.signal(signal.SIGINT, signal.SIG_DFL)
  signal.signal(signal.SIGQUIT, signal.SIG_DFL)


def launch(*args, logdir):
  """./run_local.sh in a session of its own; its whole group is killed after the test, so
  a test that fails half-way leaves no learner or actor running (one CI run did)."""
  env = dict(_env(), SEED_PORT=str(free_port()), SEED_TENSORBOARD_PORT='0')
  return track(subprocess.Popen(['./run_local.sh', *args, f'--logdir={logdir}',
                                 '--progress_interval_s=1'],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                env=env, cwd=REPO, start_new_session=True,
                                preexec_fn=_default_interrupts), group=True)


def wait_for_text(path, text, timeout_s=180):
  deadline = time.monotonic() + timeout_s
  while time.monotonic() < deadline:
    if os.path.exists(path) and text in open(path).read():
      return
    time.sleep(0.5)
  raise TimeoutError(f'{text!r} never appeared in {path}')


def communicate(run, logdir, timeout_s):
  """run's output once it exits; on a timeout, kills its process group (so a failed
  test leaves nothing running) and fails with what each process last logged."""
  try:
    return run.communicate(timeout=timeout_s)[0]
  except subprocess.TimeoutExpired:
    left = processes_using(logdir)
    os.killpg(run.pid, signal.SIGKILL)
    output = run.communicate()[0]
    logs = {name: open(os.path.join(logdir, 'logs', name)).read()[-3000:]
            for name in sorted(os.listdir(os.path.join(logdir, 'logs')))}
    pytest.fail(f'./run_local.sh still running {timeout_s} s on; processes left: {left}\n'
                f'output:\n{output[-3000:]}\n' + '\n'.join(f'--- {name}:\n{text}'
                                                     for name, text in logs.items()))


def processes_using(logdir):
  found = subprocess.run(['pgrep', '-f', f'--logdir={logdir}'], capture_output=True, text=True)
  return found.stdout.split()


def test_ctrl_c_checkpoints_stops_everything_and_a_relaunch_resumes(tmp_path):
  logdir = str(tmp_path / 'run')
  run = launch('toy', 'vtrace', '2', '2', '--seed=3', logdir=logdir)
  learner_log = os.path.join(logdir, 'logs', 'learner.log')
  wait_for_text(learner_log, 'frames/s')
  wait_for_text(os.path.join(logdir, 'logs', 'actor_1.log'), 'connected to learner')
  with open(learner_log) as f:  # The actors of this host come over the Unix socket.
    assert f"learner listening on unix:{logdir}/learner.sock" in f.read()
  wait_for_text(learner_log, 'peer unix:pid')
  # --seed reaches the agent's config and every actor's envs.
  with open(os.path.join(logdir, 'operative_config.gin')) as f:
    assert 'VTraceConfig.seed = 3' in f.read()
  with open(os.path.join(logdir, 'logs', 'actor_1.log')) as f:
    assert 'actor 1: 2 CartPole-v1 envs, seeds 1003..1004' in f.read()
  os.kill(run.pid, signal.SIGINT)  # what Ctrl-C sends to the script
  output = communicate(run, logdir, 120)
  assert run.returncode == 130, output  # ended by Ctrl-C, after a clean stop
  assert 'frames/s' in output and 'received SIGTERM: checkpointing and stopping' in output
  assert 'checkpoint written' in output, open(learner_log).read()[-4000:]
  assert processes_using(logdir) == []
  assert subprocess.run(['pgrep', '-f', f'{logdir}/logs/learner.log'],
                        capture_output=True).stdout == b''  # no tail left behind
  for name in ['operative_config.gin', 'flags.txt', 'episodes.csv', 'logs/actor_0.log',
               'logs/actor_1.log', 'ckpt/checkpoint']:
    assert os.path.exists(os.path.join(logdir, name)), name

  rerun = launch('toy', 'vtrace', '1', '2', '--max_env_frames=1', logdir=logdir)
  output = communicate(rerun, logdir, 180)
  assert rerun.returncode == 0, output
  assert 'resumed: True' in output


def test_env_reaches_the_actors_as_well_as_the_learner(tmp_path):
  logdir = str(tmp_path / 'run')
  run = launch('toy', 'vtrace', '1', '2', '--env=Catch', '--max_env_frames=3000',
               '--local_socket=', logdir=logdir)  # gRPC, by choice
  output = communicate(run, logdir, 180)
  assert run.returncode == 0, output
  assert 'actors connect to localhost:' in output and 'peer ipv' in output, output
  with open(os.path.join(logdir, 'logs', 'actor_0.log')) as f:
    assert 'actor 0: 2 Catch envs' in f.read()
  assert 'on Catch' in output


@pytest.mark.parametrize('args,message', [
    (('nope', 'vtrace', '1', '1'), "unknown env 'nope'; valid envs: atari classic dmc dmlab football mujoco toy"),
    (('toy', 'nope', '1', '1'), "unknown agent 'nope' for env 'toy'; valid agents: acer acer_continuous ddpg ppo r2d2 reactor sac sr_sac vtrace"),
    (('toy', 'vtrace', '0', '1'), 'must be positive integers'),
])
def test_bad_arguments_name_the_valid_ones(args, message):
  result = subprocess.run(['./run_local.sh', *args], capture_output=True, text=True, cwd=REPO)
  assert result.returncode == 2
  assert message in result.stderr
