"""The trainer thread: samples from the agent input -> train steps -> priorities back."""
import logging
import threading
import time
from typing import Callable, Optional

from seed.process import thread_names

from .checkpoint import CheckpointWriteError

_log = logging.getLogger(__name__)


class NonFiniteTraining(Exception):
  """Too many train steps in a row had a NaN/Inf loss or gradient."""


class Trainer(threading.Thread):
  """Trains on the very variables that inference reads (one device, no broadcast).

  Periodic checkpoints are written from this thread between two train steps,
  so the model and the optimizer state in a checkpoint always agree. A
  checkpoint that cannot be written (a full disk) is logged and counted, and
  training goes on; the next interval tries again.

  A train step whose loss or gradients were not finite changed nothing (the
  agent skipped its update) and its priorities are not used; after
  `max_nonfinite_steps` such steps in a row the trainer stops with
  NonFiniteTraining, and the learner with it, without checkpointing: the last
  checkpoint holds the last good parameters.
  """

  def __init__(self, agent, agent_input, counters, on_train, checkpointer,
               checkpoint_interval_s: float, stop_event: threading.Event,
               max_nonfinite_steps: int = 100,
               on_checkpoint: Optional[Callable[[str], object]] = None,
               learning_rate_fraction: Optional[Callable[[], float]] = None):
    """on_checkpoint(prefix) follows each periodic checkpoint written (not the final
    one); learning_rate_fraction() (--anneal_learning_rate), when given, sets the share
    of the configured step sizes each train step uses."""
    super().__init__(name='trainer', daemon=True)
    self._agent = agent
    self._input = agent_input
    self._counters = counters
    self._on_train = on_train
    self._checkpointer = checkpointer
    self._checkpoint_interval_s = checkpoint_interval_s
    self._stop_event = stop_event
    self._max_nonfinite_steps = max_nonfinite_steps
    self._on_checkpoint = on_checkpoint
    self._learning_rate_fraction = learning_rate_fraction
    self.error: Optional[BaseException] = None
    self.nonfinite_steps = 0      # all of this run
    self.checkpoint_failures = 0  # all of this run

  def run(self) -> None:
    thread_names.name_this_thread('seed_trainer')
    last_save = time.monotonic()
    nonfinite_in_a_row = 0
    try:
      while not self._stop_event.is_set():
        sample = self._input.sample(self._agent.batch_unrolls)
        if sample is None:
          continue
        if self._learning_rate_fraction is not None:
          self._agent.scale_learning_rates(self._learning_rate_fraction())
        self._agent.observe_env_frames(self._counters.get('env_frames'))
        result = self._agent.train_step(sample)
        if result.skipped_updates:
          nonfinite_in_a_row += 1
          self._on_nonfinite(nonfinite_in_a_row, result.skipped_updates)
        else:
          nonfinite_in_a_row = 0
          if result.priorities is not None:
            self._input.update_priorities(sample.ids, result.priorities)
          self._counters.add(learner_steps=1)
        self._on_train(dict(result.logs, **self._input.stats(),
                            **{'train/nonfinite_steps': float(self.nonfinite_steps),
                               'checkpoint/failures': float(self.checkpoint_failures)}))
        if time.monotonic() - last_save >= self._checkpoint_interval_s:
          if self.save_checkpoint() and self._on_checkpoint is not None:
            self._on_checkpoint(self._checkpointer.latest)
          last_save = time.monotonic()
    except BaseException as e:  # Surface it: the learner must not train silently dead.
      if isinstance(e, NonFiniteTraining):
        _log.error('%s', e)
      else:
        _log.exception('trainer failed')
      self.error = e
      self._stop_event.set()

  def save_checkpoint(self) -> bool:
    """Writes a checkpoint; a failure is logged and counted. Returns whether it was written."""
    try:
      self._checkpointer.save()
      return True
    except CheckpointWriteError as e:
      self.checkpoint_failures += 1
      _log.error('%s; training goes on and tries again in %.0f s', e,
                 self._checkpoint_interval_s)
      return False

  def _on_nonfinite(self, in_a_row: int, skipped_updates: int) -> None:
    self.nonfinite_steps += 1
    if in_a_row >= self._max_nonfinite_steps:
      raise NonFiniteTraining(
          f'{in_a_row} train steps in a row had a NaN or Inf loss or gradient and were '
          f'skipped (--max_nonfinite_steps={self._max_nonfinite_steps}); stopping without '
          f'a checkpoint, so the last one ({self._checkpointer.latest or "none"}) keeps the '
          'last good parameters. Look for a learning rate that is too high, rewards that '
          'are not clipped or scaled, or observations far outside their usual range.')
    if in_a_row == 1 or in_a_row % 10 == 0:
      _log.warning('train step skipped: %d of its optimizer updates had a NaN or Inf loss or '
                   'gradient (%d in a row; parameters and optimizer untouched)',
                   skipped_updates, in_a_row)
