"""Prioritized sequence replay as an agent input, with replay-ratio control."""
import glob
import logging
import os
import threading
from typing import Dict, Optional

import gin
import numpy as np

from seed import types
from seed.inputs.rate_limiter import SampleToInsertRatio
from seed.replay.prioritized import PrioritizedReplay

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
  and `uniform_sampling_probability` mixes in uniform draws (see PrioritizedReplay).
  A sample-to-insert limiter keeps `samples_per_insert` (sequences sampled per
  sequence inserted) near its target: whichever side runs ahead waits, the inference thread (and so the
  actors) when inserting, or the trainer when sampling. Sampling starts once
  `min_fill_unrolls` sequences are in.

  Seeds (`num_seeds` N > 1, an agent training N independent seeds): one replay per
  seed, `capacity_unrolls` each, seeded seed + k; an unroll goes to the replay of its
  env's seed (env ordinal mod N, as the agent deals envs), and a batch is
  `batch_unrolls` from each replay, seed by seed. One limiter counts the inserts and
  samples of all of them, with N times the minimum fill, so no seed's replay can stall
  the others (uneven env counts per seed give the seeds uneven replay ratios: deal a
  multiple of N envs). Each replay is saved beside the checkpoint in a file of its own.

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
               unvisited_priority: str = 'max', uniform_sampling_probability: float = 0.0,
               num_seeds: int = 1):
    if not isinstance(num_seeds, int) or num_seeds < 1:
      raise ValueError(f'num_seeds must be an int >= 1, got {num_seeds!r}')
    if min_fill_unrolls < batch_unrolls:
      raise ValueError(f'min_fill_unrolls={min_fill_unrolls} is below the batch size '
                       f'{batch_unrolls} (unrolls sampled per train step; SAC and DDPG: '
                       'updates_per_step * minibatch_transitions): the first batch could not be '
                       'drawn')
    if min_fill_unrolls > capacity_unrolls:
      raise ValueError(f'min_fill_unrolls={min_fill_unrolls} exceeds capacity_unrolls='
                       f'{capacity_unrolls}')
    self._stop = stop_event or threading.Event()
    self.replays = [
        PrioritizedReplay(capacity_unrolls, priority_exponent, importance_exponent,
                          seed=seed + k, compact_observations=compact_observations,
                          observation_compression=observation_compression,
                          unvisited_priority=unvisited_priority,
                          uniform_sampling_probability=uniform_sampling_probability)
        for k in range(num_seeds)]
    self.replay = self.replays[0]
    self.samples_per_insert = samples_per_insert
    self.limiter = SampleToInsertRatio(samples_per_insert, min_fill_unrolls * num_seeds,
                                       error_buffer=error_buffer(batch_unrolls * num_seeds,
                                                                 samples_per_insert),
                                       stop_event=self._stop)
    self._priority_stats: Dict[str, float] = {}

  def put(self, unroll: types.Unroll) -> bool:
    """Inserts once the ratio allows; False (dropping the unroll) once stopping."""
    while not self.limiter.await_insert(timeout_s=0.5):
      if self._stop.is_set():
        return False
    self.replays[int(unroll.env_id) % len(self.replays)].insert(unroll)
    return True

  def sample(self, batch_unrolls: int, timeout_s: float = 0.5) -> Optional[types.Sample]:
    """A batch of `batch_unrolls` sequences (from each seed's replay, seed by seed) once
    the ratio allows, or None after `timeout_s`."""
    if len(self.replays) > 1 and not all(len(replay) for replay in self.replays):
      self._stop.wait(timeout_s)  # A seed none of whose envs has sent an unroll yet.
      return None
    if not self.limiter.await_sample(timeout_s=timeout_s,
                                     num_samples=batch_unrolls * len(self.replays)):
      return None
    if len(self.replays) == 1:
      return self.replay.sample(batch_unrolls)
    samples = [replay.sample(batch_unrolls) for replay in self.replays]
    return types.Sample(ids=np.concatenate([s.ids for s in samples]),
                        data=types.concat_unrolls([s.data for s in samples]),
                        weights=np.concatenate([s.weights for s in samples]))

  def ready(self, batch_unrolls: int) -> bool:
    """Every seed's replay holds something and the ratio allows a batch now."""
    return (all(len(replay) for replay in self.replays) and
            self.limiter.can_sample(batch_unrolls * len(self.replays)))

  def update_priorities(self, ids, priorities) -> None:
    """New priorities of sampled `ids` (a Sample's, seed by seed with N seeds); those
    overwritten since are skipped."""
    priorities = np.asarray(priorities, np.float64)
    for replay, seed_ids, seed_priorities in zip(
        self.replays, np.split(np.asarray(ids), len(self.replays)),
        np.split(priorities, len(self.replays))):
      replay.update_priorities(seed_ids, seed_priorities)
    if priorities.size:
      self._priority_stats = {'replay/priority_mean': float(priorities.mean()),
                              'replay/priority_max': float(priorities.max())}

  def stats(self) -> Dict[str, float]:
    """'replay/size', and the mean and max of the last priority update if there was one."""
    return {'replay/size': float(self._num_stored()), **self._priority_stats}

  @property
  def fill(self) -> float:
    return self._num_stored() / sum(r.capacity for r in self.replays)

  def _num_stored(self) -> int:
    """Sequences held, in every seed's replay."""
    return sum(len(replay) for replay in self.replays)

  @property
  def saves_anything(self) -> bool:
    """The replays are kept with every checkpoint."""
    return True

  @staticmethod
  def _path(checkpoint_path: str, seed_index: int) -> str:
    """Seed 0's replay (the only one of a one-seed run) keeps the name it always had."""
    return (f'{checkpoint_path}.replay.npz' if seed_index == 0
            else f'{checkpoint_path}.seed_{seed_index}.replay.npz')

  def save(self, checkpoint_path: str) -> None:
    """Writes the replays next to a checkpoint (before it: see Checkpointer.save)."""
    for k, replay in enumerate(self.replays):
      replay.save(self._path(checkpoint_path, k))

  def restore(self, checkpoint_path: str) -> bool:
    paths = [self._path(checkpoint_path, k) for k in range(len(self.replays))]
    missing = [path for path in paths if not os.path.exists(path)]
    if missing:
      _log.warning('no replay saved with %s (%s): starting with empty replays',
                   checkpoint_path, ', '.join(missing))
      return False
    for replay, path in zip(self.replays, paths):
      replay.load(path)
    # Resume where a running limiter settles: samples lag inserts by the
    # minimum fill's worth, so the trainer samples at once and keeps the ratio.
    inserts = self._num_stored()
    lag = self.samples_per_insert * self.limiter.min_size_to_sample
    self.limiter.load_state_dict({
        'inserts': inserts,
        'samples': max(0, int(inserts * self.samples_per_insert - lag))})
    _log.info('replay restored: %d sequences', inserts)
    return True

  @staticmethod
  def prune(directory: str, keep_checkpoints) -> None:
    """Deletes replay files whose checkpoint the manager no longer keeps."""
    keep = tuple(f'{path}.' for path in keep_checkpoints)
    for path in glob.glob(os.path.join(directory, '*.replay.npz')):
      if not path.startswith(keep):  # ckpt-N.replay.npz and ckpt-N.seed_k.replay.npz.
        os.remove(path)
