"""Evaluating checkpoints while training goes on (--eval_interval_s).

After a checkpoint is written, once `interval_s` has passed since the last evaluation
started, and none is still running, the learner starts `python -m seed.evaluate` on
that checkpoint as a child process: `episodes` episodes of the greedy policy, the
table in RUN/evaluation/, the returns (and with `video` the first episode as MP4 and
GIF) in TensorBoard under RUN/evaluation/tb, its output in RUN/logs/evaluation.log.
It runs beside training, on the same CPU, and never holds training up; at the end an
evaluation still running gets `close`'s grace period, then is stopped.

The checkpoint is pinned first: its model files are hard-linked (copied where links
are refused) into RUN/evaluation/pinned/ and the child reads them there. The learner
keeps only its last few checkpoints, and the child needs seconds to start, so the
checkpoint it was given could otherwise be deleted before it is read. The pinned
files go once the child has exited.
"""
import glob
import logging
import os
import shutil
import subprocess
import sys
import time
from typing import Optional

from seed.process import local_processes
from seed.run_dir.layout import RunDir

_log = logging.getLogger(__name__)


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
    self._run_dir = RunDir(logdir)
    self._pinned_dir = os.path.join(self._run_dir.evaluation, 'pinned')
    self._unpin()  # What a learner that was killed mid-evaluation left.

  def on_checkpoint(self, prefix: str) -> bool:
    """Starts an evaluation of `prefix` if one is due and none runs; whether it did."""
    now = time.monotonic()
    if self._running():
      return False
    self._unpin()
    if now - self._last_start < self._interval_s:
      return False
    name = os.path.basename(prefix)
    try:
      pinned = self._pin(prefix)
      command = [sys.executable, '-m', 'seed.evaluate', f'--logdir={self._logdir}',
                 f'--checkpoint={pinned}', f'--episodes={self._episodes}',
                 '--policy=greedy', '--tensorboard']
      if self._video:
        command.append(f'--video={os.path.join(self._run_dir.evaluation, name + ".mp4")}')
      os.makedirs(self._run_dir.logs, exist_ok=True)
      with open(os.path.join(self._run_dir.logs, 'evaluation.log'), 'a') as log:
        self._child = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                                       env=local_processes.child_env(),
                                       cwd=local_processes.REPO)
    except OSError as e:
      # A full disk must not stop training (this runs in the trainer's thread): this
      # evaluation is skipped and the next checkpoint tries again.
      _log.error('could not start the evaluation of %s (%s: %s); training goes on and the '
                 'next checkpoint tries again', prefix, type(e).__name__, e)
      self._child = None
      self._unpin()
      return False
    self._last_start = now
    self.started += 1
    return True

  def close(self, grace_s: float = 60.0) -> None:
    """Lets a running evaluation finish for up to `grace_s`, then stops it."""
    if self._running():
      try:
        self._child.wait(timeout=grace_s)
      except subprocess.TimeoutExpired:
        local_processes.stop([self._child], timeout_s=10)
    self._unpin()

  def _running(self) -> bool:
    return self._child is not None and self._child.poll() is None

  def _pin(self, prefix: str) -> str:
    """Links (or copies) the model files of checkpoint `prefix` into the pinned
    directory; returns the pinned prefix, with the same name. The replay is left out:
    evaluation reads only the model."""
    os.makedirs(self._pinned_dir, exist_ok=True)
    name = os.path.basename(prefix)
    for path in glob.glob(glob.escape(prefix) + '.index') + glob.glob(
        glob.escape(prefix) + '.data-*'):
      target = os.path.join(self._pinned_dir, os.path.basename(path))
      try:
        os.link(path, target)
      except OSError:  # A filesystem without hard links.
        shutil.copyfile(path, target)
    return os.path.join(self._pinned_dir, name)

  def _unpin(self) -> None:
    """Deletes the pinned files, unless an evaluation is still reading them."""
    if self._running():
      return
    shutil.rmtree(self._pinned_dir, ignore_errors=True)
