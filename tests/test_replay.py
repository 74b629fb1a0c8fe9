"""Tests for seed.replay.sum_tree and seed.replay.prioritized."""
import json
import math
import os
import threading

import numpy as np
import pytest

from seed.replay import prioritized
from seed.replay.prioritized import PrioritizedReplay
from seed.replay.sum_tree import SumTree


def _chi2_critical(df, p_value=0.001):
  """Upper 0.1% point of chi-square(df): scipy if there, else a fixed table."""
  try:
    from scipy import stats  # pylint: disable=g-import-not-at-top
    return float(stats.chi2.ppf(1.0 - p_value, df))
  except ImportError:
    return {3: 16.266, 5: 20.515, 7: 24.322}[df]


def _assert_frequencies(counts, probabilities):
  """Pearson chi-square goodness of fit at the 0.1% level (fixed seeds: deterministic)."""
  counts, probabilities = np.asarray(counts, float), np.asarray(probabilities, float)
  assert (counts[probabilities == 0] == 0).all(), 'a zero-probability outcome was drawn'
  positive = probabilities > 0
  expected = counts.sum() * probabilities[positive] / probabilities.sum()
  statistic = ((counts[positive] - expected) ** 2 / expected).sum()
  assert statistic < _chi2_critical(positive.sum() - 1), (statistic, counts, expected)


# ---------------------------------------------------------------- SumTree


def test_sum_tree_total_max_get_set():
  tree = SumTree(5)  # Not a power of two: 8 leaves, 3 always 0.
  assert tree.capacity == 5 and tree.total == 0.0 and tree.max == 0.0
  tree.set(np.arange(5), [1.0, 2.0, 3.0, 4.0, 5.0])
  assert tree.total == 15.0 and tree.max == 5.0
  tree.set([4], 0.0)
  assert tree.total == 10.0 and tree.max == 4.0
  np.testing.assert_array_equal(tree.get([3, 4, 0]), [4.0, 0.0, 1.0])
  tree.set([1, 2, 1, 1], [7.0, 8.0, 9.0, 6.0])  # Repeated index: the last one wins.
  np.testing.assert_array_equal(tree.get([1, 2]), [6.0, 8.0])
  assert tree.total == 1.0 + 6.0 + 8.0 + 4.0 and tree.max == 8.0


def test_sum_tree_sample_hand_cases():
  tree = SumTree(5)
  tree.set(np.arange(5), [0.0, 3.0, 0.0, 2.0, 0.0])
  # Inverse CDF over cumsum [0, 3, 3, 5, 5]: u*5 in [0, 3) -> 1, [3, 5] -> 3; the ends
  # and the exact boundary never land on a zero-priority slot.
  np.testing.assert_array_equal(tree.sample([0.0, 0.59, 0.6, 0.99, 1.0]), [1, 1, 3, 3, 3])


@pytest.mark.parametrize('capacity', [1, 2, 5, 8, 1000])
def test_sum_tree_sample_matches_searchsorted(capacity):
  rng = np.random.default_rng(capacity)
  priorities = rng.random(capacity) * (rng.random(capacity) < 0.7)
  priorities[0] = 0.5  # At least one positive.
  tree = SumTree(capacity)
  tree.set(np.arange(capacity), priorities)
  uniforms = rng.random(5000)
  expected = np.searchsorted(np.cumsum(priorities), uniforms * priorities.sum(), side='right')
  np.testing.assert_array_equal(tree.sample(uniforms), expected)


def test_sum_tree_many_updates_do_not_drift():
  rng = np.random.default_rng(1)
  tree = SumTree(1000)
  priorities = np.zeros(1000)
  for _ in range(300):
    indices = rng.integers(0, 1000, 64)
    values = rng.exponential(1.0, 64)
    tree.set(indices, values)
    priorities[indices] = tree.get(indices)
  assert tree.total == pytest.approx(math.fsum(priorities), rel=1e-12)
  assert tree.max == priorities.max()


def test_sum_tree_sampling_frequencies_chi_square():
  tree = SumTree(10)
  priorities = np.array([1.0, 2.0, 0.0, 3.0, 4.0, 0.5, 6.0, 0.0, 2.5, 1.5])  # df = 7.
  tree.set(np.arange(10), priorities)
  samples = tree.sample(np.random.default_rng(2).random(100_000))
  _assert_frequencies(np.bincount(samples, minlength=10), priorities)


