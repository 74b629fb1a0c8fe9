"""Tests for seed.replay.sum_tree, seed.replay.prioritized and seed.inputs.replay_input.

The helpers that make test unrolls (make_unroll, stacked_frames, transition,
sequence, assert_unroll_equal, row) serve the other tests/unit/test_replay_*.py files too.
"""
import math
import os
import threading

import numpy as np
import pytest

from seed import types
from seed.inputs.replay_input import ReplayInput
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


def test_sum_tree_one_index_at_a_time_equals_batched_updates():
  rng = np.random.default_rng(3)
  one, batched = SumTree(37), SumTree(37)
  for _ in range(50):
    indices, values = rng.integers(0, 37, 5), rng.exponential(1.0, 5)
    batched.set(indices, values)
    for index, value in zip(indices, values):  # In order: the last one wins in both.
      one.set([index], value)
    np.testing.assert_array_equal(one._sum, batched._sum)  # pylint: disable=protected-access
    np.testing.assert_array_equal(one._max, batched._max)  # pylint: disable=protected-access


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


# ------------------------------------------------------------ Test unrolls


def make_unroll(observation, *, reward=None, action=None, policy_outputs=None, core_state=(),
                env_id=0) -> types.Unroll:
  """An Unroll of len(observation) steps; fields not given are zeros."""
  num_steps = len(observation)
  return types.Unroll(
      steps=types.Steps(observation=observation,
                        reward=np.zeros(num_steps, np.float32) if reward is None else reward,
                        terminated=np.zeros(num_steps, bool), truncated=np.zeros(num_steps, bool),
                        action=np.zeros(num_steps, np.int32) if action is None else action,
                        policy_outputs=policy_outputs or {}),
      core_state=core_state, env_id=np.int64(env_id))


def stacked_frames(rng, num_steps, stack=3, frame_shape=(4, 4), resets=()):
  """uint8 [num_steps, stack, *frame_shape] as a frame stacker makes them: each step
  shifts in a new frame, and step 0 and every step in `resets` repeat their frame
  `stack` times (gymnasium's FrameStackObservation after a reset)."""
  stacks, current = [], None
  for t in range(num_steps):
    frame = rng.integers(0, 256, frame_shape, dtype=np.uint8)
    if t == 0 or t in resets:
      current = [frame] * stack
    else:
      current = current[1:] + [frame]
    stacks.append(np.stack(current))
  return np.stack(stacks)


def transition(rng, i):
  """A SAC-like n-step transition (n = 1): 2 steps, no core state."""
  return make_unroll(rng.normal(size=(2, 17)).astype(np.float32),
                     reward=np.array([0.0, i], np.float32),
                     action=rng.uniform(-1.0, 1.0, (2, 6)).astype(np.float32), env_id=i % 4)


def sequence(rng, i):
  """An R2D2-like sequence: stacked uint8 frames with a reset, a policy output, LSTM state."""
  return make_unroll(stacked_frames(rng, 6, resets=(i % 5,)),
                     reward=rng.normal(size=6).astype(np.float32),
                     action=rng.integers(0, 4, 6).astype(np.int32),
                     policy_outputs={'q': rng.normal(size=(6, 4)).astype(np.float32)},
                     core_state=(np.full(8, i, np.float32), rng.normal(size=8).astype(np.float32)),
                     env_id=i)


def assert_unroll_equal(actual: types.Unroll, expected: types.Unroll):
  """Every array equal, with the same dtype, and the same structure."""
  def check(a, e, name):
    a, e = np.asarray(a), np.asarray(e)
    assert a.dtype == e.dtype and a.shape == e.shape, (name, a.dtype, e.dtype, a.shape, e.shape)
    np.testing.assert_array_equal(a, e, err_msg=name)
  for field in types.STEP_FIELDS:
    check(getattr(actual.steps, field), getattr(expected.steps, field), field)
  assert list(actual.steps.policy_outputs) == list(expected.steps.policy_outputs)
  for name, value in expected.steps.policy_outputs.items():
    check(actual.steps.policy_outputs[name], value, name)
  assert len(actual.core_state) == len(expected.core_state)
  for i, (a, e) in enumerate(zip(actual.core_state, expected.core_state)):
    check(a, e, f'core_state[{i}]')
  check(actual.env_id, expected.env_id, 'env_id')


