"""Tests for seed.replay.contextual_priority and its use by PrioritizedReplay."""
import numpy as np
import pytest

from seed.inputs.replay_input import ReplayInput
from seed.replay.contextual_priority import contextual_priorities
from seed.replay.prioritized import PrioritizedReplay
from tests.unit.test_replay import _assert_frequencies, make_unroll


def _slow_reference(assigned, priorities, fallback):
  """The same estimate by explicit loops: a position's cell is its nearest assigned
  position (ties to the earlier one); neighbours are the cells one anchor away."""
  anchors = [i for i, a in enumerate(assigned) if a]
  if not anchors:
    return [fallback] * len(assigned)
  cell_of = [min(range(len(anchors)), key=lambda c: (abs(t - anchors[c]), c))
             for t in range(len(assigned))]
  sizes = [cell_of.count(c) for c in range(len(anchors))]
  result = []
  for t, is_assigned in enumerate(assigned):
    if is_assigned:
      result.append(priorities[t])
      continue
    near = [c for c in (cell_of[t] - 1, cell_of[t], cell_of[t] + 1) if 0 <= c < len(anchors)]
    result.append(sum(sizes[c] * priorities[anchors[c]] for c in near)
                  / sum(sizes[c] for c in near))
  return result


def test_two_anchors_by_hand():
  # Anchors at 1 (p 2) and 5 (p 6): cells 0..3 (size 4) and 4..6 (size 3); every
  # unassigned position sees both cells: (4 * 2 + 3 * 6) / 7 = 26 / 7.
  assigned = np.array([0, 1, 0, 0, 0, 1, 0], bool)
  priorities = np.array([9, 2, 9, 9, 9, 6, 9], float)  # 9s are ignored.
  np.testing.assert_allclose(contextual_priorities(assigned, priorities, fallback=100.0),
                             [26 / 7, 2, 26 / 7, 26 / 7, 26 / 7, 6, 26 / 7])


def test_three_anchors_by_hand():
  # Anchors 0 (p 1), 3 (p 4), 8 (p 10): cells {0, 1} (size 2), {2..5} (4), {6..9} (4).
  # Cell 0 sees cells 0, 1: (2 + 16) / 6 = 3; cell 1 sees all: (2 + 16 + 40) / 10 = 5.8;
  # cell 2 sees cells 1, 2: (16 + 40) / 8 = 7.
  assigned = np.zeros(10, bool)
  assigned[[0, 3, 8]] = True
  priorities = np.zeros(10)
  priorities[[0, 3, 8]] = [1, 4, 10]
  np.testing.assert_allclose(contextual_priorities(assigned, priorities, fallback=0.0),
                             [1, 3, 5.8, 4, 5.8, 5.8, 7, 7, 10, 7])


def test_no_anchor_gives_the_fallback_and_all_assigned_is_unchanged():
  np.testing.assert_array_equal(contextual_priorities(np.zeros(3, bool), np.ones(3), 4.5),
                                [4.5, 4.5, 4.5])
  np.testing.assert_array_equal(contextual_priorities(np.ones(3, bool), [1.0, 2.0, 3.0], 9.0),
                                [1.0, 2.0, 3.0])
  assert contextual_priorities(np.zeros(0, bool), np.zeros(0), 1.0).shape == (0,)


def test_matches_the_slow_reference_on_random_streams():
  rng = np.random.default_rng(0)
  for _ in range(200):
    length = int(rng.integers(1, 30))
    assigned = rng.random(length) < rng.uniform(0.05, 0.6)
    priorities = rng.exponential(size=length)
    np.testing.assert_allclose(contextual_priorities(assigned, priorities, 2.5),
                               _slow_reference(list(assigned), list(priorities), 2.5))


def test_rejects_mismatched_shapes():
  with pytest.raises(ValueError, match='must be equal 1-D'):
    contextual_priorities(np.zeros(3, bool), np.zeros(4), 1.0)


# ------------------------------------------------- PrioritizedReplay('contextual')


def _contextual_replay(capacity, **kwargs):
  return PrioritizedReplay(capacity, priority_exponent=1.0, unvisited_priority='contextual',
                           **kwargs)


def _insert(replay, env_id):
  return replay.insert(make_unroll(np.zeros((2, 1), np.float32), env_id=env_id))


def test_unvisited_sequences_take_their_streams_measured_neighbours():
  replay = _contextual_replay(16)
  env0 = [_insert(replay, 0) for _ in range(5)]
  env1 = [_insert(replay, 1) for _ in range(2)]
  np.testing.assert_array_equal(replay.priorities(env0 + env1), np.ones(7))  # No context yet.
  # Env 0's ids 0 (p 2) and 4 (p 6): cells {0, 1, 2} and {3, 4}, so ids 1..3 get
  # (3 * 2 + 2 * 6) / 5 = 3.6. Env 1 is another stream and keeps its 1.0 ...
  replay.update_priorities([env0[0], env0[4]], [2.0, 6.0])
  np.testing.assert_allclose(replay.priorities(env0), [2, 3.6, 3.6, 3.6, 6])
  np.testing.assert_array_equal(replay.priorities(env1), [1.0, 1.0])
  assert replay.max_priority == 6.0  # Only measured priorities raise the max.
  # ... until its stream changes: still no measured sequence, so the max seen so far.
  env1.append(_insert(replay, 1))
  np.testing.assert_array_equal(replay.priorities(env1), [6.0, 6.0, 6.0])
  # A new sequence of env 0 joins the last cell: cells {0, 1, 2}, {3, 4, 5}.
  env0.append(_insert(replay, 0))
  np.testing.assert_allclose(replay.priorities(env0), [2, 4, 4, 4, 6, 4])
  # Sampling follows the estimates.
  sampled = np.concatenate([replay.sample(1000).ids for _ in range(20)])
  expected = replay.priorities(np.arange(replay._num_inserts))
  _assert_frequencies(np.bincount(sampled, minlength=expected.size), expected)


