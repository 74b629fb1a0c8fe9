"""The trainer thread: samples from the agent input -> train steps -> priorities back."""
import logging
import threading
import time
from typing import Optional

_log = logging.getLogger(__name__)


class Trainer(threading.Thread):
  """Trains on the very variables that inference reads (one device, no broadcast).

  Periodic checkpoints are written from this thread between two train steps,
  so the model and the optimizer state in a checkpoint always agree.
  """

  def __init__(self, agent, agent_input, counters, on_train, checkpointer,
               checkpoint_interval_s: float, stop_event: threading.Event):
    super().__init__(name='trainer', daemon=True)
    self._agent = agent
    self._input = agent_input
    self._counters = counters
    self._on_train = on_train
    self._checkpointer = checkpointer
    self._checkpoint_interval_s = checkpoint_interval_s
    self._stop_event = stop_event
    self.error: Optional[BaseException] = None

  def run(self) -> None:
    last_save = time.monotonic()
    try:
      while not self._stop_event.is_set():
        sample = self._input.sample(self._agent.batch_unrolls)
        if sample is None:
          continue
        result = self._agent.train_step(sample)
        if result.priorities is not None:
          self._input.update_priorities(sample.ids, result.priorities)
        self._counters.add(learner_steps=1)
        self._on_train(dict(result.logs, **self._input.stats()))
        if time.monotonic() - last_save >= self._checkpoint_interval_s:
          self._checkpointer.save()
          last_save = time.monotonic()
    except BaseException as e:  # Surface it: the learner must not train silently dead.
      _log.exception('trainer failed')
      self.error = e
      self._stop_event.set()