def row(batch: types.Unroll, b: int) -> types.Unroll:
  """Item b of a batched Unroll."""
  steps = batch.steps
  return types.Unroll(
      steps=types.Steps(*(getattr(steps, f)[b] for f in types.STEP_FIELDS),
                        policy_outputs={n: v[b] for n, v in steps.policy_outputs.items()}),
      core_state=tuple(part[b] for part in batch.core_state), env_id=batch.env_id[b])


def _marked(i):
  """A tiny unroll whose env_id (and observation) says which it is."""
  return make_unroll(np.full((2, 1), i, np.float32), env_id=i)


# ------------------------------------------------------- PrioritizedReplay


def test_importance_weights_by_hand():
  # alpha = 1, beta = 0.5, p = [1, 2, 4]: N = 3, P = [1/7, 2/7, 4/7].
  # w_i = (3 P_i)^-0.5 / max_j (3 P_j)^-0.5 = (P_min / P_i)^0.5 = [1, 1/sqrt(2), 1/2]
  # when the batch holds slot 0 (300 draws miss it with probability (6/7)^300).
  replay = PrioritizedReplay(4, priority_exponent=1.0, importance_exponent=0.5, seed=3)
  ids = [replay.insert(_marked(i), priority=p) for i, p in enumerate([1.0, 2.0, 4.0])]
  sample = replay.sample(300)
  assert isinstance(sample, types.Sample)
  assert sample.weights.dtype == np.float32 and sample.ids.dtype == np.int64
  assert set(sample.ids) == set(ids)
  for item_id, expected in zip(ids, [1.0, 1.0 / math.sqrt(2.0), 0.5]):
    np.testing.assert_allclose(sample.weights[sample.ids == item_id], expected, rtol=1e-6)
  np.testing.assert_array_equal(sample.data.env_id, sample.ids)
  # A batch of one is always normalised to weight 1.
  assert replay.sample(1).weights[0] == 1.0


def test_sampling_frequencies_follow_priority_exponent():
  replay = PrioritizedReplay(8, priority_exponent=0.5, seed=4)
  priorities = np.array([1.0, 4.0, 9.0, 16.0, 0.25, 2.0])  # df = 5.
  for i, p in enumerate(priorities):
    replay.insert(_marked(i), priority=p)
  sampled = np.concatenate([replay.sample(1000).ids for _ in range(40)])
  _assert_frequencies(np.bincount(sampled, minlength=6), np.sqrt(priorities))


def test_new_item_priority_is_running_max():
  replay = PrioritizedReplay(10, priority_exponent=1.0)
  first = replay.insert(_marked(0))
  assert replay.priorities([first])[0] == 1.0  # The initial max.
  assert replay.update_priorities([first], [5.0]) == 1
  np.testing.assert_array_equal(replay.priorities([replay.insert(_marked(1))]), [5.0])
  replay.update_priorities([first], [0.1])  # Lowering p does not lower the max seen.
  np.testing.assert_array_equal(replay.priorities([replay.insert(_marked(2))]), [5.0])
  replay.insert(_marked(3), priority=7.0)
  assert replay.max_priority == 7.0
  np.testing.assert_array_equal(replay.priorities([replay.insert(_marked(4))]), [7.0])


def test_stale_updates_are_ignored():
  replay = PrioritizedReplay(2, priority_exponent=1.0)
  old = replay.insert(_marked(0), priority=1.0)
  kept = replay.insert(_marked(1), priority=1.0)
  new = replay.insert(_marked(2), priority=2.0)  # Overwrites old's slot.
  assert new % 2 == old % 2
  assert replay.update_priorities([old, kept], [100.0, 3.0]) == 1
  np.testing.assert_array_equal(replay.priorities([old, kept, new]), [np.nan, 3.0, 2.0])
  assert replay.max_priority == 3.0  # The stale 100 counts for nothing.
  with pytest.raises(ValueError, match=r'ids must be in \[0, 3\).*got \[3\]'):
    replay.update_priorities([3], [1.0])


