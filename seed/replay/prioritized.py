"""Prioritized sequence replay (Schaul et al., 2016) as used by R2D2, in NumPy.

Items are unrolls (seed.types.Unroll), copied into a preallocated columnar ring
of `capacity` slots (seed.replay.columns): one array per field, a row per slot,
every unroll of one structure, shapes and dtypes, which the first insert fixes.
Stacked-frame observations are kept as single frames, compressed
(`compact_observations`, `observation_compression`). `sample` returns a
seed.types.Sample whose data are freshly built [B, ...] arrays.

Sampling: i.i.d. with replacement, P(i) = p_i^alpha / sum_j p_j^alpha, with
importance weights w_i = (N P(i))^-beta / max_j w_j over the sampled batch
(N = len(replay)); that equals (min_j P(j) / P(i))^beta, in (0, 1].

Priority of new items: `insert(unroll)` without a priority uses the largest
priority seen so far, a running maximum over every priority given to `insert`
or applied by `update_priorities` (stale updates do not count), starting at 1.0.
It never decreases, so new sequences are sampled at least once soon. With
`unvisited_priority='contextual'` (Reactor's) such a sequence has no priority of
its own until a train step measures one; until then it is sampled by an estimate
from the measured priorities of its env's sequences nearest in time
(seed.replay.contextual_priority), recomputed for an env's whole stream whenever
one of its sequences is inserted, overwritten or measured.

Uniform mixture (Reactor's): with `uniform_sampling_probability` eps, each draw
is uniform over the stored sequences with probability eps and proportional to
p^alpha otherwise, and P(i) in the importance weights is that mixture's.

Indices: `insert` and `sample` return insertion ids (0, 1, 2, ... over the life
of the buffer), not slots; id i lives in slot i % capacity until id i + capacity
overwrites it. `update_priorities` ignores ids whose slot was overwritten since
they were sampled, so a learner that is slow to report priorities cannot
re-prioritize a newer sequence with an old sequence's TD errors.

Persistence (format 3): `save(path)` writes the raw priorities (and which were
measured, and each slot's env), ids, the running
max, the insert count (which gives the ring position), the RNG state, the layout
(JSON) and the columns, one zip entry each, to a temporary file in the same
directory and renames it over `path`, so a crash leaves either the old file or
the new one. No pickle. Only a snapshot of the rows is taken under the lock; the
writing happens outside it. A file of another storage (codec, compaction) is
converted on load to this replay's. Formats 1 and 2 (dict items) are refused
with a message saying what to do. The exponents are not restored: those of the
constructor win, applied to the saved raw priorities, so a resumed run may
change them.
"""
import json
import threading
from typing import Any, Dict, Iterator, Mapping, Optional, Tuple

import numpy as np

from seed import types
from seed.replay import columns as columns_lib
from seed.replay import contextual_priority
from seed.replay import frames as frames_lib
from seed.replay import npz
from seed.replay.sum_tree import SumTree

# 1, 2: dict items (entries per leaf, or columns of leaves). 3: the columnar ring.
_FORMAT_VERSION = 3
_DICT_ITEM_FORMATS = (1, 2)

UNVISITED_PRIORITIES = ('max', 'contextual')


def sequence_priority(abs_td_errors, eta: float = 0.9, mask=None, axis: int = 0) -> np.ndarray:
  """R2D2's sequence priority eta * max_t |delta_t| + (1 - eta) * mean_t |delta_t|.

  Args:
    abs_td_errors: TD errors, time along `axis` (time-major [T, B] by default);
      absolute values are taken, so signed errors work too.
    eta: weight of the max, in [0, 1].
    mask: optional bool array of the same shape; only True steps count (e.g. the
      valid_mask of nstep targets). A sequence with no valid step gets priority 0.
    axis: the time axis.

  Returns:
    float64 priorities with `axis` removed ([B] for [T, B]).
  """
  if not 0.0 <= eta <= 1.0:
    raise ValueError(f'eta must be in [0, 1], got {eta}.')
  errors = np.abs(np.asarray(abs_td_errors, np.float64))
  if mask is None:
    mask = np.ones(errors.shape, bool)
  mask = np.asarray(mask, bool)
  if mask.shape != errors.shape:
    raise ValueError(f'mask has shape {mask.shape}, expected {errors.shape}.')
  # 0 is neutral for a max of absolute values, so masked steps can be zeroed.
  errors = np.where(mask, errors, 0.0)
  count = mask.sum(axis=axis)
  mean = errors.sum(axis=axis) / np.maximum(count, 1)
  return eta * errors.max(axis=axis, initial=0.0) + (1.0 - eta) * mean


