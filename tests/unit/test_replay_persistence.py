"""Saving and loading a PrioritizedReplay: format 3, atomic, pickle-free; old formats refused."""
import json
import os

import numpy as np
import pytest

from seed.replay import columns
from seed.replay import npz
from seed.replay.prioritized import PrioritizedReplay
from tests.unit.test_replay import assert_unroll_equal, row, sequence, transition


def _filled(make, capacity=8, count=11, seed=5, **storage):
  """A replay that wrapped around, with some updated priorities; also the unrolls by id."""
  rng = np.random.default_rng(seed)
  replay = PrioritizedReplay(capacity, seed=6, **storage)
  unrolls = {}
  for i in range(count):
    unrolls[i] = make(rng, i)
    replay.insert(unrolls[i], priority=None if i % 2 else float(i + 1))
  replay.update_priorities(replay.sample(4).ids, [0.5, 2.5, 9.0, 0.25])
  return replay, unrolls


def _assert_restored(restored, replay, unrolls):
  """Same length, max, priorities and next draws; every live unroll equal to the inserted one."""
  capacity, num_inserts = replay.capacity, int(replay.state_dict()['num_inserts'])
  all_ids = np.arange(num_inserts)
  assert len(restored) == len(replay)
  assert restored.max_priority == replay.max_priority
  np.testing.assert_array_equal(restored.priorities(all_ids), replay.priorities(all_ids))
  # Same RNG state and tree: the next draws agree exactly; 500 draws reach every item.
  for batch_size in (500, 3):
    expected, actual = replay.sample(batch_size), restored.sample(batch_size)
    np.testing.assert_array_equal(actual.ids, expected.ids)
    np.testing.assert_array_equal(actual.weights, expected.weights)
    for b, item_id in enumerate(actual.ids):
      assert_unroll_equal(row(actual.data, b), unrolls[int(item_id)])
    if batch_size == 500:
      assert set(actual.ids) == set(range(max(0, num_inserts - capacity), num_inserts))
  next_unroll = unrolls[num_inserts - 1]
  assert restored.insert(next_unroll) == replay.insert(next_unroll) == num_inserts


@pytest.mark.parametrize('make', [transition, sequence], ids=['sac', 'r2d2'])
def test_round_trip(tmp_path, make):
  replay, unrolls = _filled(make)
  path = str(tmp_path / 'replay.ckpt')  # No .npz suffix is added.
  replay.save(path)
  replay.save(path)  # Overwrites in place.
  assert os.listdir(tmp_path) == ['replay.ckpt']  # No temporary file left behind.
  restored = PrioritizedReplay(8, seed=123)
  restored.load(path)
  _assert_restored(restored, replay, unrolls)


def test_the_file_is_columns_without_pickle(tmp_path):
  replay, _ = _filled(sequence)
  path = str(tmp_path / 'replay.npz')
  replay.save(path)
  with np.load(path, allow_pickle=False) as data:
    entries = {name: data[name] for name in data.files}  # Would raise on an object array.
  assert int(entries['format_version']) == 3
  layout = json.loads(str(entries['layout']))
  assert [(f['name'], f['storage'], f['codec']) for f in layout['fields']][:2] == [
      ('steps.observation', 'frames', 'zstd'), ('steps.reward', 'array', None)]
  # One entry per column (three for the frames), a row per stored slot, in slot order.
  assert sorted(name for name in entries if name.startswith('column_')) == sorted(
      ['column_0_full', 'column_0_offsets', 'column_0_frames'] +
      [f'column_{i}' for i in range(1, 9)])
  assert entries['column_8'].shape == (8,)  # env_id: slot s holds id ids[s].
  np.testing.assert_array_equal(entries['column_8'], entries['ids'])
  assert entries['column_0_offsets'][-1] == entries['column_0_frames'].size
  assert all(entry.dtype != object for entry in entries.values())


def _column_storage(replay):
  return [(f['storage'], f['codec'])
          for f in json.loads(str(replay.state_dict()['layout']))['fields']]


@pytest.mark.parametrize('saved, loaded', [
    ({}, {'observation_compression': 'zlib'}),
    ({}, {'observation_compression': None}),
    ({}, {'compact_observations': False}),
    ({'compact_observations': False}, {}),
])
def test_a_file_of_other_storage_is_converted_on_load(tmp_path, saved, loaded):
  replay, unrolls = _filled(sequence, **saved)
  path = str(tmp_path / 'replay.npz')
  replay.save(path)
  restored = PrioritizedReplay(8, seed=123, **loaded)
  restored.load(path)
  expected = PrioritizedReplay(8, **loaded)
  expected.insert(unrolls[0])
  assert _column_storage(restored) == _column_storage(expected) != _column_storage(replay)
  _assert_restored(restored, replay, unrolls)


def test_empty_round_trip_and_capacity_check(tmp_path):
  path = str(tmp_path / 'empty.npz')
  PrioritizedReplay(3).save(path)
  empty = PrioritizedReplay(3)
  empty.load(path)
  assert len(empty) == 0 and empty.max_priority == 1.0 and empty.layout is None
  other = PrioritizedReplay(5)
  other.insert(transition(np.random.default_rng(0), 0))
  with pytest.raises(ValueError, match=r'saved replay has capacity 3, this one has 5'):
    other.load(path)
  assert len(other) == 1  # Untouched.