def test_ring_overwrites_oldest():
  replay = PrioritizedReplay(3)
  ids = [replay.insert(_marked(i)) for i in range(5)]
  assert ids == [0, 1, 2, 3, 4] and len(replay) == 3
  sample = replay.sample(200)
  assert set(sample.ids) == {2, 3, 4}
  np.testing.assert_array_equal(sample.data.env_id, sample.ids)
  np.testing.assert_array_equal(sample.data.steps.observation[:, 0, 0], sample.ids)


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


@pytest.mark.parametrize('make', [transition, sequence], ids=['sac', 'r2d2'])
@pytest.mark.parametrize('compression', ['zstd', 'zlib', None])
def test_sample_is_the_inserted_unrolls_batched(make, compression):
  rng = np.random.default_rng(8)
  replay = PrioritizedReplay(5, seed=9, observation_compression=compression)
  unrolls = {i: make(rng, i) for i in range(7)}
  for i, unroll in unrolls.items():
    assert replay.insert(unroll) == i
  sample = replay.sample(40)
  assert set(sample.ids) == {2, 3, 4, 5, 6}
  first = unrolls[0]
  assert sample.data.batch_shape == (40,) + first.batch_shape
  assert sample.data.env_id.shape == (40,) and sample.data.env_id.dtype == np.int64
  for b, item_id in enumerate(sample.ids):
    assert_unroll_equal(row(sample.data, b), unrolls[int(item_id)])


def test_insert_copies_the_unroll():
  rng = np.random.default_rng(1)
  unroll = sequence(rng, 0)
  expected = row(types.stack_unrolls([unroll]), 0)  # A deep copy.
  replay = PrioritizedReplay(2)
  replay.insert(unroll)
  unroll.steps.observation[...] = 0
  unroll.core_state[0][...] = -1.0
  assert_unroll_equal(row(replay.sample(1).data, 0), expected)


def test_concurrent_use_keeps_tree_consistent():
  replay = PrioritizedReplay(50, priority_exponent=0.9, seed=7)
  replay.insert(_marked(0))
  errors = []

  def worker(seed):
    rng = np.random.default_rng(seed)
    try:
      for i in range(100):
        replay.insert(_marked(i), priority=float(rng.exponential()))
        ids = replay.sample(8).ids
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
  np.testing.assert_array_equal(rebuilt.sample(2000).ids, replay.sample(2000).ids)


@pytest.mark.parametrize('call,pattern', [
    (lambda r: r.sample(0), r'batch_size must be an int >= 1, got 0'),
    (lambda r: r.sample(4), r'cannot sample from an empty replay'),
    (lambda r: r.insert(_marked(0), priority=-1.0), r'priorities must be finite and >= 0'),
    (lambda r: r.update_priorities([0, 1], [1.0]), r'must be equal 1-D'),
    (lambda r: PrioritizedReplay(0), r'capacity must be an int >= 1, got 0'),
    (lambda r: PrioritizedReplay(2, priority_exponent=-1), r'priority_exponent must be >= 0'),
    (lambda r: PrioritizedReplay(2, observation_compression='lz5'),
     r"observation compression must be one of \('zstd', 'zlib', None\), got 'lz5'"),
    (lambda r: r.insert({'observation': np.zeros(2)}),
     r'the replay stores seed.types.Unroll items, got dict'),
])
def test_replay_errors(call, pattern):
  with pytest.raises((ValueError, TypeError), match=pattern):
    call(PrioritizedReplay(2))


def test_a_mismatching_unroll_is_refused_naming_the_field():
  rng = np.random.default_rng(2)
  replay = PrioritizedReplay(4)
  replay.insert(sequence(rng, 0))
  bad = sequence(rng, 1)
  bad = bad._replace(core_state=(bad.core_state[0], bad.core_state[1].astype(np.float64)))
  with pytest.raises(ValueError, match=r'unroll field core_state.1 has shape \(8,\) dtype '
                     r'float64, expected shape \(8,\) dtype float32'):
    replay.insert(bad)
  assert len(replay) == 1 and replay.max_priority == 1.0


