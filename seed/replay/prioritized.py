"""Prioritized sequence replay (Schaul et al., 2016) as used by R2D2, in NumPy.

Items are whole sequences (dicts of arrays, possibly nested in dicts, tuples and
lists) kept by reference in a ring buffer of `capacity` slots: the replay never
copies or mutates them, so callers must not mutate an item after inserting it.

Sampling: i.i.d. with replacement, P(i) = p_i^alpha / sum_j p_j^alpha, with
importance weights w_i = (N P(i))^-beta / max_j w_j over the sampled batch
(N = len(replay)); that equals (min_j P(j) / P(i))^beta, in (0, 1].

Priority of new items: `insert(item)` without a priority uses the largest
priority seen so far, a running maximum over every priority given to `insert`
or applied by `update_priorities` (stale updates do not count), starting at 1.0.
It never decreases, so new sequences are sampled at least once soon.

Indices: `insert` and `sample` return insertion ids (0, 1, 2, ... over the life
of the buffer), not slots; id i lives in slot i % capacity until id i + capacity
overwrites it. `update_priorities` ignores ids whose slot was overwritten since
they were sampled, so a learner that is slow to report priorities cannot
re-prioritize a newer sequence with an old sequence's TD errors.

Persistence: `save(path)` writes `state_dict()` (items, raw priorities, ids, the
running max, the insert count, which gives the ring position, and the RNG state)
with np.savez to a temporary file in the same directory and renames it over
`path`, so a crash leaves either the old file or the new one. No pickle: item
structure is stored as JSON. Items are saved column by column (one array per
leaf, a row per slot) when they all share one structure, shapes and dtypes, as
SAC's transitions and R2D2's sequences do, so a million transitions make a few
zip entries rather than millions; mixed items fall back to one entry per leaf.
Leaves come back as np.ndarray (0-d for scalars). The exponents are not
restored: those of the constructor win, applied to the saved raw priorities, so
a resumed run may change them.
"""
import json
import os
import tempfile
import threading
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from seed.replay.sum_tree import SumTree

# 1: every leaf of every item its own entry. 2: adds 'item_layout', columnar or that.
_FORMAT_VERSION = 2
_COLUMNAR = 'columnar'
_PER_ITEM = 'per_item'


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


def _flatten(item, leaves: List[np.ndarray]):
  """JSON-able structure of `item` with leaves replaced by their index in `leaves`."""
  if isinstance(item, dict):
    if not all(isinstance(key, str) for key in item):
      raise TypeError(f'item dict keys must be str, got {list(item)}.')
    return {'d': [[key, _flatten(value, leaves)] for key, value in item.items()]}
  if isinstance(item, (tuple, list)):
    return {'t' if isinstance(item, tuple) else 'l': [_flatten(x, leaves) for x in item]}
  leaf = np.asarray(item)
  if leaf.dtype.hasobject:
    raise TypeError(f'item leaves must be numeric/bool/str arrays, got dtype {leaf.dtype}.')
  leaves.append(leaf)
  return len(leaves) - 1


def _unflatten(spec, leaves: List[np.ndarray]):
  if isinstance(spec, int):
    return leaves[spec]
  if 'd' in spec:
    return {key: _unflatten(value, leaves) for key, value in spec['d']}
  values = [_unflatten(x, leaves) for x in spec.get('t', spec.get('l'))]
  return tuple(values) if 't' in spec else values


def _num_leaves(spec) -> int:
  """How many leaves (saved entries or columns) an item of `spec` has."""
  if isinstance(spec, int):
    return 1
  if 'd' in spec:
    return sum(_num_leaves(value) for _, value in spec['d'])
  return sum(_num_leaves(x) for x in spec.get('t', spec.get('l')))


