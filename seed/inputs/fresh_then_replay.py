"""ACER's data schedule as an agent input: each fresh batch, then a Poisson number of
replayed ones (Wang et al. 2017, algorithm 1: on-policy, then n ~ Poisson(r)
off-policy updates).

Every unroll goes into a uniform replay of whole traces and into a FIFO of capacity
two batches. `sample` hands out a fresh batch from the FIFO (blocking the inference
thread while it is full, as UnrollFifo does, so the actors never run far ahead of the
trainer), then draws n ~ Poisson(replay_ratio) and hands out n batches sampled
uniformly from the replay, once it holds `replay_start_unrolls`; while it holds fewer
those n are skipped. A replayed trace keeps the policy outputs it was acted with, so
its importance weights compare the current policy with the one that acted.
"""
import logging
import os
import threading
from typing import Dict, NamedTuple, Optional

import numpy as np

from seed import types
from seed.inputs.replay_input import ReplayInput
from seed.replay.fifo import UnrollFifo
from seed.replay.prioritized import PrioritizedReplay

_log = logging.getLogger(__name__)

# Batches of its size the FIFO holds before it blocks the inference thread.
FIFO_BATCHES = 2


class ReplaySchedule(NamedTuple):
  """What an agent with input_kind 'fresh_then_replay' asks of its input."""
  replay_ratio: float
  """The mean of the Poisson number of replayed batches after each fresh one, >= 0."""
  capacity_unrolls: int
  """Traces the replay holds."""
  replay_start_unrolls: int
  """Traces the replay must hold before a replayed batch is drawn."""


class FreshThenReplay:
  """The agent input of ACER: see the module docstring."""

  def __init__(self, batch_unrolls: int, schedule: ReplaySchedule,
               stop_event: Optional[threading.Event] = None, *, seed: int = 0):
    """Raises ValueError for a negative replay_ratio or a replay smaller than a batch."""
    replay_ratio, capacity_unrolls, replay_start_unrolls = schedule
    if not replay_ratio >= 0.0:
      raise ValueError(f'replay_ratio = {replay_ratio!r}; accepted: a number >= 0')
    if capacity_unrolls < max(batch_unrolls, replay_start_unrolls):
      raise ValueError(f'capacity_unrolls = {capacity_unrolls}; accepted: an int >= the batch '
                       f'({batch_unrolls}) and >= replay_start_unrolls ({replay_start_unrolls})')
    self.batch_unrolls = int(batch_unrolls)
    self.replay_ratio = float(replay_ratio)
    self.replay_start_unrolls = max(int(replay_start_unrolls), self.batch_unrolls)
    self._stop = stop_event or threading.Event()
    self.queue = UnrollFifo(FIFO_BATCHES * self.batch_unrolls, stop_event=self._stop)
    self.replay = PrioritizedReplay(capacity_unrolls, 0.0, 0.0, seed=seed)
    self._rng = np.random.default_rng(seed)
    self._lock = threading.Lock()
    self._replays_due = 0
    self.fresh_batches = 0
    self.replayed_batches = 0

  def put(self, unroll: types.Unroll) -> bool:
    """Into the replay, then the FIFO (blocking while full); False once stopping."""
    self.replay.insert(unroll)
    return self.queue.put(unroll)

  def sample(self, batch_unrolls: int, timeout_s: float = 0.5) -> Optional[types.Sample]:
    """The next batch of the schedule, or None if a fresh one is not there in time."""
    if batch_unrolls != self.batch_unrolls:
      raise ValueError(f'batch of {batch_unrolls} unrolls asked from an input set up for '
                       f'{self.batch_unrolls}')
    with self._lock:
      if self._replays_due > 0 and len(self.replay) >= self.replay_start_unrolls:
        self._replays_due -= 1
        self.replayed_batches += 1
        return self.replay.sample(batch_unrolls)
      # Too few traces stored yet: the replays due are skipped, not saved up.
      self._replays_due = 0
    fresh = self.queue.sample(batch_unrolls, timeout_s=timeout_s)
    if fresh is None:
      return None
    with self._lock:
      self._replays_due = int(self._rng.poisson(self.replay_ratio))
      self.fresh_batches += 1
    return fresh

  def ready(self, batch_unrolls: int) -> bool:
    """A replayed batch is due (and the replay holds enough), or a fresh one is queued."""
    with self._lock:
      if self._replays_due > 0 and len(self.replay) >= self.replay_start_unrolls:
        return True
    return len(self.queue) >= batch_unrolls

  def update_priorities(self, ids, priorities) -> None:
    """Uniform replay: priorities are not used."""
    del ids, priorities

  def stats(self) -> Dict[str, float]:
    """'replay/size' and the batches handed out so far, fresh and replayed."""
    return {'replay/size': float(len(self.replay)),
            'replay/fresh_batches': float(self.fresh_batches),
            'replay/replayed_batches': float(self.replayed_batches)}

  @property
  def fill(self) -> float:
    """The FIFO's fill (what holds the actors back)."""
    return self.queue.fill

  @property
  def saves_anything(self) -> bool:
    """The replay is kept with every checkpoint."""
    return True

  def save(self, checkpoint_path: str) -> None:
    """Writes the replay next to a checkpoint (the FIFO's few fresh traces are not kept)."""
    self.replay.save(f'{checkpoint_path}.replay.npz')

  def restore(self, checkpoint_path: str) -> bool:
    path = f'{checkpoint_path}.replay.npz'
    if not os.path.exists(path):
      _log.warning('no replay saved with %s: starting with an empty replay', checkpoint_path)
      return False
    self.replay.load(path)
    _log.info('replay restored: %d traces', len(self.replay))
    return True

  prune = staticmethod(ReplayInput.prune)