def test_uniform_replay_never_samples_empty_slots_even_after_a_load(tmp_path):
  # Priority exponent 0 (SAC's uniform replay): 0 ** 0 is 1 in NumPy, so a
  # naive p ** alpha would make the empty slots of a part-filled buffer samplable.
  replay = PrioritizedReplay(100, priority_exponent=0.0, importance_exponent=0.0, seed=3)
  for i in range(10):
    replay.insert(_marked(i))
  path = str(tmp_path / 'uniform.npz')
  replay.save(path)
  loaded = PrioritizedReplay(100, priority_exponent=0.0, importance_exponent=0.0)
  loaded.load(path)
  for buffer in (replay, loaded):
    sample = buffer.sample(500)
    assert set(sample.ids.tolist()) == set(range(10))  # Uniform over what is there.
    np.testing.assert_array_equal(sample.data.env_id, sample.ids)
    np.testing.assert_array_equal(sample.weights, 1.0)
  replay.update_priorities([3], [0.0])  # Priority 0 is never sampled, whatever alpha.
  assert 3 not in replay.sample(500).ids


def test_nbytes_counts_columns_priorities_ids_and_tree():
  replay = PrioritizedReplay(1000)
  empty = replay.nbytes
  assert empty == 1000 * 8 + 1000 * 8 + 2 * (2 * 1024) * 8  # priorities, ids, two trees.
  replay.insert(transition(np.random.default_rng(0), 0))
  # A row: observation 2 x 17 float32, reward 2 float32, 2 + 2 flags, action 2 x 6
  # float32, env_id int64 = 136 + 8 + 4 + 48 + 8 = 204 bytes.
  assert replay.nbytes - empty == 1000 * 204


def test_a_million_sac_transitions_fit_in_300_mb():
  # Issue 12's target: HalfCheetah, observation [17], action [6], n = 1. The columns
  # are preallocated, so one insert already holds the whole million.
  replay = PrioritizedReplay(1_000_000, priority_exponent=0.0, importance_exponent=0.0)
  replay.insert(transition(np.random.default_rng(0), 0))
  assert replay.nbytes <= 300e6, replay.nbytes


# ------------------------------------------------------------- ReplayInput


def test_replay_input_samples_updates_priorities_and_reports_stats(tmp_path):
  rng = np.random.default_rng(3)
  replay_input = ReplayInput(2, capacity_unrolls=4, min_fill_unrolls=2, samples_per_insert=1.0)
  assert replay_input.stats() == {'replay/size': 0.0}
  for i in range(3):
    assert replay_input.put(sequence(rng, i))
  assert replay_input.fill == 0.75
  sample = replay_input.sample(2, timeout_s=1.0)
  assert isinstance(sample, types.Sample) and sample.ids.shape == (2,)
  assert sample.data.steps.observation.shape == (2, 6, 3, 4, 4)
  replay_input.update_priorities(sample.ids, np.array([2.0, 4.0]))
  assert replay_input.stats() == {'replay/size': 3.0, 'replay/priority_mean': 3.0,
                                  'replay/priority_max': 4.0}
  assert replay_input.replay.max_priority == 4.0

  checkpoint = str(tmp_path / 'ckpt-1')
  replay_input.save(checkpoint)
  assert os.path.exists(checkpoint + '.replay.npz')
  restored = ReplayInput(2, capacity_unrolls=4, min_fill_unrolls=2)
  assert not restored.restore(str(tmp_path / 'ckpt-0'))
  assert restored.restore(checkpoint) and restored.fill == 0.75
  ReplayInput.prune(str(tmp_path), keep_checkpoints=[])
  assert not os.listdir(tmp_path)


def test_replay_input_stops_putting_once_stopping():
  stop = threading.Event()
  replay_input = ReplayInput(1, stop, capacity_unrolls=4, min_fill_unrolls=1,
                             samples_per_insert=1.0)
  rng = np.random.default_rng(4)
  inserted = 0
  stop_timer = threading.Timer(1.0, stop.set)
  stop_timer.start()
  while replay_input.put(transition(rng, inserted)):  # Nothing samples: the limiter waits.
    inserted += 1
  stop_timer.join()
  assert 1 <= inserted <= 4 and len(replay_input.replay) == inserted