def _match(item, spec, kinds: List[Tuple[tuple, np.dtype]], columns: List[list]) -> bool:
  """Appends the leaves of `item` to `columns` while it matches `spec` and `kinds`.

  What `_flatten` would tell, without building a spec per item: `_columns` runs
  this on every stored item, a million for SAC. On a mismatch it returns False,
  having appended part of the item's leaves.
  """
  if isinstance(spec, int):
    if type(item) is np.ndarray:  # pylint: disable=unidiomatic-typecheck
      leaf = item  # The common case, and np.asarray's call is most of a leaf's cost.
    elif isinstance(item, (dict, tuple, list)):
      return False
    else:
      leaf = np.asarray(item)
    shape, dtype = kinds[spec]
    if leaf.shape != shape or leaf.dtype != dtype:
      return False
    columns[spec].append(leaf)
    return True
  if 'd' in spec:
    entries = spec['d']
    if not isinstance(item, dict) or len(item) != len(entries):
      return False
    for (key, value_spec), (item_key, value) in zip(entries, item.items()):
      if key != item_key or not _match(value, value_spec, kinds, columns):
        return False
    return True
  if 't' in spec:
    entries = spec['t']
    if not isinstance(item, tuple):
      return False
  else:
    entries = spec['l']
    if isinstance(item, tuple) or not isinstance(item, list):
      return False
  if len(item) != len(entries):
    return False
  for value, value_spec in zip(item, entries):
    if not _match(value, value_spec, kinds, columns):
      return False
  return True


# Stacking columns copies the data, so a replay bigger than this is saved per item
# (references, no copy): R2D2's Atari replay (3.4 GB) would otherwise need as much
# again in memory at every checkpoint. Small-item replays (SAC: 1M transitions of
# ~200 bytes) are the ones the per-item layout is slow for, and they fit.
COLUMNAR_MAX_BYTES = 512 * 2**20


def _columns(items: Sequence[Any]) -> Optional[Dict[str, np.ndarray]]:
  """The columnar layout of `items`, or None unless they all match leaf for leaf
  and fit in COLUMNAR_MAX_BYTES.

  Matching means the same structure (spec) and, per leaf, the same shape and
  dtype: np.stack would promote mixed dtypes and loading would then change them.
  """
  if not items:
    return None
  leaves: List[np.ndarray] = []
  spec = _flatten(items[0], leaves)
  if sum(leaf.nbytes for leaf in leaves) * len(items) > COLUMNAR_MAX_BYTES:
    return None
  kinds = [(leaf.shape, leaf.dtype) for leaf in leaves]
  columns: List[list] = [[] for _ in leaves]
  for item in items:
    if not _match(item, spec, kinds, columns):
      return None
  state = {'item_layout': np.array(_COLUMNAR), 'item_spec': np.array(json.dumps(spec))}
  for leaf_index, (column, (_, dtype)) in enumerate(zip(columns, kinds)):
    # Equal shapes and dtypes checked: np.array stacks them as np.stack would, faster.
    state[f'column_{leaf_index}'] = np.array(column, dtype)
  return state


def _per_item(items: Sequence[Any]) -> Dict[str, np.ndarray]:
  """The per-item layout (format 1's): an entry per leaf, the leaves themselves."""
  state = {'item_layout': np.array(_PER_ITEM)}
  specs = []
  for slot, item in enumerate(items):
    leaves: List[np.ndarray] = []
    specs.append(_flatten(item, leaves))
    for leaf_index, leaf in enumerate(leaves):
      state[f'item_{slot}_{leaf_index}'] = leaf
  state['item_specs'] = np.array(json.dumps(specs))
  return state


def _items_from_columns(state: Mapping[str, np.ndarray], num_stored: int) -> List[Any]:
  """Rebuilds the items of the columnar layout, each leaf a view of its row.

  Views, not copies: rows of a column never overlap, so each item still owns
  its data alone, and `insert` only rebinds a slot, never writes into a leaf, so
  replacing an item leaves every other item (and batches sampled before) as
  they were. A column's buffer lives until no item or batch holds a row of it,
  that is `capacity` inserts at most after loading, and is no larger than the
  loaded data itself; meanwhile the rows of replaced items are dead weight. In
  exchange loading makes no per-leaf allocation and is quick.
  """
  spec = json.loads(str(state['item_spec']))
  columns = [np.asarray(state[f'column_{leaf_index}'])
             for leaf_index in range(_num_leaves(spec))]
  for leaf_index, column in enumerate(columns):
    if column.shape[:1] != (num_stored,):
      raise ValueError(f'replay column_{leaf_index} has shape {column.shape}, expected '
                       f'{num_stored} rows (one per stored item).')
  if not columns:
    return [_unflatten(spec, []) for _ in range(num_stored)]
  # Iterating a column yields row views, except that a 1-D column yields numpy
  # scalars: index those with `...` to keep the 0-d arrays that leaves are.
  rows = [list(column) if column.ndim > 1 else [column[i, ...] for i in range(num_stored)]
          for column in columns]
  return [_unflatten(spec, leaves) for leaves in zip(*rows)]


