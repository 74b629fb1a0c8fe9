"""A killed learner resumes from its last checkpoint; SIGTERM checkpoints on the way out."""
import os
import re
import signal
import time

import pytest
import tensorflow as tf

from tests.processes import Run
from tests.server_harness import free_port

pytestmark = pytest.mark.timeout(300)


def read_checkpoint(logdir):
  path = tf.train.latest_checkpoint(os.path.join(logdir, 'ckpt'))
  if path is None:
    return None
  reader = tf.train.load_checkpoint(path)
  env_frames, env_steps, episodes, learner_steps = reader.get_tensor(
      'counters/.ATTRIBUTES/VARIABLE_VALUE').tolist()
  key = 'optimizer/_iterations/.ATTRIBUTES/VARIABLE_VALUE'  # Agents with one optimizer.
  iterations = int(reader.get_tensor(key)) if reader.has_tensor(key) else None
  return dict(path=path, env_frames=env_frames, env_steps=env_steps, episodes=episodes,
              learner_steps=learner_steps, optimizer_iterations=iterations)


def wait_for_checkpoint(logdir, min_learner_steps, timeout_s=120):
  deadline = time.monotonic() + timeout_s
  while time.monotonic() < deadline:
    state = read_checkpoint(logdir)
    if state is not None and state['learner_steps'] >= min_learner_steps:
      return state
    time.sleep(0.5)
  raise TimeoutError(f'no checkpoint with {min_learner_steps} learner steps')


def _catch_run(logdir) -> Run:
  """V-trace on Catch, checkpointing every second, on a port fixed for the run: a
  restarted learner takes it again and the actors reconnect by themselves."""
  return Run(logdir, 'gin/toy/vtrace.gin', gin_bindings=["EnvConfig.name='Catch'"],
             learner_flags=[f'--server_address=localhost:{free_port()}',
                            '--checkpoint_interval_s=1'])


def test_killed_learner_resumes_counters_and_optimizer(tmp_path):
  logdir = tmp_path / 'run'
  with _catch_run(logdir) as run:
    run.start_learner()
    run.start_actors(2, 2)
    wait_for_checkpoint(logdir, min_learner_steps=5)
    run.learner.send_signal(signal.SIGKILL)  # no chance to save: the periodic one must do
    run.learner.wait(timeout=30)
    before = read_checkpoint(logdir)
    # Model, optimizer and counters are saved together: the optimizer took
    # exactly as many steps as the counters say.
    assert before['optimizer_iterations'] == before['learner_steps']

    run.start_learner()  # same run directory and port: actors reconnect by themselves
    wait_for_checkpoint(logdir, min_learner_steps=before['learner_steps'] + 5)
    run.learner.send_signal(signal.SIGTERM)
    assert run.learner.wait(timeout=60) == 0, run.learner_log()
    after = read_checkpoint(logdir)
    log = run.learner_log(tail_chars=None)  # The resume lines are near each life's start.

  resumed = re.search(r"resumed from .*ckpt-(\d+): \{'env_frames': (\d+), 'env_steps': (\d+), "
                      r"'episodes': (\d+), 'learner_steps': (\d+)\}", log)
  assert resumed, log
  assert int(resumed.group(2)) == before['env_frames']
  assert int(resumed.group(5)) == before['learner_steps']
  assert after['learner_steps'] >= before['learner_steps'] + 5
  assert after['env_frames'] > before['env_frames']
  assert after['episodes'] > before['episodes']
  assert after['optimizer_iterations'] == after['learner_steps']
  assert 'received SIGTERM: checkpointing and stopping' in log


