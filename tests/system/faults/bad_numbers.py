"""Bad numbers through a whole learner: an actor whose env returns rewards at
float32's edge (finite one by one; their discounted sums overflow to Inf in the
V-trace loss), let in by a user who raised `--max_abs_input` past them.

Four phases, on one run directory (V-trace on Catch, a checkpoint a second,
`--max_nonfinite_steps=count`):
  1. healthy: two real actors train until a checkpoint is written;
  2. mixed: a poisoned actor (one env, one poisoned step in POISON_EVERY_MIXED)
     joins them: a share of the train steps is skipped and warned about, the
     rest go on;
  3. poisoned only: the real actors stop, a poisoned actor whose every step is
     poisoned takes their place: after `count` skipped steps in a row the learner
     exits 1 naming --max_nonfinite_steps, writing no checkpoint;
  4. resumed: the learner restarts on the run directory with the real actors;
     it resumes from the newest checkpoint and trains without one skipped step,
     so the skipped updates had left parameters and optimizer as they were.
"""
import asyncio
import logging
import os
import threading
import time
from typing import List, Optional

import gymnasium
import numpy as np

from seed.process import local_processes as processes
from tests.system.faults import watch
from tests.system.faults.outcome import Outcome, Stopwatch
from tests.system.faults.toy_run import ToyRun, checkpoints_written, log_lines, resumed_from
from seed.actors.client import Actor, split_envs
from seed.envs.registry import env_spec, make_env

CI_COUNT = 10
FULL_COUNT = 100

REAL_ACTORS = 2
ENVS_PER_REAL_ACTOR = 4
# One poisoned step in this many of the mixed-phase poisoner's env: ~1/6 of its
# unrolls (20 steps), ~2% of all, so ~1 train batch (16 unrolls) in 4 is skipped
# and `count` in a row by chance is out of reach (0.25^10 ~ 1e-6).
POISON_EVERY_MIXED = 120
POISON_REWARD = float(np.finfo(np.float32).max)
MAX_ABS_INPUT = '1e39'  # above float32's largest: the poison gets through
HEALTHY_STEPS_AFTER_RESUME = 30
PHASE_TIMEOUT_S = 180.0
_SKIPPED = 'train step skipped'


class PoisonedRewards(gymnasium.Wrapper):
  """Every `every`-th step's reward is float32's largest finite value."""

  def __init__(self, env: gymnasium.Env, every: int):
    super().__init__(env)
    self._every = every
    self._steps = 0

  def step(self, action):
    observation, reward, terminated, truncated, info = self.env.step(action)
    self._steps += 1
    if self._steps % self._every == 0:
      reward = POISON_REWARD
    return observation, reward, terminated, truncated, info


class PoisonedActor(threading.Thread):
  """A real `Actor` (the actors' own client) stepping poisoned Catch envs, in a thread."""

  def __init__(self, actor_id: int, num_envs: int, every: int, port: int):
    super().__init__(daemon=True)
    envs = [PoisonedRewards(make_env('Catch', seed=100 + i), every) for i in range(num_envs)]
    self.actor = Actor(split_envs(envs, env_spec(envs[0])), 'Catch', actor_id,
                       f'localhost:{port}', max_backoff_s=0.5)
    self.error: Optional[BaseException] = None
    self._loop: Optional[asyncio.AbstractEventLoop] = None
    self._running = threading.Event()

  def run(self) -> None:
    # Its retries once the learner it poisoned has stopped are expected: not on the console.
    logging.getLogger('seed.actors.client').setLevel(logging.ERROR)

    async def main():
      self._loop = asyncio.get_running_loop()
      self._running.set()
      await self.actor.run()
    try:
      asyncio.run(main())
    except Exception as e:  # pylint: disable=broad-except
      self.error = e  # e.g. the learner it poisoned is gone: expected in phase 3
    finally:
      self._running.set()

  def stop(self) -> None:
    self._running.wait()
    if self._loop is not None and self.is_alive():
      self._loop.call_soon_threadsafe(self.actor.stop)
    self.join(timeout=30)