@pytest.mark.parametrize('call,pattern', [
    (lambda t: t.set([4], 1.0), r'indices must be in \[0, 4\), got \[4\]'),
    (lambda t: t.set([-1], 1.0), r'indices must be in \[0, 4\), got \[-1\]'),
    (lambda t: t.set([0], -1.0), r'priorities must be finite and >= 0, got \[-1.\]'),
    (lambda t: t.set([0], np.nan), r'priorities must be finite and >= 0'),
    (lambda t: t.set([0.5], 1.0), r'indices must be a 1-D integer array'),
    (lambda t: t.sample([0.5]), r'cannot sample: all priorities are 0'),
    (lambda t: t.sample([1.5]), r'uniforms must be in \[0, 1\], got \[1.5\]'),
])
def test_sum_tree_errors(call, pattern):
  with pytest.raises(ValueError, match=pattern):
    call(SumTree(4))


# ------------------------------------------------------- PrioritizedReplay


def test_importance_weights_by_hand():
  # alpha = 1, beta = 0.5, p = [1, 2, 4]: N = 3, P = [1/7, 2/7, 4/7].
  # w_i = (3 P_i)^-0.5 / max_j (3 P_j)^-0.5 = (P_min / P_i)^0.5 = [1, 1/sqrt(2), 1/2]
  # when the batch holds slot 0 (300 draws miss it with probability (6/7)^300).
  replay = PrioritizedReplay(4, priority_exponent=1.0, importance_exponent=0.5, seed=3)
  ids = [replay.insert({'x': np.array(i)}, priority=p) for i, p in enumerate([1.0, 2.0, 4.0])]
  sampled, items, weights = replay.sample(300)
  assert weights.dtype == np.float32 and set(sampled) == set(ids)
  for item_id, expected in zip(ids, [1.0, 1.0 / math.sqrt(2.0), 0.5]):
    np.testing.assert_allclose(weights[sampled == item_id], expected, rtol=1e-6)
  assert all(int(item['x']) == i for item, i in zip(items, sampled))
  # A batch of one is always normalised to weight 1.
  assert replay.sample(1)[2][0] == 1.0


def test_sampling_frequencies_follow_priority_exponent():
  replay = PrioritizedReplay(8, priority_exponent=0.5, seed=4)
  priorities = np.array([1.0, 4.0, 9.0, 16.0, 0.25, 2.0])  # df = 5.
  for i, p in enumerate(priorities):
    replay.insert({'i': i}, priority=p)
  sampled = np.concatenate([replay.sample(1000)[0] for _ in range(40)])
  _assert_frequencies(np.bincount(sampled, minlength=6), np.sqrt(priorities))


def test_new_item_priority_is_running_max():
  replay = PrioritizedReplay(10, priority_exponent=1.0)
  first = replay.insert('a')
  assert replay.priorities([first])[0] == 1.0  # The initial max.
  assert replay.update_priorities([first], [5.0]) == 1
  np.testing.assert_array_equal(replay.priorities([replay.insert('b')]), [5.0])
  replay.update_priorities([first], [0.1])  # Lowering p does not lower the max seen.
  np.testing.assert_array_equal(replay.priorities([replay.insert('c')]), [5.0])
  replay.insert('d', priority=7.0)
  assert replay.max_priority == 7.0
  np.testing.assert_array_equal(replay.priorities([replay.insert('e')]), [7.0])


def test_stale_updates_are_ignored():
  replay = PrioritizedReplay(2, priority_exponent=1.0)
  old = replay.insert('old', priority=1.0)
  kept = replay.insert('kept', priority=1.0)
  new = replay.insert('new', priority=2.0)  # Overwrites old's slot.
  assert new % 2 == old % 2
  assert replay.update_priorities([old, kept], [100.0, 3.0]) == 1
  np.testing.assert_array_equal(replay.priorities([old, kept, new]), [np.nan, 3.0, 2.0])
  assert replay.max_priority == 3.0  # The stale 100 counts for nothing.
  with pytest.raises(ValueError, match=r'ids must be in \[0, 3\).*got \[3\]'):
    replay.update_priorities([3], [1.0])


