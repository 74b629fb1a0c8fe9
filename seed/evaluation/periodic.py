"""Evaluating checkpoints while training goes on (--eval_interval_s).

After a checkpoint is written, once `interval_s` has passed since the last evaluation
started, and none is still running, the learner starts `python -m seed.evaluate` on
that checkpoint as a child process: `episodes` episodes of the greedy policy, the
table in RUN/evaluation/, the returns (and with `video` the first episode as MP4 and
GIF) in TensorBoard under RUN/evaluation/tb, its output in RUN/logs/evaluation.log.
It runs beside training, on the same CPU, and never holds training up; at the end an
evaluation still running gets `close`'s grace period, then is stopped.
"""
import os
import subprocess
import sys
import time
from typing import Optional

from seed import local_processes


class PeriodicEvaluation:

  def __init__(self, logdir: str, interval_s: float, episodes: int, video: bool):
    if interval_s <= 0 or episodes < 1:
      raise ValueError(f'--eval_interval_s={interval_s} and --eval_episodes={episodes}; '
                       'expected > 0 and >= 1')
    self._logdir = logdir
    self._interval_s = interval_s
    self._episodes = episodes
    self._video = video
    self._child: Optional[subprocess.Popen] = None
    self._last_start = -float('inf')
    self.started = 0

  def on_checkpoint(self, prefix: str) -> bool:
    """Starts an evaluation of `prefix` if one is due and none runs; whether it did."""
    now = time.monotonic()
    if self._child is not None and self._child.poll() is None:
      return False
    if now - self._last_start < self._interval_s:
      return False
    name = os.path.basename(prefix)
    command = [sys.executable, '-m', 'seed.evaluate', f'--logdir={self._logdir}',
               f'--checkpoint={prefix}', f'--episodes={self._episodes}', '--policy=greedy',
               '--tensorboard']
    if self._video:
      command.append(f'--video={os.path.join(self._logdir, "evaluation", name + ".mp4")}')
    os.makedirs(os.path.join(self._logdir, 'logs'), exist_ok=True)
    with open(os.path.join(self._logdir, 'logs', 'evaluation.log'), 'a') as log:
      self._child = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                                     env=local_processes.child_env(), cwd=local_processes.REPO)
    self._last_start = now
    self.started += 1
    return True

  def close(self, grace_s: float = 60.0) -> None:
    """Lets a running evaluation finish for up to `grace_s`, then stops it."""
    if self._child is None or self._child.poll() is not None:
      return
    try:
      self._child.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
      local_processes.stop([self._child], timeout_s=10)