def _check_priorities(priorities: np.ndarray) -> None:
  bad = ~np.isfinite(priorities) | (priorities < 0)
  if bad.any():
    raise ValueError(f'priorities must be finite and >= 0, got {priorities[bad][:5]}.')



class PrioritizedReplay:
  """Thread-safe prioritized ring buffer of unrolls; see the module docstring."""

  def __init__(self, capacity: int, priority_exponent: float = 0.9,
               importance_exponent: float = 0.6, seed: int = 0, *,
               compact_observations: bool = True,
               observation_compression: Optional[str] = 'zstd',
               unvisited_priority: str = 'max', uniform_sampling_probability: float = 0.0):
    if not isinstance(capacity, (int, np.integer)) or capacity < 1:
      raise ValueError(f'capacity must be an int >= 1, got {capacity!r}.')
    if not priority_exponent >= 0:
      raise ValueError(f'priority_exponent must be >= 0, got {priority_exponent}.')
    if not importance_exponent >= 0:
      raise ValueError(f'importance_exponent must be >= 0, got {importance_exponent}.')
    if unvisited_priority not in UNVISITED_PRIORITIES:
      raise ValueError(f'unvisited_priority must be one of {UNVISITED_PRIORITIES}, got '
                       f'{unvisited_priority!r}.')
    if not 0.0 <= uniform_sampling_probability <= 1.0:
      raise ValueError('uniform_sampling_probability must be in [0, 1], got '
                       f'{uniform_sampling_probability!r}.')
    if compact_observations:
      frames_lib.check_codec(observation_compression)  # Now, not at the first insert.
    self._capacity = int(capacity)
    self._alpha = float(priority_exponent)
    self._beta = float(importance_exponent)
    self._contextual = unvisited_priority == 'contextual'
    self._uniform_probability = float(uniform_sampling_probability)
    self._storage = columns_lib.Storage(bool(compact_observations), observation_compression)
    self._lock = threading.Lock()
    self._rng = np.random.default_rng(seed)
    self._tree = SumTree(self._capacity)  # Holds p^alpha.
    self._ring: Optional[columns_lib.UnrollRing] = None  # Laid out by the first insert.
    self._priorities = np.zeros(self._capacity, np.float64)  # Raw p, for save and max.
    self._ids = np.full(self._capacity, -1, np.int64)  # Insertion id per slot; -1 empty.
    # Whether a slot's priority was given or measured (else it is an estimate), and
    # the env it came from (its stream; -1 when unknown).
    self._assigned = np.zeros(self._capacity, bool)
    self._env_ids = np.full(self._capacity, -1, np.int64)
    self._num_inserts = 0
    self._max_priority = 1.0

  def _sampling_weight(self, priorities: np.ndarray) -> np.ndarray:
    # p^alpha, except that priority 0 stays 0 even for alpha = 0 (uniform replay),
    # where 0^0 = 1 would make empty slots samplable.
    priorities = np.asarray(priorities, np.float64)
    return np.where(priorities > 0, priorities ** self._alpha, 0.0)

  @property
  def capacity(self) -> int:
    """Number of slots (sequences) in the ring."""
    return self._capacity

  @property
  def max_priority(self) -> float:
    """The priority a new item gets when inserted without one."""
    with self._lock:
      return self._max_priority

  @property
  def layout(self) -> Optional[columns_lib.Layout]:
    """The fields every unroll has, with shapes and dtypes; None before the first insert."""
    ring = self._ring
    return None if ring is None else ring.layout

  @property
  def nbytes(self) -> int:
    """Bytes the replay holds: columns (frames included), priorities, ids, sum tree."""
    with self._lock:
      ring_bytes = 0 if self._ring is None else self._ring.nbytes
      return ring_bytes + self._priorities.nbytes + self._ids.nbytes + self._tree.nbytes

  def __len__(self) -> int:
    with self._lock:
      return min(self._num_inserts, self._capacity)

  def _ring_for(self, unroll: types.Unroll) -> columns_lib.UnrollRing:
    ring = self._ring
    if ring is None:
      layout = columns_lib.Layout.of(unroll)
      with self._lock:
        if self._ring is None:
          self._ring = columns_lib.UnrollRing(layout, self._capacity, self._storage)
        ring = self._ring
    return ring

  def insert(self, unroll: types.Unroll, priority: Optional[float] = None) -> int:
    """Copies `unroll` in, overwriting the oldest one when full; returns its id.

    Raises:
      TypeError: if `unroll` is no seed.types.Unroll, or has non-numeric arrays.
      ValueError: if it differs from the first unroll in structure, shape or dtype
        (the message names the field), or on a negative or non-finite priority.
    """
    if priority is not None:
      _check_priorities(np.array([float(priority)]))
    while True:
      ring = self._ring_for(unroll)
      rows = ring.encode(unroll)  # Checks and compresses outside the lock.
      with self._lock:
        if ring is not self._ring:
          continue  # A load replaced the ring meanwhile: encode for the new one.
        estimated = priority is None and self._contextual
        if priority is None:
          priority = self._max_priority
        item_id = self._num_inserts
        slot = item_id % self._capacity
        ring.write(slot, rows)
        streams = {int(self._env_ids[slot]), int(unroll.env_id)}  # The overwritten one's too.
        self._ids[slot] = item_id
        self._assigned[slot] = not estimated
        self._env_ids[slot] = int(unroll.env_id)
        self._priorities[slot] = priority
        self._tree.set([slot], self._sampling_weight(np.array([priority])))
        if not estimated:
          self._max_priority = max(self._max_priority, float(priority))
        self._num_inserts += 1
        if self._contextual:
          self._estimate_streams(streams)
        return item_id

  def sample(self, batch_size: int) -> types.Sample:
    """Draws `batch_size` unrolls i.i.d. with replacement.

    Returns:
      Sample(ids int64 [batch_size], data: the unrolls batched ([B, T + 1, ...]
      steps, [B, ...] core state, [B] env ids), weights float32 [batch_size], max 1).

    Raises:
      ValueError: if batch_size < 1, the replay is empty or all priorities are 0.
    """
    if not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
      raise ValueError(f'batch_size must be an int >= 1, got {batch_size!r}.')
    with self._lock:
      if self._num_inserts == 0:
        raise ValueError('cannot sample from an empty replay.')
      slots = self._tree.sample(self._rng.random(batch_size))
      probabilities = self._tree.get(slots) / self._tree.total
      if self._uniform_probability > 0:
        num_stored = min(self._num_inserts, self._capacity)  # Slots 0..num_stored-1.
        uniform = self._rng.random(batch_size) < self._uniform_probability
        slots[uniform] = self._rng.integers(0, num_stored, int(uniform.sum()))
        probabilities = (self._uniform_probability / num_stored
                         + (1 - self._uniform_probability)
                         * self._tree.get(slots) / self._tree.total)
      ids = self._ids[slots].copy()
      ring = self._ring
      gathered = ring.gather(slots)
    # Frames are decompressed and their stacks rebuilt outside the lock.
    data = ring.finish(gathered)
    # (N P_i)^-beta / max_j (N P_j)^-beta: N cancels and the max is at min_j P_j.
    weights = (probabilities.min() / probabilities) ** self._beta
    return types.Sample(ids=ids, data=data, weights=weights.astype(np.float32))

  def update_priorities(self, ids, priorities) -> int:
    """Sets the priorities of `ids` still in the buffer; returns how many were applied.

    Ids overwritten since they were sampled are skipped; for a repeated id the
    last priority wins.

    Raises:
      ValueError: on shapes that differ, an id never inserted, or a negative or
        non-finite priority.
    """
    ids = np.asarray(ids)
    priorities = np.asarray(priorities, np.float64)
    if ids.ndim != 1 or ids.shape != priorities.shape:
      raise ValueError(f'ids {ids.shape} and priorities {priorities.shape} must be equal 1-D.')
    if ids.size and ids.dtype.kind not in 'iu':
      raise ValueError(f'ids must be integers, got dtype {ids.dtype}.')
    ids = ids.astype(np.int64)
    _check_priorities(priorities)
    with self._lock:
      bad = (ids < 0) | (ids >= self._num_inserts)
      if bad.any():
        raise ValueError(f'ids must be in [0, {self._num_inserts}) (ids inserted so far), '
                         f'got {ids[bad][:5]}.')
      slots = ids % self._capacity
      live = self._ids[slots] == ids
      if not live.any():
        return 0
      slots, priorities = slots[live], priorities[live]
      last = slots.size - 1 - np.unique(slots[::-1], return_index=True)[1]
      slots, priorities = slots[last], priorities[last]
      self._priorities[slots] = priorities
      self._assigned[slots] = True
      self._tree.set(slots, self._sampling_weight(priorities))
      self._max_priority = max(self._max_priority, float(priorities.max()))
      if self._contextual:
        self._estimate_streams(set(self._env_ids[slots].tolist()))
      return int(live.sum())

  def _estimate_streams(self, env_ids) -> None:
    """Re-estimates the unassigned priorities of each env's stream (under the lock)."""
    for env_id in env_ids:
      if env_id < 0:
        continue  # Slots of no known stream (empty, or loaded from an older file).
      slots = np.flatnonzero((self._env_ids == env_id) & (self._ids >= 0))
      slots = slots[np.argsort(self._ids[slots])]  # Time order: ids grow with time per env.
      unassigned = ~self._assigned[slots]
      if not unassigned.any():
        continue
      estimates = contextual_priority.contextual_priorities(
          self._assigned[slots], self._priorities[slots], fallback=self._max_priority)
      # Only the cells near a change move: the sum tree is the costly part.
      changed = unassigned & (estimates != self._priorities[slots])
      slots, estimates = slots[changed], estimates[changed]
      self._priorities[slots] = estimates
      self._tree.set(slots, self._sampling_weight(estimates))

  def priorities(self, ids) -> np.ndarray:
    """Raw priorities of `ids` (estimates where unmeasured, with 'contextual'), NaN for
    ids no longer (or never) in the buffer."""
    ids = np.asarray(ids, np.int64)
    with self._lock:
      slots = ids % self._capacity
      live = (ids >= 0) & (self._ids[slots] == ids)
      return np.where(live, self._priorities[slots], np.nan)

  def _entries(self) -> Iterator[Tuple[str, Any]]:
    """What `save` writes, in order: a snapshot taken under the lock, built outside it."""
    with self._lock:
      num_stored = min(self._num_inserts, self._capacity)
      meta = {
          'format_version': np.array(_FORMAT_VERSION, np.int64),
          'capacity': np.array(self._capacity, np.int64),
          'num_inserts': np.array(self._num_inserts, np.int64),
          'max_priority': np.array(self._max_priority, np.float64),
          'priorities': self._priorities.copy(),
          'ids': self._ids.copy(),
          'assigned': self._assigned.copy(),
          'env_ids': self._env_ids.copy(),
          'rng_state': np.array(json.dumps(self._rng.bit_generator.state)),
      }
      ring = self._ring
      snapshot = None if ring is None else ring.snapshot(num_stored)
    yield from meta.items()
    if ring is not None:
      yield from ring.entries(snapshot)

  def state_dict(self) -> Dict[str, np.ndarray]:
    """Everything `save` writes, as a flat dict of arrays (frame blobs joined)."""
    return {name: (np.frombuffer(b''.join(value.parts), np.uint8)
                   if isinstance(value, columns_lib.Blobs) else value)
            for name, value in self._entries()}

  def load_state_dict(self, state: Mapping[str, np.ndarray], source: str = 'replay state'
                      ) -> None:
    """Replaces the whole content with `state` (a `state_dict`, or the np.load of a file).

    Raises:
      ValueError: on another format or capacity, or inconsistent entries; the
        replay is then left as it was.
    """
    if 'format_version' not in state:
      raise ValueError(f'{source} is no replay: it has no format_version entry.')
    version = int(state['format_version'])
    if version in _DICT_ITEM_FORMATS:
      raise ValueError(
          f'{source} is replay format {version}, whose items are dicts (written before the '
          f'columnar replay); this code reads format {_FORMAT_VERSION} only and cannot '
          'convert it: those items have no env ids and keep acting parameters (epsilon, '
          'the evaluation flag) in their core state. Delete the file to resume with an '
          'empty replay (the learner refills it), or resume with --nocheckpoint_replay.')
    if version != _FORMAT_VERSION:
      raise ValueError(f'{source} has replay format_version {version}, which this code does '
                       f'not read (it reads {_FORMAT_VERSION}); was it written by a newer seed?')
    if int(state['capacity']) != self._capacity:
      raise ValueError(f'saved replay has capacity {int(state["capacity"])}, this one has '
                       f'{self._capacity}; they must match.')
    num_inserts = int(state['num_inserts'])
    num_stored = min(num_inserts, self._capacity)
    priorities = np.asarray(state['priorities'], np.float64).copy()
    ids = np.asarray(state['ids'], np.int64).copy()
    # Files from before the contextual estimate hold measured priorities only.
    assigned = np.asarray(state['assigned'], bool).copy() if 'assigned' in state else ids >= 0
    env_ids = (np.asarray(state['env_ids'], np.int64).copy() if 'env_ids' in state
               else np.full(self._capacity, -1, np.int64))
    for name, array in (('priorities', priorities), ('ids', ids), ('assigned', assigned),
                        ('env_ids', env_ids)):
      if array.shape != (self._capacity,):
        raise ValueError(f'{source}: {name} has shape {array.shape}, expected '
                         f'({self._capacity},).')
    _check_priorities(priorities)
    ring = None
    if 'layout' in state:
      ring = columns_lib.UnrollRing.from_state(state, self._capacity, num_stored,
                                               self._storage)
    elif num_stored:
      raise ValueError(f'{source} holds {num_stored} unrolls but no layout: it is corrupt.')
    tree = SumTree(self._capacity)
    tree.set(np.arange(self._capacity), self._sampling_weight(priorities))
    rng = np.random.default_rng()
    rng.bit_generator.state = json.loads(str(state['rng_state']))
    with self._lock:
      self._ring = ring
      self._priorities = priorities
      self._ids = ids
      self._assigned = assigned
      self._env_ids = env_ids
      self._num_inserts = num_inserts
      self._max_priority = float(state['max_priority'])
      self._tree = tree
      self._rng = rng

  def save(self, path: str) -> None:
    """Writes the replay to `path` (.npz) atomically, column by column; see npz."""
    npz.write_atomically(path, self._entries())

  def load(self, path: str) -> None:
    """Restores what `save(path)` wrote."""
    with np.load(path, allow_pickle=False) as data:
      self.load_state_dict(data, source=path)