def test_ring_overwrites_oldest():
  replay = PrioritizedReplay(3)
  ids = [replay.insert({'step': np.array(i)}) for i in range(5)]
  assert ids == [0, 1, 2, 3, 4] and len(replay) == 3
  sampled, items, _ = replay.sample(200)
  assert set(sampled) == {2, 3, 4}
  assert all(int(item['step']) == i for item, i in zip(items, sampled))


def test_sequence_priority():
  # Sequence |delta| = [1, 2, 3]: 0.9 * 3 + 0.1 * 2 = 2.9; [4, 0, -2]: 0.9*4 + 0.1*2 = 3.8.
  errors = np.array([[1.0, 4.0], [2.0, 0.0], [3.0, -2.0]])  # Time-major [T=3, B=2].
  np.testing.assert_allclose(prioritized.sequence_priority(errors), [2.9, 3.8])
  np.testing.assert_allclose(prioritized.sequence_priority(errors.T, axis=1), [2.9, 3.8])
  np.testing.assert_allclose(prioritized.sequence_priority(errors, eta=0.0), [2.0, 2.0])
  # Masked: [1, 2] -> 0.9*2 + 0.1*1.5 = 1.95; no valid step -> 0.
  mask = np.array([[True, False], [True, False], [False, False]])
  np.testing.assert_allclose(prioritized.sequence_priority(errors, mask=mask), [1.95, 0.0])
  with pytest.raises(ValueError, match=r'eta must be in \[0, 1\], got 1.5'):
    prioritized.sequence_priority(errors, eta=1.5)


def _assert_same_structure(actual, expected):
  assert type(actual) is type(expected) or not isinstance(expected, (dict, tuple, list))
  if isinstance(expected, dict):
    assert list(actual) == list(expected)
    for key in expected:
      _assert_same_structure(actual[key], expected[key])
  elif isinstance(expected, (tuple, list)):
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
      _assert_same_structure(a, e)
  else:
    assert isinstance(actual, np.ndarray)
    assert actual.dtype == np.asarray(expected).dtype
    np.testing.assert_array_equal(actual, expected)


def _sequence(rng, i):
  return {'observation': rng.integers(0, 255, (3, 4, 4), dtype=np.uint8),
          'reward': rng.normal(size=3).astype(np.float32),
          'core_state': (np.full(2, i, np.float32), np.zeros(2, np.float32)),
          'no_state': (), 'info': {'env_id': np.int64(i), 'name': 'pong'}, 'flags': [True]}


def test_save_load_round_trip(tmp_path):
  rng = np.random.default_rng(5)
  replay = PrioritizedReplay(4, seed=6)
  for i in range(6):
    replay.insert(_sequence(rng, i), priority=None if i % 2 else float(i + 1))
  ids, _, _ = replay.sample(3)
  replay.update_priorities(ids, [0.5, 2.5, 9.0])
  path = str(tmp_path / 'replay.ckpt')  # No .npz suffix is added.
  replay.save(path)
  replay.save(path)  # Overwrites in place.
  assert os.listdir(tmp_path) == ['replay.ckpt']  # No temporary file left behind.

  restored = PrioritizedReplay(4, seed=123)
  restored.load(path)
  assert len(restored) == len(replay) == 4
  assert restored.max_priority == replay.max_priority
  np.testing.assert_array_equal(restored.priorities(np.arange(6)), replay.priorities(np.arange(6)))
  # Same RNG state and tree: the next draws agree exactly, items included.
  for batch_size in (5, 2):
    ids_a, items_a, weights_a = replay.sample(batch_size)
    ids_b, items_b, weights_b = restored.sample(batch_size)
    np.testing.assert_array_equal(ids_a, ids_b)
    np.testing.assert_array_equal(weights_a, weights_b)
    for item_b, item_a in zip(items_b, items_a):
      _assert_same_structure(item_b, item_a)
  assert restored.insert('x') == replay.insert('x') == 6


def test_load_checks_capacity_and_empty_round_trip(tmp_path):
  path = str(tmp_path / 'empty.npz')
  PrioritizedReplay(3).save(path)
  empty = PrioritizedReplay(3)
  empty.load(path)
  assert len(empty) == 0 and empty.max_priority == 1.0
  with pytest.raises(ValueError, match=r'saved replay has capacity 3, this one has 5'):
    PrioritizedReplay(5).load(path)