def test_overwriting_a_measured_sequence_re_estimates_its_stream():
  replay = _contextual_replay(4)
  ids = [_insert(replay, 0) for _ in range(4)]
  replay.update_priorities([ids[0], ids[2]], [10.0, 1.0])
  np.testing.assert_allclose(replay.priorities(ids), [10, 5.5, 1, 5.5])
  newest = _insert(replay, 0)  # Overwrites ids[0]: only ids[2] is measured now.
  np.testing.assert_array_equal(replay.priorities(ids[1:] + [newest]), [1.0, 1.0, 1.0, 1.0])
  # A priority given on insert counts as measured. It overwrites ids[1]: the stream is
  # ids[2] (p 1), ids[3], newest, given (p 3), cells of 2 and 2: (2 * 1 + 2 * 3) / 4 = 2.
  given = replay.insert(make_unroll(np.zeros((2, 1), np.float32), env_id=0), priority=3.0)
  np.testing.assert_allclose(replay.priorities([ids[2], ids[3], newest, given]), [1, 2, 2, 3])


def test_the_max_rule_is_unchanged_by_default():
  replay = PrioritizedReplay(8, priority_exponent=1.0)
  ids = [_insert(replay, 0) for _ in range(3)]
  replay.update_priorities([ids[0]], [5.0])
  np.testing.assert_array_equal(replay.priorities(ids), [5.0, 1.0, 1.0])


def test_uniform_mixture_probabilities_and_weights():
  # eps 0.5, priorities 1 and 3: P = 0.5 / 2 + 0.5 * [1, 3] / 4 = [0.375, 0.625]; with
  # beta 1 the weight of the more likely one is 0.375 / 0.625 = 0.6.
  replay = PrioritizedReplay(4, priority_exponent=1.0, importance_exponent=1.0, seed=1,
                             uniform_sampling_probability=0.5)
  low = replay.insert(make_unroll(np.zeros((2, 1), np.float32)), priority=1.0)
  high = replay.insert(make_unroll(np.zeros((2, 1), np.float32)), priority=3.0)
  samples = [replay.sample(1000) for _ in range(10)]
  ids = np.concatenate([s.ids for s in samples])
  _assert_frequencies(np.bincount(ids, minlength=2), [0.375, 0.625])
  both = next(s for s in samples if {low, high} <= set(s.ids))
  np.testing.assert_allclose(both.weights[both.ids == high], 0.6, rtol=1e-6)
  np.testing.assert_allclose(both.weights[both.ids == low], 1.0)


def test_estimates_survive_save_and_load(tmp_path):
  replay = _contextual_replay(8)
  ids = [_insert(replay, 0) for _ in range(4)]
  replay.update_priorities([ids[1]], [3.0])
  replay.save(str(tmp_path / 'replay.npz'))
  restored = _contextual_replay(8)
  restored.load(str(tmp_path / 'replay.npz'))
  for r in (replay, restored):  # Both know which were measured and the stream.
    r.update_priorities([ids[3]], [1.0])
  np.testing.assert_allclose(restored.priorities(ids), replay.priorities(ids))
  np.testing.assert_allclose(restored.priorities(ids), [2.5, 3, 2.5, 1])  # Cells {0..2}, {3}.


def test_a_file_from_before_the_estimate_loads_as_all_measured():
  replay = PrioritizedReplay(4, priority_exponent=1.0)
  ids = [_insert(replay, 0) for _ in range(3)]
  replay.update_priorities([ids[0]], [4.0])
  state = {k: v for k, v in replay.state_dict().items() if k not in ('assigned', 'env_ids')}
  restored = _contextual_replay(4)
  restored.load_state_dict(state)
  restored.update_priorities([ids[2]], [2.0])  # No stream known: nothing re-estimated.
  np.testing.assert_array_equal(restored.priorities(ids), [4.0, 1.0, 2.0])


@pytest.mark.parametrize('kwargs, message', [
    ({'unvisited_priority': 'lazy'}, r"unvisited_priority must be one of \('max', "
                                     r"'contextual'\), got 'lazy'"),
    ({'uniform_sampling_probability': 1.5}, r'uniform_sampling_probability must be in '
                                            r'\[0, 1\], got 1.5'),
])
def test_bad_settings_are_named(kwargs, message):
  with pytest.raises(ValueError, match=message):
    PrioritizedReplay(4, **kwargs)
  with pytest.raises(ValueError, match=message):
    ReplayInput(2, capacity_unrolls=4, min_fill_unrolls=2, **kwargs)
