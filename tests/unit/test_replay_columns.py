"""Tests for seed.replay.columns: the preallocated ring of unrolls."""
import numpy as np
import pytest

from seed import types
from seed.replay import columns
from tests.unit.test_replay import assert_unroll_equal, make_unroll, row, sequence, transition


def _ring(make, capacity=3, storage=columns.Storage()):
  rng = np.random.default_rng(0)
  unrolls = [make(rng, i) for i in range(5)]
  return columns.UnrollRing(columns.Layout.of(unrolls[0]), capacity, storage), unrolls


def _read(ring, slots):
  return ring.finish(ring.gather(np.asarray(slots)))


@pytest.mark.parametrize('make', [transition, sequence], ids=['sac', 'r2d2'])
def test_write_read_and_overwrite(make):
  ring, unrolls = _ring(make)
  for slot in range(3):
    ring.write(slot, ring.encode(unrolls[slot]))
  batch = _read(ring, [2, 0, 2, 1])  # Any order, repeats allowed.
  assert batch.batch_shape == (4,) + unrolls[0].batch_shape
  for b, slot in enumerate([2, 0, 2, 1]):
    assert_unroll_equal(row(batch, b), unrolls[slot])
  ring.write(1, ring.encode(unrolls[4]))  # Overwrites slot 1 only.
  batch = _read(ring, [0, 1, 2])
  for b, expected in enumerate([unrolls[0], unrolls[4], unrolls[2]]):
    assert_unroll_equal(row(batch, b), expected)


def test_columns_are_preallocated_arrays_and_frames_are_compacted():
  ring, _ = _ring(sequence, capacity=10)
  kinds = {field.name: type(column).__name__
           for field, column in zip(ring.layout.fields, ring.columns)}
  assert kinds == {'steps.observation': 'FrameColumn', 'steps.reward': 'ArrayColumn',
                   'steps.terminated': 'ArrayColumn', 'steps.truncated': 'ArrayColumn',
                   'steps.action': 'ArrayColumn', 'policy_outputs.q': 'ArrayColumn',
                   'core_state.0': 'ArrayColumn', 'core_state.1': 'ArrayColumn',
                   'env_id': 'ArrayColumn'}
  assert ring.columns[1].array.shape == (10, 6) and ring.columns[1].array.dtype == np.float32
  assert ring.columns[-1].array.shape == (10,) and ring.columns[-1].array.dtype == np.int64
  plain, _ = _ring(sequence, storage=columns.Storage(compact_observations=False))
  assert isinstance(plain.columns[0], columns.ArrayColumn)
  assert plain.columns[0].array.shape == (3, 6, 3, 4, 4)
  sac, _ = _ring(transition)  # float32 observations are no frames.
  assert isinstance(sac.columns[0], columns.ArrayColumn)


def test_frame_column_keeps_single_frames():
  ring, unrolls = _ring(sequence, storage=columns.Storage(observation_compression=None))
  ring.write(0, ring.encode(unrolls[1]))  # 6 stacks of 3 [4, 4] frames, a reset at step 1.
  column = ring.columns[0]
  assert len(column.blobs[0]) == (3 + 1 * 3 + 4) * 16  # 10 frames, not 18.
  np.testing.assert_array_equal(column.full[0], [True, True, False, False, False, False])


def _mismatch(kind):
  unroll = sequence(np.random.default_rng(1), 1)
  steps = unroll.steps
  if kind == 'shape':
    return unroll._replace(steps=steps._replace(reward=steps.reward[:5]))
  if kind == 'dtype':
    return unroll._replace(steps=steps._replace(action=steps.action.astype(np.int64)))
  if kind == 'output_name':
    return unroll._replace(steps=steps._replace(policy_outputs={'logits': steps.action}))
  if kind == 'core_state':
    return unroll._replace(core_state=unroll.core_state[:1])
  if kind == 'env_id':
    return unroll._replace(env_id=np.int32(1))
  return dict(unroll._asdict())


@pytest.mark.parametrize('kind, error, pattern', [
    ('shape', ValueError, r'unroll field steps.reward has shape \(5,\) dtype float32, '
     r'expected shape \(6,\) dtype float32 \(all unrolls in a replay share'),
    ('dtype', ValueError, r'unroll field steps.action has shape \(6,\) dtype int64, '
     r'expected shape \(6,\) dtype int32'),
    ('output_name', ValueError, r"unroll policy_outputs are \['logits'\], expected \['q'\]"),
    ('core_state', ValueError, r'unroll core_state has 1 parts, expected 2'),
    ('env_id', ValueError, r'unroll field env_id has shape \(\) dtype int32, expected '
     r'shape \(\) dtype int64'),
    ('dict', TypeError, r'the replay stores seed.types.Unroll items, got dict'),
])
def test_a_mismatch_is_refused_naming_the_field(kind, error, pattern):
  ring, _ = _ring(sequence)
  with pytest.raises(error, match=pattern):
    ring.encode(_mismatch(kind))


def test_object_arrays_are_refused():
  unroll = make_unroll(np.array([None, None], object))
  with pytest.raises(TypeError, match=r'unroll field steps.observation has dtype object'):
    columns.Layout.of(unroll)


def test_layout_unroll_rebuilds_the_structure():
  unroll = sequence(np.random.default_rng(2), 0)
  layout = columns.Layout.of(unroll)
  assert layout.output_names == ('q',) and layout.num_core_state == 2
  assert [f.name for f in layout.fields][-3:] == ['core_state.0', 'core_state.1', 'env_id']
  rebuilt = layout.unroll(layout.values(unroll))
  assert isinstance(rebuilt, types.Unroll)
  assert_unroll_equal(rebuilt, unroll)


def test_frames_are_decoded_in_threads(monkeypatch):
  monkeypatch.setattr(columns, 'DECODE_THREADS', 3)
  ring, unrolls = _ring(sequence, capacity=5)
  for slot in range(5):
    ring.write(slot, ring.encode(unrolls[slot]))
  slots = np.arange(30) % 5  # 30 rows: three threads of 10.
  batch = _read(ring, slots)
  for b, slot in enumerate(slots):
    assert_unroll_equal(row(batch, b), unrolls[slot])
  ring.columns[0].blobs[3] = ring.columns[0].blobs[3][:-4]  # A thread's error reaches the caller.
  with pytest.raises(ValueError, match=r'bytes decompressed, \d+ expected: stored data is '
                     r'corrupt'):
    _read(ring, slots)
