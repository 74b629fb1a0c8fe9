"""A preallocated ring of unrolls: one NumPy array per field, one row per slot.

The first unroll fixes the layout: its fields (`steps.<field>`,
`policy_outputs.<name>`, `core_state.<i>`, `env_id`), each with one shape and
dtype per unroll. Every column is allocated for `capacity` rows at once; `write`
fills the row of a slot, and a batch is read by fancy indexing straight into
[B, ...] arrays, with no object per item and no list to stack.

One column may be stored otherwise: stacked frames (uint8 `steps.observation` of
[T + 1, S, H, W], with `compact_observations`) go into a FrameColumn, which keeps
per slot a bool row (which steps keep their whole stack, see seed.replay.frames)
and the slot's pool of single frames, compressed, as one bytes object: its size
depends on the data, so it cannot be a row of a fixed array.

Reads are split for the replay's lock: `gather` copies rows and takes the (immutable)
frame blobs under it; `finish` decompresses and rebuilds the stacks outside it.
"""
import concurrent.futures
import json
import os
import sys
import threading
from typing import Any, Iterator, List, Mapping, NamedTuple, Optional, Sequence, Tuple

import numpy as np

from seed import types
from seed.replay import frames as frames_lib

ARRAY = 'array'
FRAMES = 'frames'
_OBSERVATION = 'steps.observation'

# Threads that decode a sampled batch of frames (8 rows at least each).
DECODE_THREADS = min(4, os.cpu_count() or 1)
_pool_lock = threading.Lock()
_pool: Optional[concurrent.futures.ThreadPoolExecutor] = None


def _decode_pool() -> concurrent.futures.ThreadPoolExecutor:
  global _pool  # pylint: disable=global-statement
  with _pool_lock:
    if _pool is None:
      _pool = concurrent.futures.ThreadPoolExecutor(DECODE_THREADS,
                                                    thread_name_prefix='replay-decode')
    return _pool


class Field(NamedTuple):
  """One column: its name and the shape and dtype of one unroll's value."""
  name: str
  shape: Tuple[int, ...]
  dtype: np.dtype


class Storage(NamedTuple):
  """How observations are kept; see ReplayInput for the options."""
  compact_observations: bool = True
  observation_compression: Optional[str] = 'zstd'


class Layout(NamedTuple):
  """The structure every unroll of a replay shares, fixed by the first one."""
  output_names: Tuple[str, ...]
  num_core_state: int
  fields: Tuple[Field, ...]

  @classmethod
  def of(cls, unroll: types.Unroll) -> 'Layout':
    """The layout of `unroll`."""
    _check_type(unroll)
    names = tuple(unroll.steps.policy_outputs)
    fields = []
    for name, value in _named_values(unroll, names, len(unroll.core_state)):
      value = np.asarray(value)
      if value.dtype.kind not in 'biufc':
        raise TypeError(f'unroll field {name} has dtype {value.dtype}; the replay keeps '
                        'numeric and bool arrays only.')
      fields.append(Field(name, value.shape, value.dtype))
    return cls(names, len(unroll.core_state), tuple(fields))

  def values(self, unroll: types.Unroll) -> List[np.ndarray]:
    """The arrays of `unroll` in field order, checked against this layout."""
    _check_type(unroll)
    names = unroll.steps.policy_outputs
    if set(names) != set(self.output_names):
      raise ValueError(f'unroll policy_outputs are {sorted(names)}, expected '
                       f'{sorted(self.output_names)} (fixed by the first unroll inserted).')
    if len(unroll.core_state) != self.num_core_state:
      raise ValueError(f'unroll core_state has {len(unroll.core_state)} parts, expected '
                       f'{self.num_core_state} (fixed by the first unroll inserted).')
    values = []
    for field, (_, value) in zip(self.fields,
                                 _named_values(unroll, self.output_names, self.num_core_state)):
      value = np.asarray(value)
      if value.shape != field.shape or value.dtype != field.dtype:
        raise ValueError(f'unroll field {field.name} has shape {value.shape} dtype '
                         f'{value.dtype}, expected shape {field.shape} dtype {field.dtype} '
                         '(all unrolls in a replay share the first one\'s shapes and dtypes).')
      values.append(value)
    return values

  def unroll(self, arrays: Sequence[np.ndarray]) -> types.Unroll:
    """The Unroll whose arrays, in field order, are `arrays` (one unroll or a batch)."""
    num_steps, num_outputs = len(types.STEP_FIELDS), len(self.output_names)
    outputs = dict(zip(self.output_names, arrays[num_steps:num_steps + num_outputs]))
    core_state = tuple(arrays[num_steps + num_outputs:-1])
    return types.Unroll(steps=types.Steps(*arrays[:num_steps], policy_outputs=outputs),
                        core_state=core_state, env_id=arrays[-1])