def run(count: int, workdir: str) -> Outcome:
  outcome = Outcome('bad_numbers', count)
  poisoners: List[PoisonedActor] = []
  flags = ['--checkpoint_interval_s=1', f'--max_nonfinite_steps={count}',
           f'--max_abs_input={MAX_ABS_INPUT}']
  with Stopwatch(outcome), ToyRun(os.path.join(workdir, 'run'), learner_flags=flags) as run_:
    try:
      port = run_.start_learner()
      for actor_id in range(REAL_ACTORS):
        run_.start_actor(actor_id, ENVS_PER_REAL_ACTOR)
      # 1. Healthy, until a checkpoint holds trained parameters.
      rows = run_.wait_progress(lambda r: int(r[-1]['learner_steps']) >= 20, PHASE_TIMEOUT_S)
      watch.wait_until(lambda: checkpoints_written(run_.learner_log_path), 'a checkpoint',
                       PHASE_TIMEOUT_S, watched=[run_.learner])
      healthy_steps = int(rows[-1]['learner_steps'])

      # 2. Mixed: some steps skipped, training goes on.
      poisoners.append(PoisonedActor(REAL_ACTORS, 1, POISON_EVERY_MIXED, port))
      poisoners[-1].start()
      watch.wait_until(lambda: _skip_warnings(run_.learner_log_path) >= 3,
                       'three skipped train steps', PHASE_TIMEOUT_S, watched=[run_.learner])
      rows = run_.wait_progress(
          lambda r: int(r[-1]['learner_steps']) >= healthy_steps + 20, PHASE_TIMEOUT_S)
      mixed_skips = _skip_warnings(run_.learner_log_path)
      mixed_steps = int(rows[-1]['learner_steps']) - healthy_steps
      poisoners[-1].stop()

      # 3. Poisoned only: the learner must stop by itself, exit 1, no checkpoint.
      processes.stop([run_.actors.pop(actor_id) for actor_id in range(REAL_ACTORS)])
      poisoners.append(PoisonedActor(REAL_ACTORS + 1, ENVS_PER_REAL_ACTOR, 1, port))
      poisoners[-1].start()
      poisoned_at = time.monotonic()
      try:
        exit_code = run_.learner.wait(timeout=PHASE_TIMEOUT_S)
      except Exception:  # pylint: disable=broad-except
        outcome.fail(f'the learner did not stop within {PHASE_TIMEOUT_S:.0f} s of '
                     f'poison alone\n{run_.learner_log()}')
        return outcome
      stop_s = time.monotonic() - poisoned_at
      _check_stop(outcome, run_.learner_log_path, exit_code, count)
      written = checkpoints_written(run_.learner_log_path)
      poisoners[-1].stop()

      # 4. Resumed: from the newest checkpoint, trains with no skipped step.
      run_.start_learner(port)
      for actor_id in range(REAL_ACTORS):
        run_.start_actor(actor_id, ENVS_PER_REAL_ACTOR)
      resumed, _ = resumed_from(run_.learner_log_path)
      if resumed != written[-1]:
        outcome.fail(f'resumed from {resumed}; the newest checkpoint written was {written[-1]}')
      start_rows = len(run_.rows())
      rows = run_.wait_progress(
          lambda r: len(r) > start_rows and
          int(r[-1]['learner_steps']) >= int(r[start_rows]['learner_steps']) +
          HEALTHY_STEPS_AFTER_RESUME, PHASE_TIMEOUT_S)
      resumed_skips = _skip_warnings(run_.learner_log_path)
      if resumed_skips:
        outcome.fail(f'{resumed_skips} train steps skipped after the resume: the checkpoint '
                     'held bad parameters')
      outcome.figures.update({
          'mixed': f'{mixed_skips} skip warnings while {mixed_steps} steps trained',
          'poison_alone_to_exit_s': f'{stop_s:.1f}',
          'resumed_from': os.path.basename(resumed or 'none'),
          'steps_after_resume_without_skip': f'{HEALTHY_STEPS_AFTER_RESUME}'})
    except (TimeoutError, RuntimeError) as e:
      outcome.fail(f'{e}\n{run_.learner_log()}')
    finally:
      for poisoner in poisoners:
        poisoner.stop()
  return outcome


def _skip_warnings(log_path: str) -> int:
  """Streaks of skipped train steps the learner warned about (one line per streak start)."""
  return sum(1 for _, message in log_lines(log_path) if message.startswith(_SKIPPED))


def _check_stop(outcome: Outcome, log_path: str, exit_code: int, count: int) -> None:
  messages = [message for _, message in log_lines(log_path)]
  stop = [m for m in messages if f'--max_nonfinite_steps={count}' in m]
  if exit_code != 1:
    outcome.fail(f'the learner exited with {exit_code} under poison alone; expected 1')
  if not stop:
    outcome.fail(f'no error naming --max_nonfinite_steps={count} in the learner log')
  else:
    after = messages[messages.index(stop[0]):]
    if any(m.startswith('checkpoint written: ') for m in after):
      outcome.fail('a checkpoint was written after the learner gave up on bad numbers')