def test_concurrent_use_keeps_tree_consistent():
  replay = PrioritizedReplay(50, priority_exponent=0.9, seed=7)
  replay.insert('seed')
  errors = []

  def worker(seed):
    rng = np.random.default_rng(seed)
    try:
      for _ in range(100):
        replay.insert('item', priority=float(rng.exponential()))
        ids, _, _ = replay.sample(8)
        replay.update_priorities(ids, rng.exponential(size=8))
    except Exception as e:  # pylint: disable=broad-except
      errors.append(e)

  threads = [threading.Thread(target=worker, args=(s,)) for s in range(4)]
  for t in threads:
    t.start()
  for t in threads:
    t.join()
  assert not errors and len(replay) == 50
  state = replay.state_dict()
  assert int(state['num_inserts']) == 401
  # A replay rebuilt from the raw priorities (fresh tree, same RNG state) draws the
  # same ids: no concurrent update was lost between priorities and tree.
  rebuilt = PrioritizedReplay(50, priority_exponent=0.9)
  rebuilt.load_state_dict(state)
  np.testing.assert_array_equal(rebuilt.sample(2000)[0], replay.sample(2000)[0])


@pytest.mark.parametrize('call,pattern', [
    (lambda r: r.sample(0), r'batch_size must be an int >= 1, got 0'),
    (lambda r: r.sample(4), r'cannot sample from an empty replay'),
    (lambda r: r.insert('a', priority=-1.0), r'priorities must be finite and >= 0'),
    (lambda r: r.update_priorities([0, 1], [1.0]), r'must be equal 1-D'),
    (lambda r: PrioritizedReplay(0), r'capacity must be an int >= 1, got 0'),
    (lambda r: PrioritizedReplay(2, priority_exponent=-1), r'priority_exponent must be >= 0'),
    (lambda r: r.insert({1: np.zeros(2)}), r'item dict keys must be str'),
])
def test_replay_errors(call, pattern):
  with pytest.raises((ValueError, TypeError), match=pattern):
    call(PrioritizedReplay(2))


def test_unsavable_items_are_rejected_on_insert():
  replay = PrioritizedReplay(2)
  with pytest.raises(TypeError, match='item leaves must be numeric/bool/str arrays'):
    replay.insert({'bad': object()})
  assert len(replay) == 0


# ------------------------------------------------------------- Persistence


def _transition(rng, i):
  """A SAC-like 1-step transition, shaped as the unroll builder hands it over."""
  return {'observation': rng.normal(size=(2, 17)).astype(np.float32),
          'reward': np.array([0.0, i], np.float32),
          'terminated': np.array([False, i % 3 == 0]), 'truncated': np.zeros(2, bool),
          'action': rng.uniform(-1.0, 1.0, (2, 6)).astype(np.float32),
          'core_state': (np.float32(i),)}


def _leaves(item):
  leaves = []
  prioritized._flatten(item, leaves)
  return leaves


def _filled(make_item, capacity=8, count=11, seed=5):
  """A replay that wrapped around, with some updated priorities; also the items by id."""
  rng = np.random.default_rng(seed)
  replay = PrioritizedReplay(capacity, seed=6)
  items = {}
  for i in range(count):
    items[i] = make_item(rng, i)
    replay.insert(items[i], priority=None if i % 2 else float(i + 1))
  ids, _, _ = replay.sample(4)
  replay.update_priorities(ids, [0.5, 2.5, 9.0, 0.25])
  return replay, items


def _save_format_1(replay, items, path):
  """Writes `replay` as format 1 did, every leaf its own 'item_{slot}_{leaf}' entry.

  Built by hand from the old key scheme; the files it writes were checked equal,
  entry for entry, to those of the format-1 code (commit 0374d8f).
  """
  state = {key: value for key, value in replay.state_dict().items()
           if key in ('capacity', 'num_inserts', 'max_priority', 'priorities', 'ids',
                      'rng_state')}
  state['format_version'] = np.array(1, np.int64)
  specs = []
  for slot in range(len(replay)):
    leaves = []
    specs.append(prioritized._flatten(items[int(state['ids'][slot])], leaves))
    for leaf_index, leaf in enumerate(leaves):
      state[f'item_{slot}_{leaf_index}'] = leaf
  state['item_specs'] = np.array(json.dumps(specs))
  with open(path, 'wb') as f:
    np.savez(f, **state)


