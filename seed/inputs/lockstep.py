"""Acting and training in lockstep, for runs that must repeat exactly (--lockstep).

A learner normally trains while inference goes on, so which parameters act for a step
depends on timing, and two runs with the same seeds part after the first train step.
A LockstepInput wraps any agent input (seed.inputs.protocol.AgentInput) and holds each
`put`, and with it the inference thread, until the trainer has sampled every batch the
input can give (`ready`: a queued batch, what the replay ratio allows, ACER's replayed
batches) and trained on each: every step after it is acted by the updated parameters,
and every batch is drawn from the same contents. The trainer's next `sample` call is
the sign that its previous train step has finished (the trainer loop is sample, train,
report, sample); it samples only what is ready, under the lock the actor side checks.

With one actor stepping all its envs in one request (--num_splits=1), every inference
batch, unroll, replay draw and train batch then comes in the same order in every run.
The price is speed: acting waits for every train step, as in a synchronous A2C.
"""
import threading
import time
from typing import Optional

from seed import types
from seed.inputs.protocol import AgentInput
from seed.inputs.wrapped_input import WrappedInput

# How often a waiter re-checks the stop Event.
_POLL_S = 0.1


class LockstepInput(WrappedInput):
  """Wraps an agent input that samples in the order it was filled (no prefetching),
  whose trainer samples `batch_unrolls` at a time."""

  def __init__(self, inner: AgentInput, batch_unrolls: int,
               stop_event: Optional[threading.Event] = None):
    super().__init__(inner)
    self.batch_unrolls = int(batch_unrolls)
    self._stop = stop_event or threading.Event()
    self._cond = threading.Condition()
    self._sampled = 0          # batches handed to the trainer
    self._trained = 0          # batches whose train step has finished

  def _settled(self) -> bool:
    """Nothing left to sample and the last batch trained (lock held)."""
    return self._trained >= self._sampled and not self.inner.ready(self.batch_unrolls)

  def put(self, unroll: types.Unroll) -> bool:
    """Puts the unroll, then returns once every batch it made ready is trained (False,
    dropping nothing more, once stopping)."""
    if not self.inner.put(unroll):
      return False
    with self._cond:
      self._cond.notify_all()
      while not self._settled():
        if self._stop.is_set():
          return False
        self._cond.wait(_POLL_S)
    return True

  def sample(self, batch_unrolls: int, timeout_s: float = 0.5) -> Optional[types.Sample]:
    if batch_unrolls != self.batch_unrolls:
      raise ValueError(f'batch of {batch_unrolls} unrolls asked from a lockstep input set up '
                       f'for {self.batch_unrolls}')
    deadline = time.monotonic() + timeout_s
    with self._cond:
      # Called again by the trainer: the batch it sampled last is trained.
      self._trained = self._sampled
      self._cond.notify_all()
      while not self.inner.ready(batch_unrolls):
        remaining_s = deadline - time.monotonic()
        if remaining_s <= 0 or self._stop.is_set():
          return None
        self._cond.wait(min(remaining_s, _POLL_S))
      sample = self.inner.sample(batch_unrolls, timeout_s)
      if sample is not None:
        self._sampled += 1
      return sample
