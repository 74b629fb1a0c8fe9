"""Batches prepared ahead in a background thread ("caching" in the original platform).

Drawing a batch can cost as much as a train step: an elite or attentive replay runs
the network over its candidates, and frames are decompressed. A PrefetchingInput
draws batches from the input it wraps in its own thread, up to `depth` ahead, so the
trainer finds the next one ready. What it changes: an elite batch is ranked by a
network up to `depth` train steps old, and priorities reach the replay `depth` steps
later. Batches waiting in the buffer when the learner stops are lost (the queue's
unrolls are never checkpointed anyway; replayed ones are still in their replay).
"""
import queue
import threading
from typing import Dict, Optional

from seed.process import thread_names
from seed import types
from seed.inputs.wrapped_input import WrappedInput


class PrefetchingInput(WrappedInput):
  """Wraps an agent input (ReplayMixture, ReplayInput) with a bounded batch buffer."""

  def __init__(self, inner, batch_unrolls: int, depth: int,
               stop_event: Optional[threading.Event] = None):
    if depth < 1:
      raise ValueError(f'prefetch depth {depth}; accepted: an int >= 1 (0 means no '
                       'prefetching: use the input itself)')
    super().__init__(inner)
    self.batch_unrolls = int(batch_unrolls)
    self.depth = int(depth)
    self._stop = stop_event or threading.Event()
    self._ready: 'queue.Queue[types.Sample]' = queue.Queue(maxsize=self.depth)
    self.error: Optional[BaseException] = None
    self._thread = threading.Thread(target=self._fill, name='batch-prefetch', daemon=True)
    self._thread.start()

  def _fill(self) -> None:
    thread_names.name_this_thread('seed_prefetch')
    try:
      while not self._stop.is_set():
        sample = self.inner.sample(self.batch_unrolls)
        while sample is not None and not self._stop.is_set():
          try:
            self._ready.put(sample, timeout=0.1)
            break
          except queue.Full:
            continue
    except BaseException as e:  # pylint: disable=broad-except
      # Handed to the trainer at its next sample: it must not wait on a dead thread.
      self.error = e

  def sample(self, batch_unrolls: int, timeout_s: float = 0.5) -> Optional[types.Sample]:
    """The next prepared batch, or None after `timeout_s`; re-raises the thread's error."""
    if batch_unrolls != self.batch_unrolls:
      raise ValueError(f'batch of {batch_unrolls} unrolls asked from a prefetcher of '
                       f'{self.batch_unrolls}')
    try:
      return self._ready.get(timeout=timeout_s)
    except queue.Empty:
      if self.error is not None:
        raise RuntimeError('preparing batches failed') from self.error
      return None

  def ready(self, batch_unrolls: int) -> bool:
    """A prepared batch is waiting."""
    del batch_unrolls
    return not self._ready.empty()

  def stats(self) -> Dict[str, float]:
    return dict(self.inner.stats(), **{'replay/prefetched_batches': float(self._ready.qsize())})