def _assert_restored(restored, replay, items):
  """Same length, max, priorities and next draws; every live item equal to the inserted one."""
  capacity, num_inserts = replay.capacity, int(replay.state_dict()['num_inserts'])
  all_ids = np.arange(num_inserts)
  assert len(restored) == len(replay)
  assert restored.max_priority == replay.max_priority
  np.testing.assert_array_equal(restored.priorities(all_ids), replay.priorities(all_ids))
  # Same RNG state and tree: the next draws agree exactly; 500 draws reach every item.
  for batch_size in (500, 3):
    ids_a, items_a, weights_a = replay.sample(batch_size)
    ids_b, items_b, weights_b = restored.sample(batch_size)
    np.testing.assert_array_equal(ids_a, ids_b)
    np.testing.assert_array_equal(weights_a, weights_b)
    for item_id, item_b, item_a in zip(ids_b, items_b, items_a):
      _assert_same_structure(item_b, item_a)
      _assert_same_structure(item_b, items[int(item_id)])
    if batch_size == 500:
      assert set(ids_b) == set(range(max(0, num_inserts - capacity), num_inserts))
  assert restored.insert('x') == replay.insert('x') == num_inserts


@pytest.mark.parametrize('make_item', [_transition, _sequence], ids=['sac', 'r2d2'])
def test_columnar_round_trip(tmp_path, make_item):
  replay, items = _filled(make_item)
  state = replay.state_dict()
  assert str(state['item_layout']) == 'columnar'
  assert not [key for key in state
              if key.startswith('item_') and key not in ('item_layout', 'item_spec')]
  # One column per leaf, rows in slot order: slot s holds id ids[s].
  columns = sorted(key for key in state if key.startswith('column_'))
  assert len(columns) == len(_leaves(items[0]))
  np.testing.assert_array_equal(
      state['column_0'], np.stack([_leaves(items[int(i)])[0] for i in state['ids']]))

  path = str(tmp_path / 'replay.npz')
  replay.save(path)
  restored = PrioritizedReplay(8, seed=123)
  restored.load(path)
  _assert_restored(restored, replay, items)


def test_columnar_items_are_independent_rows(tmp_path):
  replay, items = _filled(_transition, capacity=4, count=4)
  path = str(tmp_path / 'replay.npz')
  replay.save(path)
  restored = PrioritizedReplay(4, seed=0)
  restored.load(path)
  ids, sampled, _ = restored.sample(200)
  first = {int(i): item for i, item in zip(ids, sampled)}
  assert sorted(first) == [0, 1, 2, 3]
  # Scalars stay 0-d arrays, as in the per-item layout.
  core = first[2]['core_state'][0]
  assert isinstance(core, np.ndarray) and core.shape == () and core == 2.0
  # Overwriting slots rebinds them and leaves items sampled before (rows of the
  # same loaded columns) as they were.
  for i in range(3):
    restored.insert(_transition(np.random.default_rng(99), 100 + i))
  for item_id, item in first.items():
    _assert_same_structure(item, items[item_id])
  # Rows do not overlap: writing into one item touches no other.
  first[0]['observation'][...] = -7.0
  for item_id in (1, 2, 3):
    _assert_same_structure(first[item_id], items[item_id])


@pytest.mark.parametrize('mixed', ['extra_key', 'key_order', 'shape', 'dtype', 'leaf_to_tuple',
                                   'tuple_to_leaf', 'tuple_to_list'])
def test_mixed_items_fall_back_to_per_item_layout(tmp_path, mixed):
  def make_item(rng, i):
    item = _transition(rng, i)
    if i % 3 != 1:
      return item
    if mixed == 'extra_key':
      item['extra'] = np.array(i)
    elif mixed == 'key_order':
      item = dict(reversed(item.items()))
    elif mixed == 'shape':
      item['observation'] = item['observation'][:, :5]
    elif mixed == 'dtype':  # Stacking would promote every reward to float64.
      item['reward'] = item['reward'].astype(np.float64)
    elif mixed == 'leaf_to_tuple':
      item['reward'] = (item['reward'],)
    elif mixed == 'tuple_to_leaf':
      item['core_state'] = item['core_state'][0]
    else:
      item['core_state'] = list(item['core_state'])
    return item

  replay, items = _filled(make_item)
  state = replay.state_dict()
  assert str(state['item_layout']) == 'per_item'
  assert not any(key.startswith('column_') for key in state)
  path = str(tmp_path / 'replay.npz')
  replay.save(path)
  restored = PrioritizedReplay(8, seed=123)
  restored.load(path)
  _assert_restored(restored, replay, items)