def _items_from_entries(state: Mapping[str, np.ndarray], num_stored: int) -> List[Any]:
  """Rebuilds the items of the per-item layout (that of format 1 too)."""
  specs = json.loads(str(state['item_specs']))
  if len(specs) != num_stored:
    raise ValueError(f'replay has {len(specs)} item specs, expected {num_stored}.')
  return [_unflatten(spec, [np.asarray(state[f'item_{slot}_{leaf_index}'])
                            for leaf_index in range(_num_leaves(spec))])
          for slot, spec in enumerate(specs)]


def _check_priorities(priorities: np.ndarray) -> None:
  bad = ~np.isfinite(priorities) | (priorities < 0)
  if bad.any():
    raise ValueError(f'priorities must be finite and >= 0, got {priorities[bad][:5]}.')


class PrioritizedReplay:
  """Thread-safe prioritized ring buffer of sequences; see the module docstring."""

  def __init__(self, capacity: int, priority_exponent: float = 0.9,
               importance_exponent: float = 0.6, seed: int = 0):
    if not isinstance(capacity, (int, np.integer)) or capacity < 1:
      raise ValueError(f'capacity must be an int >= 1, got {capacity!r}.')
    if not priority_exponent >= 0:
      raise ValueError(f'priority_exponent must be >= 0, got {priority_exponent}.')
    if not importance_exponent >= 0:
      raise ValueError(f'importance_exponent must be >= 0, got {importance_exponent}.')
    self._capacity = int(capacity)
    self._alpha = float(priority_exponent)
    self._beta = float(importance_exponent)
    self._lock = threading.Lock()
    self._rng = np.random.default_rng(seed)
    self._tree = SumTree(self._capacity)  # Holds p^alpha.
    self._items: List[Any] = [None] * self._capacity
    self._priorities = np.zeros(self._capacity, np.float64)  # Raw p, for save and max.
    self._ids = np.full(self._capacity, -1, np.int64)  # Insertion id per slot; -1 empty.
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

  def __len__(self) -> int:
    with self._lock:
      return min(self._num_inserts, self._capacity)

  def insert(self, item: Any, priority: Optional[float] = None) -> int:
    """Adds `item`, overwriting the oldest one when full; returns its id.

    Raises:
      TypeError: if `item` could not be saved (non-str dict keys, object leaves);
        checked now rather than at the next checkpoint.
      ValueError: on a negative or non-finite priority.
    """
    _flatten(item, [])
    with self._lock:
      if priority is None:
        priority = self._max_priority
      priority = float(priority)
      _check_priorities(np.array([priority]))
      item_id = self._num_inserts
      slot = item_id % self._capacity
      self._items[slot] = item
      self._ids[slot] = item_id
      self._priorities[slot] = priority
      self._tree.set([slot], self._sampling_weight(np.array([priority])))
      self._max_priority = max(self._max_priority, priority)
      self._num_inserts += 1
      return item_id

  def sample(self, batch_size: int) -> Tuple[np.ndarray, List[Any], np.ndarray]:
    """Draws `batch_size` items i.i.d. with replacement.

    Returns:
      (ids int64 [batch_size], items (references, in the same order),
       importance_weights float32 [batch_size], max 1).

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
      items = [self._items[slot] for slot in slots]
      ids = self._ids[slots].copy()
    # (N P_i)^-beta / max_j (N P_j)^-beta: N cancels and the max is at min_j P_j.
    weights = (probabilities.min() / probabilities) ** self._beta
    return ids, items, weights.astype(np.float32)

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
      self._tree.set(slots, self._sampling_weight(priorities))
      self._max_priority = max(self._max_priority, float(priorities.max()))
      return int(live.sum())

  def priorities(self, ids) -> np.ndarray:
    """Raw priorities of `ids`, NaN for ids no longer (or never) in the buffer."""
    ids = np.asarray(ids, np.int64)
    with self._lock:
      slots = ids % self._capacity
      live = (ids >= 0) & (self._ids[slots] == ids)
      return np.where(live, self._priorities[slots], np.nan)

  def state_dict(self) -> Dict[str, np.ndarray]:
    """Everything needed to restore the buffer, as a flat dict of arrays.

    The items take one of two layouts, named by 'item_layout':
      'columnar', when every stored item has the same structure and, leaf by
        leaf, the same shape and dtype: one JSON spec, 'item_spec', and per leaf
        one array 'column_{leaf}' [num_stored, ...] whose row r is slot r's leaf.
        The columns are copies, as large as the stored data.
      'per_item' otherwise (format 1's): 'item_specs', a JSON list of one spec
        per slot, and the leaves themselves (no copies) as 'item_{slot}_{leaf}'.
    """
    with self._lock:
      num_stored = min(self._num_inserts, self._capacity)
      items = self._items[:num_stored]
      state = {
          'format_version': np.array(_FORMAT_VERSION, np.int64),
          'capacity': np.array(self._capacity, np.int64),
          'num_inserts': np.array(self._num_inserts, np.int64),
          'max_priority': np.array(self._max_priority, np.float64),
          'priorities': self._priorities.copy(),
          'ids': self._ids.copy(),
          'rng_state': np.array(json.dumps(self._rng.bit_generator.state)),
      }
    # Items are immutable references, and `items` is a snapshot of the slots:
    # flatten and stack them outside the lock, which a million items would hold
    # for seconds, stalling inserts and samples.
    columns = _columns(items)
    state.update(columns if columns is not None else _per_item(items))
    return state

  def load_state_dict(self, state: Mapping[str, np.ndarray]) -> None:
    """Replaces the whole content with `state` from `state_dict` (possibly via `load`).

    Also reads format 1, whose items are all in the per-item layout.
    """
    version = int(state['format_version'])
    if version not in (1, _FORMAT_VERSION):
      raise ValueError(f'replay format_version {version} is not supported, expected '
                       f'{_FORMAT_VERSION} (or 1).')
    if int(state['capacity']) != self._capacity:
      raise ValueError(f'saved replay has capacity {int(state["capacity"])}, this one has '
                       f'{self._capacity}; they must match.')
    layout = str(state['item_layout']) if version >= 2 else _PER_ITEM
    num_stored = min(int(state['num_inserts']), self._capacity)
    if layout == _COLUMNAR:
      items = _items_from_columns(state, num_stored)
    elif layout == _PER_ITEM:
      items = _items_from_entries(state, num_stored)
    else:
      raise ValueError(f'unknown replay item_layout {layout!r}, expected {_COLUMNAR!r} '
                       f'or {_PER_ITEM!r}.')
    items += [None] * (self._capacity - num_stored)
    priorities = np.asarray(state['priorities'], np.float64).copy()
    _check_priorities(priorities)
    tree = SumTree(self._capacity)
    tree.set(np.arange(self._capacity), self._sampling_weight(priorities))
    rng = np.random.default_rng()
    rng.bit_generator.state = json.loads(str(state['rng_state']))
    with self._lock:
      self._items = items
      self._priorities = priorities
      self._ids = np.asarray(state['ids'], np.int64).copy()
      self._num_inserts = int(state['num_inserts'])
      self._max_priority = float(state['max_priority'])
      self._tree = tree
      self._rng = rng

  def save(self, path: str) -> None:
    """Writes `state_dict()` to `path` (.npz) atomically: temp file, then os.replace."""
    state = self.state_dict()  # Items are immutable references: write outside the lock.
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp_path = tempfile.mkstemp(prefix=os.path.basename(path) + '.', suffix='.tmp',
                                    dir=directory)
    try:
      with os.fdopen(fd, 'wb') as f:  # A file object: np.savez adds no '.npz' suffix.
        np.savez(f, **state)
        f.flush()
        os.fsync(f.fileno())
      os.replace(tmp_path, path)
    except BaseException:
      if os.path.exists(tmp_path):
        os.unlink(tmp_path)
      raise

  def load(self, path: str) -> None:
    """Restores what `save(path)` wrote."""
    with np.load(path, allow_pickle=False) as data:
      state = {name: data[name] for name in data.files}
    self.load_state_dict(state)
