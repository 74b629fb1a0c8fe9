"""Tests for seed.envs.running_stats."""
import subprocess
import sys

import numpy as np
import pytest

from seed.envs import running_stats


def _batches(rng, shape, sizes, loc=0.0, scale=1.0):
  return [rng.normal(loc, scale, (n,) + shape) for n in sizes]


@pytest.mark.parametrize('shape', [(), (3,), (2, 2)])
def test_matches_numpy_over_the_concatenation(shape):
  rng = np.random.default_rng(0)
  # Sizes of 1 and 0 too: an actor may send a single step, or nothing new.
  batches = _batches(rng, shape, [5, 1, 0, 17, 2, 40], loc=3.0, scale=2.0)
  stats = running_stats.RunningMeanStd(shape)
  for batch in batches:
    stats.update(batch)
  everything = np.concatenate(batches)
  assert stats.count == 65
  np.testing.assert_allclose(stats.mean, everything.mean(axis=0), rtol=1e-12)
  np.testing.assert_allclose(stats.var, everything.var(axis=0), rtol=1e-12)


def test_large_offset_stays_accurate():
  # Sum-of-squares formulas lose all precision here; Chan's update does not.
  rng = np.random.default_rng(1)
  batches = _batches(rng, (2,), [100] * 20, loc=1e8, scale=1e-2)
  stats = running_stats.RunningMeanStd((2,))
  for batch in batches:
    stats.update(batch)
  np.testing.assert_allclose(stats.var, np.concatenate(batches).var(axis=0), rtol=1e-6)


def test_merge_equals_sequential_updates():
  rng = np.random.default_rng(2)
  batches = _batches(rng, (3,), [7, 11, 4, 9])
  sequential = running_stats.RunningMeanStd((3,))
  for batch in batches:
    sequential.update(batch)
  left, right = running_stats.RunningMeanStd((3,)), running_stats.RunningMeanStd((3,))
  left.update(batches[0])
  left.update(batches[1])
  right.update(batches[2])
  right.update(batches[3])
  left.merge(right)
  assert left.count == sequential.count
  np.testing.assert_allclose(left.mean, sequential.mean, rtol=1e-12)
  np.testing.assert_allclose(left.var, sequential.var, rtol=1e-12)
  empty = running_stats.RunningMeanStd((3,))
  empty.merge(running_stats.RunningMeanStd((3,)))  # Merging nothing changes nothing.
  assert empty.count == 0


def test_normalize_by_hand_and_clip():
  stats = running_stats.RunningMeanStd((2,))
  # Before any data: mean 0, var 1, so only the clip at 10 applies.
  np.testing.assert_allclose(stats.normalize([[100.0, 0.5]]), [[10.0, 0.5]], rtol=1e-6)
  # Column 0: [1, 3] -> mean 2, var 1. Column 1: [5, 5] -> mean 5, var 0.
  stats.update([[1.0, 5.0], [3.0, 5.0]])
  normalized = stats.normalize([[4.0, 5.0], [-100.0, 6.0]])
  assert normalized.dtype == np.float32
  # (4 - 2) / sqrt(1 + 1e-8) = 2; a constant feature maps to 0 at its value and is
  # clipped elsewhere (1 / sqrt(1e-8) = 1e4 > 10).
  np.testing.assert_allclose(normalized, [[2.0, 0.0], [-10.0, 10.0]], rtol=1e-6)


def test_state_dict_round_trip(tmp_path):
  rng = np.random.default_rng(3)
  batches = _batches(rng, (4,), [10, 20, 30])
  stats = running_stats.RunningMeanStd((4,))
  stats.update(batches[0])
  stats.update(batches[1])
  state = stats.state_dict()
  # A checkpoint file holds plain arrays; go through one to prove it.
  np.savez(tmp_path / 'stats.npz', **state)
  with np.load(tmp_path / 'stats.npz') as loaded:
    restored = running_stats.RunningMeanStd((4,))
    restored.load_state_dict(dict(loaded))
  # The saved state is a copy: later updates do not change it.
  stats.update(batches[2])
  np.testing.assert_array_equal(state['mean'], restored.mean)
  # Resuming from the checkpoint continues exactly as if never interrupted.
  restored.update(batches[2])
  assert restored.count == stats.count == 60
  np.testing.assert_array_equal(restored.mean, stats.mean)
  np.testing.assert_array_equal(restored.var, stats.var)
  np.testing.assert_array_equal(restored.normalize(batches[0]), stats.normalize(batches[0]))


def test_load_state_dict_rejects_mismatches():
  state = running_stats.RunningMeanStd((4,)).state_dict()
  with pytest.raises(ValueError, match=r'state mean has shape \(4,\), expected \(3,\)'):
    running_stats.RunningMeanStd((3,)).load_state_dict(state)
  with pytest.raises(ValueError, match=r"state is missing \['var'\]"):
    running_stats.RunningMeanStd((4,)).load_state_dict({'count': 1, 'mean': np.zeros(4)})
  with pytest.raises(ValueError, match='must be non-negative'):
    running_stats.RunningMeanStd((4,)).load_state_dict(dict(state, count=-1.0))


def test_bad_inputs_raise():
  stats = running_stats.RunningMeanStd((3,))
  with pytest.raises(ValueError, match=r'batch has shape \(2, 4\), expected \[N, \*\(3,\)\]'):
    stats.update(np.zeros((2, 4)))
  with pytest.raises(ValueError, match=r'batch has shape \(3,\), expected'):
    stats.update(np.zeros(3))  # One observation without its batch axis.
  with pytest.raises(ValueError, match='non-finite'):
    stats.update([[0.0, np.nan, 1.0]])
  assert stats.count == 0  # A rejected batch leaves the stats untouched.
  with pytest.raises(ValueError, match=r'x has shape \(2, 2\), expected \[\.\.\., \*\(3,\)\]'):
    stats.normalize(np.zeros((2, 2)))
  with pytest.raises(ValueError, match='clip must be positive, got 0'):
    running_stats.RunningMeanStd((3,), clip=0)


def test_does_not_import_tensorflow():
  # Actors import seed.envs, and they must stay TensorFlow-free.
  code = ('import sys; import seed.envs.running_stats; '
          'sys.exit(1 if "tensorflow" in sys.modules else 0)')
  assert subprocess.run([sys.executable, '-c', code], check=False).returncode == 0