@pytest.mark.parametrize('make_item', [_transition, _sequence], ids=['sac', 'r2d2'])
def test_loads_format_1(tmp_path, make_item):
  replay, items = _filled(make_item)
  path = str(tmp_path / 'old.npz')
  _save_format_1(replay, items, path)
  with np.load(path) as data:
    assert int(data['format_version']) == 1 and 'item_layout' not in data.files
  restored = PrioritizedReplay(8, seed=123)
  restored.load(path)
  _assert_restored(restored, replay, items)
  with pytest.raises(ValueError, match=r'saved replay has capacity 8, this one has 9'):
    PrioritizedReplay(9).load(path)


@pytest.mark.parametrize('make_item', [_transition, _sequence], ids=['sac', 'r2d2'])
def test_load_checks_capacity_of_columnar_file(tmp_path, make_item):
  replay, _ = _filled(make_item)
  path = str(tmp_path / 'replay.npz')
  replay.save(path)
  other = PrioritizedReplay(16)
  other.insert('kept')
  with pytest.raises(ValueError, match=r'saved replay has capacity 8, this one has 16'):
    other.load(path)
  assert len(other) == 1  # Untouched.


def test_load_rejects_bad_state():
  replay, _ = _filled(_transition)
  state = replay.state_dict()
  with pytest.raises(ValueError, match=r'format_version 3 is not supported, expected 2'):
    PrioritizedReplay(8).load_state_dict({**state, 'format_version': np.array(3)})
  with pytest.raises(ValueError, match=r"unknown replay item_layout 'rows'"):
    PrioritizedReplay(8).load_state_dict({**state, 'item_layout': np.array('rows')})
  with pytest.raises(ValueError, match=r'column_1 has shape \(7, 2\), expected 8 rows'):
    PrioritizedReplay(8).load_state_dict({**state, 'column_1': state['column_1'][:7]})


def test_uniform_replay_never_samples_empty_slots_even_after_a_load(tmp_path):
  # Priority exponent 0 (SAC's uniform replay): 0 ** 0 is 1 in NumPy, so a
  # naive p ** alpha would make the empty slots of a part-filled buffer samplable.
  replay = PrioritizedReplay(100, priority_exponent=0.0, importance_exponent=0.0, seed=3)
  for i in range(10):
    replay.insert({'x': np.array([i], np.float32)})
  path = str(tmp_path / 'uniform.npz')
  replay.save(path)
  loaded = PrioritizedReplay(100, priority_exponent=0.0, importance_exponent=0.0)
  loaded.load(path)
  for buffer in (replay, loaded):
    ids, items, weights = buffer.sample(500)
    assert all(item is not None for item in items)
    assert set(ids.tolist()) == set(range(10))  # Uniform over what is there.
    np.testing.assert_array_equal(weights, 1.0)
  replay.update_priorities([3], [0.0])  # Priority 0 is never sampled, whatever alpha.
  assert 3 not in replay.sample(500)[0]


def test_a_replay_too_big_to_stack_is_saved_per_item_without_a_copy(tmp_path, monkeypatch):
  # Stacking copies; above the limit (R2D2's GBs of frames) items are written as they are.
  monkeypatch.setattr(prioritized, 'COLUMNAR_MAX_BYTES', 1000)
  replay = PrioritizedReplay(20)
  for i in range(10):
    replay.insert({'frames': np.full([4, 8], i, np.uint8)})  # 32 B each: 320 B fits.
  assert str(replay.state_dict()['item_layout']) == 'columnar'
  big = PrioritizedReplay(20)
  for i in range(20):
    big.insert({'frames': np.full([40, 8], i, np.uint8)})  # 6,400 B in all: too big.
  state = big.state_dict()
  assert str(state['item_layout']) == 'per_item'
  big.save(str(tmp_path / 'big.npz'))
  loaded = PrioritizedReplay(20)
  loaded.load(str(tmp_path / 'big.npz'))
  _, items, _ = loaded.sample(50)
  assert all(item['frames'].shape == (40, 8) for item in items)
