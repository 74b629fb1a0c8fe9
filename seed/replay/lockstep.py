"""Acting and training in lockstep, for runs that must repeat exactly (--lockstep).

A learner normally trains while inference goes on, so which parameters act for a step
depends on timing, and two runs with the same seeds part after the first train step.
A LockstepInput wraps a queue-fed agent's input and holds the unroll that completes a
batch (its `put`, and with it the inference thread) until the trainer has trained on
that batch: every step after it is acted by the updated parameters. The trainer's next
`sample` call is the sign that its previous train step has finished (the trainer loop
is sample, train, report, sample).

With one actor stepping all its envs in one request (--num_splits=1), every inference
batch, unroll and train batch then comes in the same order in every run. The price is
speed: acting waits for every train step, as in a synchronous A2C.
"""
import threading
from typing import Optional

from seed import types
from seed.replay.wrapped_input import WrappedInput


class LockstepInput(WrappedInput):
  """Wraps an agent input (ReplayMixture, PrefetchingInput) whose batches are the
  unrolls in arrival order, `batch_unrolls` at a time."""

  def __init__(self, inner, batch_unrolls: int, stop_event: Optional[threading.Event] = None):
    super().__init__(inner)
    self.batch_unrolls = int(batch_unrolls)
    self._stop = stop_event or threading.Event()
    self._cond = threading.Condition()
    self._inserted = 0         # unrolls put
    self._sampled = 0          # batches handed to the trainer
    self._trained = 0          # batches whose train step has finished

  def put(self, unroll: types.Unroll) -> bool:
    """Puts the unroll; the one that completes a batch returns only once that batch is
    trained (False, dropping nothing more, once stopping)."""
    if not self.inner.put(unroll):
      return False
    with self._cond:
      self._inserted += 1
      batches = self._inserted // self.batch_unrolls
      if self._inserted % self.batch_unrolls:
        return True
      while self._trained < batches:
        if self._stop.is_set():
          return False
        self._cond.wait(timeout=0.1)
    return True

  def sample(self, batch_unrolls: int, timeout_s: float = 0.5) -> Optional[types.Sample]:
    with self._cond:
      # Called again by the trainer: the batch it sampled last is trained.
      self._trained = self._sampled
      self._cond.notify_all()
    sample = self.inner.sample(batch_unrolls, timeout_s)
    if sample is not None:
      with self._cond:
        self._sampled += 1
    return sample
