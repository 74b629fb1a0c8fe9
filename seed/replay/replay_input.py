"""Prioritized sequence replay as an agent input, with replay-ratio control."""
import glob
import logging
import os
import threading
from typing import Dict, Optional

import gin
import numpy as np

from seed import types
from seed.replay.prioritized import PrioritizedReplay
from seed.replay.rate_limiter import SampleToInsertRatio

_log = logging.getLogger(__name__)


# How far inserts may run ahead of samples (or behind), in inserts, at most.
MAX_INSERTS_AHEAD = 512


def error_buffer(batch_unrolls: int, samples_per_insert: float) -> float:
  """The limiter's slack in samples: two batches' worth and then some, capped.

  It must hold a whole batch of samples and an insert (or both sides could wait for
  ever). Without the cap, 2 * batch * samples_per_insert would let actors run
  batch_unrolls inserts ahead, 10,240 for SAC at updates_per_step 20 (whose batch is
  updates_per_step * 256 and samples_per_insert the same): the cap keeps that near
  MAX_INSERTS_AHEAD whatever the replay ratio, and changes nothing for R2D2.
  """
  return min(2.0 * batch_unrolls * max(1.0, samples_per_insert),
             2.0 * batch_unrolls + MAX_INSERTS_AHEAD * samples_per_insert)


@gin.configurable
class ReplayInput:
  """Unrolls go into a prioritized replay; the trainer samples batches from it.

  New sequences get the highest priority seen so far, so each is likely to be
  sampled soon after it arrives; with `unvisited_priority='contextual'` (Reactor's)
  they get an estimate from their env's measured sequences nearest in time instead,
  and `uniform_sampling_probability` mixes in uniform draws (see PrioritizedReplay). A sample-to-insert limiter keeps
  `samples_per_insert` (sequences sampled per sequence inserted) near its
  target: whichever side runs ahead waits, the inference thread (and so the
  actors) when inserting, or the trainer when sampling. Sampling starts once
  `min_fill_unrolls` sequences are in.

  Storage (seed.replay.columns): one preallocated array per field. With
  `compact_observations`, stacked frames (uint8 observations [S, H, W] a step,
  Atari's) are kept once each and their stacks rebuilt exactly on sampling;
  `observation_compression` ('zstd', 'zlib' or None) compresses each sequence's
  frames. Other observations are kept as they come.
  """

  def __init__(self, batch_unrolls: int, stop_event: Optional[threading.Event] = None, *,
               capacity_unrolls: int = 2000, min_fill_unrolls: int = 200,
               samples_per_insert: float = 1.0, priority_exponent: float = 0.9,
               importance_exponent: float = 0.6, seed: int = 0,
               compact_observations: bool = True,
               observation_compression: Optional[str] = 'zstd',
               unvisited_priority: str = 'max', uniform_sampling_probability: float = 0.0):
    if min_fill_unrolls < batch_unrolls:
      raise ValueError(f'min_fill_unrolls={min_fill_unrolls} is below the batch size '
                       f'{batch_unrolls} (unrolls sampled per train step; SAC and DDPG: '
                       'updates_per_step * minibatch_transitions): the first batch could not be '
                       'drawn')
    if min_fill_unrolls > capacity_unrolls:
      raise ValueError(f'min_fill_unrolls={min_fill_unrolls} exceeds capacity_unrolls='
                       f'{capacity_unrolls}')
    self._stop = stop_event or threading.Event()
    self.replay = PrioritizedReplay(capacity_unrolls, priority_exponent, importance_exponent,
                                    seed=seed, compact_observations=compact_observations,
                                    observation_compression=observation_compression,
                                    unvisited_priority=unvisited_priority,
                                    uniform_sampling_probability=uniform_sampling_probability)
    self.samples_per_insert = samples_per_insert
    self.limiter = SampleToInsertRatio(samples_per_insert, min_fill_unrolls,
                                       error_buffer=error_buffer(batch_unrolls,
                                                                 samples_per_insert),
                                       stop_event=self._stop)
    self._priority_stats: Dict[str, float] = {}

  def put(self, unroll: types.Unroll) -> bool:
    """Inserts once the ratio allows; False (dropping the unroll) once stopping."""
    while not self.limiter.await_insert(timeout_s=0.5):
      if self._stop.is_set():
        return False
    self.replay.insert(unroll)
    return True

  def sample(self, batch_unrolls: int, timeout_s: float = 0.5) -> Optional[types.Sample]:
    """A batch of `batch_unrolls` sequences once the ratio allows, or None after `timeout_s`."""
    if not self.limiter.await_sample(timeout_s=timeout_s, num_samples=batch_unrolls):
      return None
    return self.replay.sample(batch_unrolls)

  def update_priorities(self, ids, priorities) -> None:
    """New priorities of sampled `ids` (a Sample's); those overwritten since are skipped."""
    priorities = np.asarray(priorities, np.float64)
    self.replay.update_priorities(ids, priorities)
    if priorities.size:
      self._priority_stats = {'replay/priority_mean': float(priorities.mean()),
                              'replay/priority_max': float(priorities.max())}

  def stats(self) -> Dict[str, float]:
    """'replay/size', and the mean and max of the last priority update if there was one."""
    return {'replay/size': float(len(self.replay)), **self._priority_stats}

  @property
  def fill(self) -> float:
    return len(self.replay) / self.replay.capacity

  def save(self, checkpoint_path: str) -> None:
    """Writes the replay next to a checkpoint (before it: see Checkpointer.save)."""
    self.replay.save(f'{checkpoint_path}.replay.npz')

  def restore(self, checkpoint_path: str) -> bool:
    path = f'{checkpoint_path}.replay.npz'
    if not os.path.exists(path):
      _log.warning('no replay saved with %s: starting with an empty replay', checkpoint_path)
      return False
    self.replay.load(path)
    # Resume where a running limiter settles: samples lag inserts by the
    # minimum fill's worth, so the trainer samples at once and keeps the ratio.
    inserts = len(self.replay)
    lag = self.samples_per_insert * self.limiter.min_size_to_sample
    self.limiter.load_state_dict({
        'inserts': inserts,
        'samples': max(0, int(inserts * self.samples_per_insert - lag))})
    _log.info('replay restored: %d sequences', inserts)
    return True

  @staticmethod
  def prune(directory: str, keep_checkpoints) -> None:
    """Deletes replay files whose checkpoint the manager no longer keeps."""
    keep = {f'{path}.replay.npz' for path in keep_checkpoints}
    for path in glob.glob(os.path.join(directory, '*.replay.npz')):
      if path not in keep:
        os.remove(path)