def _write_old_format(path, version):
  """A replay file as formats 1 and 2 wrote it (seed.replay.prioritized at 84551c4).

  Two R2D2-like dict items in a capacity-2 replay. Format 2 in its columnar layout:
  an 'item_spec' (JSON; a leaf is its column index) and 'column_{leaf}' [2, ...];
  format 1: 'item_specs' and one 'item_{slot}_{leaf}' entry per leaf.
  """
  rng = np.random.default_rng(0)
  leaves = [rng.integers(0, 256, (2, 3, 4, 4, 4), dtype=np.uint8),  # observation
            np.zeros((2, 3), np.float32),  # reward
            np.zeros((2, 8), np.float32), np.zeros((2, 8), np.float32),  # LSTM c, h
            np.full(2, 0.4, np.float32)]  # epsilon
  spec = {'d': [['observation', 0], ['reward', 1], ['core_state', {'t': [2, 3, 4]}]]}
  state = {'format_version': np.array(version, np.int64), 'capacity': np.array(2, np.int64),
           'num_inserts': np.array(2, np.int64), 'max_priority': np.array(1.0),
           'priorities': np.ones(2), 'ids': np.arange(2, dtype=np.int64),
           'rng_state': np.array(json.dumps(np.random.default_rng(0).bit_generator.state))}
  if version == 2:
    state.update({'item_layout': np.array('columnar'), 'item_spec': np.array(json.dumps(spec))})
    state.update({f'column_{i}': leaf for i, leaf in enumerate(leaves)})
  else:
    state['item_specs'] = np.array(json.dumps([spec, spec]))
    state.update({f'item_{slot}_{i}': leaf[slot]
                  for slot in range(2) for i, leaf in enumerate(leaves)})
  with open(path, 'wb') as f:
    np.savez(f, **state)


@pytest.mark.parametrize('version', [1, 2])
def test_old_dict_item_formats_are_refused_saying_what_to_do(tmp_path, version):
  path = str(tmp_path / 'ckpt-7.replay.npz')
  _write_old_format(path, version)
  replay = PrioritizedReplay(2)
  kept = transition(np.random.default_rng(1), 0)
  replay.insert(kept)
  pattern = (rf'{path} is replay format {version}, whose items are dicts .* reads format 3 '
             r'only .* Delete the file to resume with an empty replay .* --nocheckpoint_replay')
  with pytest.raises(ValueError, match=pattern):
    replay.load(path)
  assert len(replay) == 1  # Untouched.
  assert_unroll_equal(row(replay.sample(1).data, 0), kept)


def test_a_newer_format_is_refused(tmp_path):
  replay, _ = _filled(transition)
  state = replay.state_dict()
  with pytest.raises(ValueError, match=r'replay format_version 4, which this code does not '
                     r'read \(it reads 3\)'):
    PrioritizedReplay(8).load_state_dict({**state, 'format_version': np.array(4)})


@pytest.mark.parametrize('key, value, pattern', [
    ('column_1', lambda s: s['column_1'][:7],
     r'replay entry column_1 has shape \(7, 6\) dtype float32, expected shape \(8, 6\)'),
    ('column_0_offsets', lambda s: s['column_0_offsets'][::-1],
     r'replay column column_0 has inconsistent offsets or flags'),
    ('column_0_full', lambda s: np.zeros_like(s['column_0_full']),
     r'replay column column_0 has inconsistent offsets or flags'),
    ('ids', lambda s: s['ids'][:3], r'ids has shape \(3,\), expected \(8,\)'),
    ('layout', lambda s: np.array(str(s['layout']).replace('"array"', '"rows"')),
     r"replay column steps.reward has storage 'rows', expected 'array'"),
])
def test_load_rejects_inconsistent_entries(key, value, pattern):
  replay, _ = _filled(sequence)
  state = replay.state_dict()
  with pytest.raises(ValueError, match=pattern):
    PrioritizedReplay(8).load_state_dict({**state, key: value(state)})


def test_a_failed_save_leaves_the_old_file(tmp_path, monkeypatch):
  replay, unrolls = _filled(sequence)
  path = str(tmp_path / 'replay.npz')
  replay.save(path)
  before = open(path, 'rb').read()
  for i in range(11, 14):
    replay.insert(sequence(np.random.default_rng(i), i))
  entries = replay._entries

  def failing_entries():
    for index, entry in enumerate(entries()):
      if index == 9:  # Part-way through the columns.
        raise OSError(28, 'No space left on device')
      yield entry

  monkeypatch.setattr(replay, '_entries', failing_entries)
  with pytest.raises(OSError, match='No space left on device'):
    replay.save(path)
  assert os.listdir(tmp_path) == ['replay.npz']  # The temporary file is gone.
  assert open(path, 'rb').read() == before
  restored = PrioritizedReplay(8)
  restored.load(path)
  assert len(restored) == 8 and int(restored.state_dict()['num_inserts']) == 11


def test_blobs_are_written_end_to_end(tmp_path):
  path = str(tmp_path / 'blobs.npz')
  npz.write_atomically(path, [('a', np.arange(3)), ('b', columns.Blobs([b'ab', b'', b'cde']))])
  with np.load(path, allow_pickle=False) as data:
    np.testing.assert_array_equal(data['a'], [0, 1, 2])
    assert data['b'].dtype == np.uint8 and data['b'].tobytes() == b'abcde'


def test_a_loaded_state_dict_stays_the_callers():
  replay, _ = _filled(transition, capacity=4, count=4)
  state = replay.state_dict()
  column = state['column_0'].copy()
  restored = PrioritizedReplay(4)
  restored.load_state_dict(state)
  restored.insert(transition(np.random.default_rng(9), 9))  # Overwrites slot 0.
  np.testing.assert_array_equal(state['column_0'], column)


def test_a_file_that_is_no_replay_is_refused(tmp_path):
  path = str(tmp_path / 'other.npz')
  np.savez(path, x=np.zeros(3))
  with pytest.raises(ValueError, match=r'other.npz is no replay: it has no format_version'):
    PrioritizedReplay(4).load(path)