def test_replay_contents_survive_a_resume(tmp_path):
  port = free_port()
  logdir = tmp_path / 'run'
  with Run(logdir, 'gin/toy/r2d2.gin', agent='r2d2',
           learner_flags=[f'--server_address=localhost:{port}',
                          '--checkpoint_interval_s=1']) as run:
    run.start_learner()
    run.start_actors(2, 2)
    before = wait_for_checkpoint(logdir, min_learner_steps=3)
    run.learner.send_signal(signal.SIGKILL)
    run.learner.wait(timeout=30)
    before = read_checkpoint(logdir)
    replay_file = before['path'] + '.replay.npz'
    assert os.path.exists(replay_file)
    run.start_learner()
    wait_for_checkpoint(logdir, min_learner_steps=before['learner_steps'] + 3)
    run.learner.send_signal(signal.SIGTERM)
    assert run.learner.wait(timeout=60) == 0, run.learner_log()
    log = run.learner_log(tail_chars=None)  # The resume lines are near each life's start.
  restored = re.search(r'replay restored: (\d+) sequences', log)
  assert restored and int(restored.group(1)) >= 64, log  # at least the minimum fill
  # Only the replay files of the checkpoints kept remain.
  kept = {os.path.basename(p) for p in tf.train.get_checkpoint_state(
      os.path.join(logdir, 'ckpt')).all_model_checkpoint_paths}
  replays = {f[:-len('.replay.npz')] for f in os.listdir(logdir / 'ckpt')
             if f.endswith('.replay.npz')}
  assert replays <= kept and replays


def test_sac_resumes_with_its_replay_update_count_and_temperature(tmp_path):
  port = free_port()
  logdir = tmp_path / 'run'
  with Run(logdir, 'gin/toy/sac.gin', agent='sac',
           gin_bindings=['ReplayInput.min_fill_unrolls = 300'],
           learner_flags=[f'--server_address=localhost:{port}',
                          '--checkpoint_interval_s=1']) as run:
    run.start_learner()
    run.start_actors(1, 2)
    wait_for_checkpoint(logdir, min_learner_steps=20)
    run.learner.send_signal(signal.SIGKILL)
    run.learner.wait(timeout=30)
    before = read_checkpoint(logdir)
    reader = tf.train.load_checkpoint(before['path'])
    updates_before = int(reader.get_tensor('updates/.ATTRIBUTES/VARIABLE_VALUE'))
    # One update per learner step (updates_per_step = 1), all saved together.
    assert updates_before == before['learner_steps'] >= 20
    alpha_key = [k for k in reader.get_variable_to_shape_map() if 'log_alpha' in k
                 and 'optimizer' not in k and k.startswith('temperature/')]
    assert alpha_key, sorted(reader.get_variable_to_shape_map())
    assert reader.get_tensor(alpha_key[0]) != 0.0  # The temperature moved from log(1).
    run.start_learner()
    after = wait_for_checkpoint(logdir, min_learner_steps=before['learner_steps'] + 5)
    run.learner.send_signal(signal.SIGTERM)
    assert run.learner.wait(timeout=60) == 0, run.learner_log()
    log = run.learner_log(tail_chars=None)  # The resume lines are near each life's start.
  restored = re.search(r'replay restored: (\d+) sequences', log)
  assert restored and int(restored.group(1)) >= 300, log
  updates_after = int(tf.train.load_checkpoint(after['path']).get_tensor(
      'updates/.ATTRIBUTES/VARIABLE_VALUE'))
  assert updates_after == after['learner_steps'] > updates_before


def test_a_checkpoint_resumes_on_another_number_of_learner_devices(tmp_path):
  # tf.train.Checkpoint keys variables by object, not by device: a run started on two
  # (logical) devices resumes on one, with its counters and optimizer, and then on two.
  logdir = tmp_path / 'run'
  with _catch_run(logdir) as run:
    states, logs, logged_chars = [], [], 0
    for life, devices in enumerate(['CPU:0,CPU:1', None, 'CPU:0,CPU:1']):
      run.start_learner(extra_flags=[f'--learner_devices={devices}'] if devices else [])
      if life == 0:
        run.start_actors(2, 2)  # They reconnect to each new learner by themselves.
      wait_for_checkpoint(logdir, min_learner_steps=(states[-1]['learner_steps'] if states
                                                     else 0) + 5)
      run.learner.send_signal(signal.SIGTERM)
      assert run.learner.wait(timeout=60) == 0, run.learner_log()
      states.append(read_checkpoint(logdir))
      whole = run.learner_log(tail_chars=None)  # The log appends: this life's lines follow.
      logs.append(whole[logged_chars:])
      logged_chars = len(whole)
  for before, log in zip(states[:2], logs[1:]):
    assert re.search(rf"resumed from .*ckpt-\d+: \{{'env_frames': {before['env_frames']},",
                     log), log
  assert all(s['optimizer_iterations'] == s['learner_steps'] for s in states), states
  assert states[0]['learner_steps'] < states[1]['learner_steps'] < states[2]['learner_steps']