def _check_type(unroll) -> None:
  if not isinstance(unroll, types.Unroll) or not isinstance(unroll.steps, types.Steps):
    raise TypeError(f'the replay stores seed.types.Unroll items, got {type(unroll).__name__}.')


def _named_values(unroll: types.Unroll, output_names, num_core_state):
  steps = unroll.steps
  named = [(f'steps.{name}', getattr(steps, name)) for name in types.STEP_FIELDS]
  named += [(f'policy_outputs.{name}', steps.policy_outputs[name]) for name in output_names]
  named += [(f'core_state.{i}', unroll.core_state[i]) for i in range(num_core_state)]
  return named + [('env_id', unroll.env_id)]


class Blobs(NamedTuple):
  """Byte strings to be saved end to end as one uint8 array, without joining them."""
  parts: Sequence[bytes]

  @property
  def nbytes(self) -> int:
    return sum(len(part) for part in self.parts)


class ArrayColumn:
  """A field kept as it comes: rows of one [capacity, ...] array."""

  def __init__(self, field: Field, capacity: int):
    self.field = field
    self.storage = (ARRAY, None)
    self.array = np.zeros((capacity,) + field.shape, field.dtype)

  def encode(self, value: np.ndarray) -> np.ndarray:
    return value

  def write(self, slot: int, row: np.ndarray) -> None:
    self.array[slot] = row

  def gather(self, slots: np.ndarray) -> np.ndarray:
    return self.array[slots]

  def finish(self, gathered: np.ndarray) -> np.ndarray:
    return gathered

  @property
  def nbytes(self) -> int:
    return self.array.nbytes

  def snapshot(self, num_stored: int) -> np.ndarray:
    return self.array[:num_stored].copy()

  def entries(self, key: str, snapshot: np.ndarray) -> Iterator[Tuple[str, Any]]:
    yield key, snapshot

  def load(self, key: str, state: Mapping[str, np.ndarray], num_stored: int) -> None:
    rows = np.asarray(state[key])
    _check_rows(key, rows, (num_stored,) + self.field.shape, self.field.dtype)
    if num_stored == self.array.shape[0] and isinstance(state, np.lib.npyio.NpzFile):
      self.array = rows  # Read fresh from a file: adopt it rather than copy it.
    else:
      self.array[:num_stored] = rows


