"""Learner deaths: the learner (R2D2 on the toy memory task, with its replay) SIGKILLed
mid-run and started again on the same run directory and port, `count` times.

Each restart must resume from the newest checkpoint written before the kill
(counters, optimizer and replay: 'resumed from' and 'replay restored' in its
log), and every actor must reconnect by itself. Reconnection time is measured
in the learner's own log: from its 'learner listening' line to each actor's
'connected' line. The figures give the worst and median over all restarts.
"""
import os
import random
import re
import signal
import statistics
import time

from tests.system.faults.outcome import Outcome, Stopwatch
from tests.system.faults.toy_run import (ToyRun, checkpoints_written, free_port, log_lines,
                                    resumed_from)

CI_COUNT = 2
FULL_COUNT = 10

LIVE_ACTORS = 4
ENVS_PER_ACTOR = 2
MIN_TRAIN_S, MAX_TRAIN_S = 3.0, 8.0  # between a restart and the next kill
RECONNECT_TIMEOUT_S = 60.0
_CONNECTED = re.compile(r'^actor (\d+) split \d+ connected')


def run(count: int, workdir: str, seed: int = 0) -> Outcome:
  rng = random.Random(seed)
  outcome = Outcome('learner_restart', count)
  reconnect_s, listen_s, replay_sizes = [], [], []
  with Stopwatch(outcome), ToyRun(os.path.join(workdir, 'run'), agent='r2d2',
                                  gin_file='gin/toy/r2d2.gin', env_flags=[],
                                  learner_flags=['--checkpoint_interval_s=1']) as run_:
    port = run_.start_learner(free_port())
    for actor_id in range(LIVE_ACTORS):
      run_.start_actor(actor_id, ENVS_PER_ACTOR)
    for restart in range(count):
      try:
        _train_until_checkpointed(run_, rng.uniform(MIN_TRAIN_S, MAX_TRAIN_S))
        run_.learner.send_signal(signal.SIGKILL)
        run_.learner.wait()
        killed_at = time.monotonic()
        # The kill may land after a save completed and before its log line.
        newest = checkpoints_written(run_.learner_log_path)[-1]
        complete = {newest, _next_checkpoint(newest)}
        run_.start_learner(port)
        listen_s.append(time.monotonic() - killed_at)
        times = _reconnect_times(run_.learner_log_path, LIVE_ACTORS, RECONNECT_TIMEOUT_S)
        reconnect_s += times
        resumed, replay = resumed_from(run_.learner_log_path)
        replay_sizes.append(replay)
        if resumed not in complete:
          outcome.fail(f'restart {restart + 1}: resumed from {resumed}; the newest complete '
                       f'checkpoint was {newest} (or the next one, if it completed unlogged)')
        if not replay:
          outcome.fail(f'restart {restart + 1}: no replay restored')
      except (TimeoutError, RuntimeError) as e:
        outcome.fail(f'restart {restart + 1}: {e}\n{run_.learner_log()}')
        break
  if reconnect_s:
    outcome.figures.update({
        'reconnect_s_max': f'{max(reconnect_s):.1f}',
        'reconnect_s_p50': f'{statistics.median(reconnect_s):.1f}',
        'kill_to_listening_s': f'{statistics.median(listen_s):.0f}',
        'replay_restored': f'{min(replay_sizes):,}-{max(replay_sizes):,} sequences'})
  return outcome


def _next_checkpoint(path: str) -> str:
  prefix, number = path.rsplit('-', 1)
  return f'{prefix}-{int(number) + 1}'


def _train_until_checkpointed(run_: ToyRun, train_s: float) -> None:
  """Trains ~train_s and until a checkpoint was written."""
  deadline = time.monotonic() + train_s
  while True:
    if checkpoints_written(run_.learner_log_path) and time.monotonic() >= deadline:
      return
    if run_.learner.poll() is not None:
      raise RuntimeError(f'the learner exited with {run_.learner.returncode}')
    if time.monotonic() > deadline + 120:
      raise TimeoutError('no checkpoint written within 120 s')
    time.sleep(0.1)


def _reconnect_times(log_path: str, actors: int, timeout_s: float):
  """Seconds from 'learner listening' to each actor's first 'connected' line after it."""
  deadline = time.monotonic() + timeout_s
  while True:
    listening, connected = None, {}
    for t, message in log_lines(log_path):
      if message.startswith('learner listening'):
        listening = t
      match = _CONNECTED.match(message)
      if listening is not None and match:
        connected.setdefault(int(match.group(1)), t - listening)
    if len(connected) >= actors:
      return list(connected.values())
    if time.monotonic() > deadline:
      raise TimeoutError(f'{len(connected)} of {actors} actors reconnected within '
                         f'{timeout_s:.0f} s')
    time.sleep(0.2)