class FrameColumn:
  """Stacked frames [T + 1, S, H, W] kept once each, per slot a (compressed) frame pool."""

  def __init__(self, field: Field, capacity: int, codec: Optional[str]):
    frames_lib.check_codec(codec)
    self.field = field
    self.storage = (FRAMES, codec)
    self.codec = codec
    self.full = np.zeros((capacity, field.shape[0]), bool)
    self.blobs: List[bytes] = [b''] * capacity
    self._blob_bytes = 0

  def encode(self, value: np.ndarray) -> Tuple[np.ndarray, bytes]:
    frames, full = frames_lib.split_stacks(value)
    return full, frames_lib.compress(frames.reshape(-1).data, self.codec)

  def write(self, slot: int, row: Tuple[np.ndarray, bytes]) -> None:
    full, blob = row
    self.full[slot] = full
    self._blob_bytes += sys.getsizeof(blob) - sys.getsizeof(self.blobs[slot])
    self.blobs[slot] = blob

  def gather(self, slots: np.ndarray) -> Tuple[np.ndarray, List[bytes]]:
    return self.full[slots], [self.blobs[slot] for slot in slots]

  def finish(self, gathered: Tuple[np.ndarray, List[bytes]]) -> np.ndarray:
    """Stacks [B, T + 1, S, H, W], the rows decoded in DECODE_THREADS threads.

    zstd and np.take let go of the GIL; measured on 2 idle cores, a batch of 64
    Pong sequences took 21 ms in 2 threads, 35 ms in one (as long as stacking
    the old replay's items took).
    """
    full, blobs = gathered
    out = np.empty((len(blobs),) + self.field.shape, self.field.dtype)
    indices = frames_lib.stack_indices(full, self.field.shape[1])
    parts = np.array_split(np.arange(len(blobs)), max(1, min(DECODE_THREADS,
                                                               len(blobs) // 8)))
    decode = lambda rows: self._decode(blobs, indices, rows, out)
    if len(parts) == 1:
      decode(parts[0])
    else:
      list(_decode_pool().map(decode, parts))  # list(): raises what a thread raised.
    return out

  def _decode(self, blobs, indices, rows, out) -> None:
    shape, dtype = self.field.shape, self.field.dtype
    scratch = np.empty(shape, dtype)  # The largest pool: every step keeps its whole stack.
    for row in rows:
      pool = frames_lib.decompress_into(blobs[row], self.codec, scratch).view(dtype)
      frames_lib.join_stacks(pool.reshape((-1,) + shape[2:]), indices[row], out=out[row])

  @property
  def nbytes(self) -> int:
    """Flags, the blobs (bytes objects with their headers) and the list of them."""
    return self.full.nbytes + self._blob_bytes + 8 * len(self.blobs)

  def snapshot(self, num_stored: int) -> Tuple[np.ndarray, List[bytes]]:
    return self.full[:num_stored].copy(), self.blobs[:num_stored]

  def entries(self, key: str, snapshot) -> Iterator[Tuple[str, Any]]:
    full, blobs = snapshot
    yield f'{key}_full', full
    yield f'{key}_offsets', np.cumsum([0] + [len(blob) for blob in blobs], dtype=np.int64)
    yield f'{key}_frames', Blobs(blobs)

  def load(self, key: str, state: Mapping[str, np.ndarray], num_stored: int) -> None:
    full = np.asarray(state[f'{key}_full'])
    offsets = np.asarray(state[f'{key}_offsets'])
    frames = np.asarray(state[f'{key}_frames'])
    _check_rows(f'{key}_full', full, (num_stored, self.field.shape[0]), np.dtype(bool))
    _check_rows(f'{key}_offsets', offsets, (num_stored + 1,), np.dtype(np.int64))
    _check_rows(f'{key}_frames', frames, frames.shape[:1], np.dtype(np.uint8))
    if (offsets[0] != 0 or offsets[-1] != frames.size or (np.diff(offsets) < 0).any()
        or (num_stored and not full[:, 0].all())):
      raise ValueError(f'replay column {key} has inconsistent offsets or flags: the file is '
                       'corrupt.')
    for slot in range(num_stored):
      self.write(slot, (full[slot], frames[offsets[slot]:offsets[slot + 1]].tobytes()))


def _check_rows(key: str, rows: np.ndarray, shape: tuple, dtype: np.dtype) -> None:
  if rows.shape != shape or rows.dtype != dtype:
    raise ValueError(f'replay entry {key} has shape {rows.shape} dtype {rows.dtype}, expected '
                     f'shape {shape} dtype {dtype}.')


def _is_stacked_frames(field: Field) -> bool:
  return field.name == _OBSERVATION and field.dtype == np.uint8 and len(field.shape) >= 4


class UnrollRing:
  """`capacity` rows of one layout, a column per field; not thread-safe (the replay locks)."""

  def __init__(self, layout: Layout, capacity: int, storage: Storage = Storage(),
               column_storage: Optional[Sequence[Tuple[str, Optional[str]]]] = None):
    """`column_storage`, one (kind, codec) per field, overrides `storage` (a loaded file's)."""
    self.layout = layout
    self.capacity = capacity
    if column_storage is None:
      column_storage = [(FRAMES, storage.observation_compression)
                        if storage.compact_observations and _is_stacked_frames(field)
                        else (ARRAY, None) for field in layout.fields]
    self.columns = [FrameColumn(field, capacity, codec) if kind == FRAMES
                    else ArrayColumn(field, capacity)
                    for field, (kind, codec) in zip(layout.fields, column_storage)]

  def encode(self, unroll: types.Unroll) -> List[Any]:
    """One row per column, checked against the layout (and compressed): no lock needed."""
    return [column.encode(value)
            for column, value in zip(self.columns, self.layout.values(unroll))]

  def write(self, slot: int, rows: Sequence[Any]) -> None:
    for column, row in zip(self.columns, rows):
      column.write(slot, row)

  def gather(self, slots: np.ndarray) -> List[Any]:
    return [column.gather(slots) for column in self.columns]

  def finish(self, gathered: Sequence[Any]) -> types.Unroll:
    """The batched Unroll of what `gather` took."""
    return self.layout.unroll([column.finish(g) for column, g in zip(self.columns, gathered)])

  @property
  def nbytes(self) -> int:
    return sum(column.nbytes for column in self.columns)

  def snapshot(self, num_stored: int) -> List[Any]:
    """What `entries` needs of the first `num_stored` slots; cheap enough for the lock."""
    return [column.snapshot(num_stored) for column in self.columns]

  def entries(self, snapshot: Sequence[Any]) -> Iterator[Tuple[str, Any]]:
    """(name, array or Blobs) to save: the layout as JSON, then column by column."""
    layout = {'output_names': list(self.layout.output_names),
              'num_core_state': self.layout.num_core_state,
              'fields': [{'name': field.name, 'shape': list(field.shape),
                          'dtype': field.dtype.str, 'storage': column.storage[0],
                          'codec': column.storage[1]}
                         for field, column in zip(self.layout.fields, self.columns)]}
    yield 'layout', np.array(json.dumps(layout))
    for index, (column, column_snapshot) in enumerate(zip(self.columns, snapshot)):
      yield from column.entries(f'column_{index}', column_snapshot)

  @classmethod
  def from_state(cls, state: Mapping[str, np.ndarray], capacity: int, num_stored: int,
                 storage: Storage) -> 'UnrollRing':
    """The ring `entries` saved, converted to `storage` if it was saved otherwise."""
    spec = json.loads(str(state['layout']))
    fields = tuple(Field(f['name'], tuple(f['shape']), np.dtype(f['dtype']))
                   for f in spec['fields'])
    for field, f in zip(fields, spec['fields']):
      if f['storage'] not in (ARRAY, FRAMES) or (f['storage'] == FRAMES and
                                                 not _is_stacked_frames(field)):
        raise ValueError(f'replay column {field.name} has storage {f["storage"]!r}, expected '
                         f'{ARRAY!r} (or {FRAMES!r} for uint8 {_OBSERVATION} stacks).')
    layout = Layout(tuple(spec['output_names']), int(spec['num_core_state']), fields)
    saved = cls(layout, capacity, column_storage=[(f['storage'], f['codec'])
                                                  for f in spec['fields']])
    for index, column in enumerate(saved.columns):
      column.load(f'column_{index}', state, num_stored)
    wanted = cls(layout, capacity, storage)
    for index, (old, new) in enumerate(zip(saved.columns, wanted.columns)):
      if old.storage == new.storage:
        wanted.columns[index] = old
        continue
      for slot in range(num_stored):  # Another codec or layout was configured: re-encode.
        new.write(slot, new.encode(old.finish(old.gather(np.array([slot])))[0]))
    return wanted
