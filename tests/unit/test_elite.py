"""Tests for seed.replay.elite: distances, lambda annealing and the four strategies."""
import math

import numpy as np
import pytest

from seed.replay import elite


# --- Slow references: plain loops over unrolls, steps and features. ---

def _reference_distance(current, stored, distance, p=2.0):
  """One unroll pair, [T, F] each, by the definitions in unroll_distances."""
  a = [float(x) for step in current for x in step]
  b = [float(x) for step in stored for x in step]
  if distance == 'ln_norm':
    if p == np.inf:
      return max(abs(x - y) for x, y in zip(a, b))
    return sum(abs(x - y) ** p for x, y in zip(a, b)) ** (1.0 / p)
  if distance == 'cosine':
    norm_a = math.sqrt(sum(x * x for x in a))
    norm_b = math.sqrt(sum(y * y for y in b))
    if norm_a == 0.0 or norm_b == 0.0:
      return 1.0
    return 1.0 - sum(x * y for x, y in zip(a, b)) / (norm_a * norm_b)
  total = 0.0
  for logits_p, logits_q in zip(current, stored):
    probs_p = [math.exp(x) / sum(math.exp(z) for z in logits_p) for x in logits_p]
    probs_q = [math.exp(y) / sum(math.exp(z) for z in logits_q) for y in logits_q]
    total += sum(pp * math.log(pp / qq) for pp, qq in zip(probs_p, probs_q))
  return total


def _reference_unroll_distances(current, stored, distance, p=2.0):
  return np.array([_reference_distance(current[i], stored[i], distance, p)
                   for i in range(len(current))])


def _reference_attentive(candidates, references, distance, p=2.0):
  out = []
  for candidate in candidates:
    best = math.inf
    for reference in references:
      repeated = [reference for _ in range(len(candidate))]
      best = min(best, _reference_distance(candidate, repeated, distance, p))
    out.append(best)
  return np.array(out)


# --- unroll_distances ---

@pytest.mark.parametrize('distance,p', [('ln_norm', 1.0), ('ln_norm', 2.0), ('ln_norm', 3.5),
                                        ('ln_norm', np.inf), ('cosine', 2.0), ('kl', 2.0)])
def test_unroll_distances_match_reference_loop(distance, p):
  rng = np.random.default_rng(0)
  current = rng.normal(0.0, 2.0, (5, 4, 3)).astype(np.float32)
  stored = rng.normal(0.0, 2.0, (5, 4, 3)).astype(np.float32)
  got = elite.unroll_distances(current, stored, distance, p)
  assert got.shape == (5,) and got.dtype == np.float64
  np.testing.assert_allclose(got, _reference_unroll_distances(current, stored, distance, p),
                             rtol=1e-10, atol=1e-12)


def test_ln_norm_by_hand():
  # Unroll 0: difference [[0, 2], [3, 0]]: L1 = 5, L2 = sqrt(4 + 9), Linf = 3.
  # Unroll 1: the same features, distance 0 in every norm.
  current = np.array([[[1., 2.], [3., 4.]], [[1., 1.], [2., 2.]]])
  stored = np.array([[[1., 0.], [0., 4.]], [[1., 1.], [2., 2.]]])
  np.testing.assert_allclose(elite.unroll_distances(current, stored, 'ln_norm'),
                             [math.sqrt(13.0), 0.0])
  np.testing.assert_allclose(elite.unroll_distances(current, stored, 'ln_norm', p=1), [5.0, 0.0])
  np.testing.assert_allclose(elite.unroll_distances(current, stored, 'ln_norm', p=np.inf),
                             [3.0, 0.0])


def test_cosine_by_hand():
  # 0: [1, 0, 0, 1] vs [1, 0, 0, 0]: dot 1, norms sqrt(2) and 1 -> 1 - 1/sqrt(2).
  # 1: opposite directions -> 2.  2: a zero stored vector has no direction -> 1.
  current = np.array([[[1., 0.], [0., 1.]], [[1., 1.], [1., 1.]], [[1., 2.], [3., 4.]]])
  stored = np.array([[[1., 0.], [0., 0.]], [[-1., -1.], [-1., -1.]], [[0., 0.], [0., 0.]]])
  np.testing.assert_allclose(elite.unroll_distances(current, stored, 'cosine'),
                             [1.0 - 1.0 / math.sqrt(2.0), 2.0, 1.0])
  # Same direction, another length: 0, and never a rounding step below 0.
  assert elite.unroll_distances(current, 3.0 * current, 'cosine').min() >= 0.0


def test_kl_by_hand():
  # Step 0: softmax [0, ln 3] = [1/4, 3/4] against [1/2, 1/2]:
  #   1/4 ln(1/2) + 3/4 ln(3/2).
  # Step 1: [1/2, 1/2] against [1/4, 3/4]: 1/2 ln 2 + 1/2 ln(2/3).
  # Sum: the ln 2 terms cancel (-1/4 - 3/4 + 1/2 + 1/2), leaving (3/4 - 1/2) ln 3.
  current = np.array([[[0., math.log(3.0)], [0., 0.]]])
  stored = np.array([[[0., 0.], [0., math.log(3.0)]]])
  np.testing.assert_allclose(elite.unroll_distances(current, stored, 'kl'), [0.25 * math.log(3.0)])
  # Logits are read up to a constant per step, and large ones do not overflow.
  shifted = elite.unroll_distances(current + 1000.0, stored - 1000.0, 'kl')
  np.testing.assert_allclose(shifted, [0.25 * math.log(3.0)])
  assert elite.unroll_distances(current, current, 'kl')[0] == 0.0


def test_unroll_distances_errors():
  features = np.zeros((2, 3, 4))
  accepted = "accepted: one of 'ln_norm', 'cosine', 'kl'"
  with pytest.raises(ValueError, match=f"distance = 'l3'; {accepted}"):
    elite.unroll_distances(features, features, 'l3')
  with pytest.raises(ValueError, match=r'current has shape \(2, 3, 4\) and stored \(2, 3, 5\)'):
    elite.unroll_distances(features, np.zeros((2, 3, 5)), 'ln_norm')
  with pytest.raises(ValueError, match=r'stored has shape \(2, 12\); accepted: \[N, T, F\]'):
    elite.unroll_distances(features, np.zeros((2, 12)), 'kl')
  with pytest.raises(ValueError, match='p = 0.5; accepted: a number >= 1'):
    elite.unroll_distances(features, features, 'ln_norm', p=0.5)
  # p is ln_norm's alone: the other distances ignore it.
  np.testing.assert_array_equal(elite.unroll_distances(features, features, 'cosine', p=0.5),
                                [1.0, 1.0])
  assert elite.unroll_distances(np.zeros((0, 3, 4)), np.zeros((0, 3, 4)), 'kl').shape == (0,)


# --- attentive_distances ---

def test_attentive_by_hand_nearest_reference_differs():
  # Candidate 0 equals reference 0 on both steps. Candidate 1, [[0, 1], [0, 2]],
  # is nearer reference 1 = [0, 1]: differences [[0, 0], [0, 1]] (L2 1, cosine
  # 1 - 3 / (sqrt(5) sqrt(2))) against reference 0's [[-1, 1], [-1, 2]] (L2
  # sqrt(7), cosine 1: orthogonal).
  candidates = np.array([[[1., 0.], [1., 0.]], [[0., 1.], [0., 2.]]])
  references = np.array([[1., 0.], [0., 1.]])
  np.testing.assert_allclose(elite.attentive_distances(candidates, references, 'ln_norm'),
                             [0.0, 1.0])
  np.testing.assert_allclose(elite.attentive_distances(candidates, references, 'cosine'),
                             [0.0, 1.0 - 3.0 / math.sqrt(10.0)], atol=1e-15)
  # Swapping the references changes nothing: a minimum over them.
  np.testing.assert_allclose(elite.attentive_distances(candidates, references[::-1], 'ln_norm'),
                             [0.0, 1.0])


@pytest.mark.parametrize('distance,p', [('ln_norm', 1.0), ('ln_norm', 2.0), ('ln_norm', np.inf),
                                        ('cosine', 2.0), ('kl', 2.0)])
def test_attentive_matches_reference_loop(distance, p, monkeypatch):
  rng = np.random.default_rng(1)
  candidates = rng.normal(0.0, 1.5, (6, 3, 4))
  references = rng.normal(0.0, 1.5, (5, 4))
  expected = _reference_attentive(candidates, references, distance, p)
  got = elite.attentive_distances(candidates, references, distance, p)
  np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12)
  # ln_norm broadcasts references a block at a time: blocks of 2 give the same.
  monkeypatch.setattr(elite, '_BLOCK_ELEMENTS', 2 * candidates.size)
  np.testing.assert_allclose(elite.attentive_distances(candidates, references, distance, p),
                             expected, rtol=1e-9, atol=1e-12)


def test_attentive_errors():
  candidates = np.zeros((2, 3, 4))
  with pytest.raises(ValueError, match=r'references has shape \(1, 5\) and candidates \(2, 3, 4\)'):
    elite.attentive_distances(candidates, np.zeros((1, 5)), 'kl')
  with pytest.raises(ValueError, match=r'references has shape \(0, 4\)'):
    elite.attentive_distances(candidates, np.zeros((0, 4)), 'kl')
  with pytest.raises(ValueError, match=r'references has shape \(1, 1, 4\); accepted: \[R, F\]'):
    elite.attentive_distances(candidates, np.zeros((1, 1, 4)), 'kl')
  with pytest.raises(ValueError, match="distance = 'cos'"):
    elite.attentive_distances(candidates, np.zeros((1, 4)), 'cos')


# --- lambda_at and candidate_count ---

def test_lambda_at_by_hand():
  # l0 = 6, alfa = 2, 100 annealing steps: 1 is reached at step 2 * 100 = 200.
  assert elite.lambda_at(0, 6, 2.0, 100) == 6.0
  assert elite.lambda_at(100, 6, 2.0, 100) == pytest.approx(3.5)  # 6 - 5 * 100 / 200.
  assert elite.lambda_at(200, 6, 2.0, 100) == 1.0
  assert elite.lambda_at(10_000, 6, 2.0, 100) == 1.0  # Stays at 1 after the end.
  assert elite.lambda_at(50, 1, 1.0, 100) == 1.0  # l0 = 1: uniform from the start.


def test_lambda_at_errors():
  with pytest.raises(ValueError, match='lambda_batch_multiplier = 0.5; accepted: a number >= 1'):
    elite.lambda_at(0, 0.5, 1.0, 100)
  with pytest.raises(ValueError, match='alfa_annealing_factor = 0; accepted: a number > 0'):
    elite.lambda_at(0, 6, 0, 100)
  with pytest.raises(ValueError, match='annealing_steps = 0; accepted: an int >= 1'):
    elite.lambda_at(0, 6, 1.0, 0)
  with pytest.raises(ValueError, match='train_step = -1; accepted: an int >= 0'):
    elite.lambda_at(-1, 6, 1.0, 100)


def test_candidate_count():
  assert elite.candidate_count(10, 1.0) == 10
  assert elite.candidate_count(10, 3.5) == 35
  assert elite.candidate_count(3, 1.5) == 4  # int(4.5): truncated.
  assert elite.candidate_count(45, 1.4) == 62  # 1.4 * 45 = 62.99999999999999.
  assert elite.candidate_count(0, 6.0) == 0
  with pytest.raises(ValueError, match='lam = 0.5; accepted: a finite number >= 1'):
    elite.candidate_count(10, 0.5)
  with pytest.raises(ValueError, match='share = -1; accepted: an int >= 0'):
    elite.candidate_count(-1, 2.0)


# --- select ---

# Candidate:      0    1    2    3    4    5
_DISTANCES = [0.5, 0.1, 0.9, 0.3, 0.7, 0.2]
_TIMES = [0, 2, 1, 1, 0, 3]
# By distance: 1 (.1), 5 (.2), 3 (.3), 0 (.5), 4 (.7), 2 (.9).
# By (times, distance): 0 (0, .5), 4 (0, .7), 3 (1, .3), 2 (1, .9), 1 (2, .1), 5 (3, .2).


@pytest.mark.parametrize('strategy,n,expected', [
    (1, 3, [1, 5, 3]),  # The three lowest distances.
    (2, 3, [1, 3, 4]),  # Strides [1, 5], [3, 0], [4, 2]: the first of each.
    (3, 3, [0, 4, 3]),  # The first three by (times, distance).
    (4, 3, [1, 0, 4]),  # Strides as in 2; times [2, 3] -> 1, [1, 0] -> 0, [0, 1] -> 4.
    # n = 4: array_split gives strides [1, 5], [3, 0], [4], [2].
    (2, 4, [1, 3, 4, 2]),
    (4, 4, [1, 0, 4, 2]),
    # n == M: every candidate, in each strategy's order.
    (1, 6, [1, 5, 3, 0, 4, 2]),
    (2, 6, [1, 5, 3, 0, 4, 2]),
    (3, 6, [0, 4, 3, 2, 1, 5]),
    (4, 6, [1, 5, 3, 0, 4, 2]),
])
def test_select_by_hand(strategy, n, expected):
  got = elite.select(np.array(_DISTANCES), np.array(_TIMES), n, strategy)
  assert got.dtype == np.int64
  np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize('strategy,expected', [
    (1, [0, 1]),  # Equal distances keep candidate order.
    (2, [0, 2]),  # Strides [0, 1], [2, 3].
    (3, [1, 2]),  # Times [1, 0, 0, 1]: 1 and 2 first, in candidate order.
    (4, [1, 2]),  # Stride [0, 1] -> 1 (times 0); [2, 3] -> 2 (times 0).
])
def test_select_ties_in_distance(strategy, expected):
  got = elite.select(np.full(4, 0.2), np.array([1, 0, 0, 1]), 2, strategy)
  np.testing.assert_array_equal(got, expected)


def test_select_strategy4_count_tie_goes_to_lower_distance():
  # By distance: 0 (.1), 2 (.2), 3 (.3), 1 (.4); strides [0, 2], [3, 1]. All
  # counts equal, so each stride gives its lower distance, 3 before 1 although
  # 1 comes first among the candidates.
  got = elite.select(np.array([0.1, 0.4, 0.2, 0.3]), np.full(4, 2), 2, 4)
  np.testing.assert_array_equal(got, [0, 3])


def test_select_properties_on_random_inputs():
  rng = np.random.default_rng(2)
  for _ in range(50):
    num_candidates = int(rng.integers(1, 30))
    n = int(rng.integers(0, num_candidates + 1))
    distances = rng.random(num_candidates).round(1)  # Rounded: many ties.
    times = rng.integers(0, 4, num_candidates)
    for strategy in elite.STRATEGIES:
      got = elite.select(distances, times, n, strategy)
      assert len(got) == n and len(set(got.tolist())) == n
      assert ((got >= 0) & (got < num_candidates)).all()
      np.testing.assert_array_equal(got, elite.select(distances, times, n, strategy))
    # Strategy 1 takes the n lowest; 3 the n lowest counts.
    lowest = np.sort(distances)[:n]
    np.testing.assert_array_equal(np.sort(distances[elite.select(distances, times, n, 1)]), lowest)
    np.testing.assert_array_equal(np.sort(times[elite.select(distances, times, n, 3)]),
                                  np.sort(times)[:n])


def test_select_nan_distance_ranks_last():
  np.testing.assert_array_equal(elite.select([np.nan, 0.2, 0.1], [0, 0, 0], 2, 1), [2, 1])


def test_select_errors():
  distances, times = np.array([0.1, 0.2]), np.array([0, 1])
  for strategy in (0, 5, True, 1.0, '1'):
    with pytest.raises(ValueError, match=r'strategy = .*; accepted: one of 1, 2, 3, 4\.'):
      elite.select(distances, times, 1, strategy)
  with pytest.raises(ValueError, match=r'n = 3; accepted: an int in \[0, 2\]'):
    elite.select(distances, times, 3, 1)
  with pytest.raises(ValueError, match=r'n = -1'):
    elite.select(distances, times, -1, 1)
  with pytest.raises(ValueError, match=r'times_sampled has shape \(3,\)'):
    elite.select(distances, np.array([0, 1, 2]), 1, 1)
  with pytest.raises(ValueError, match=r'times_sampled has shape \(2,\) dtype float64'):
    elite.select(distances, np.array([0.0, 1.0]), 1, 1)
  with pytest.raises(ValueError, match=r'distances has shape \(1, 2\); accepted: \[M\]'):
    elite.select(distances[None], times[None], 1, 1)
  assert elite.select(distances, times, 0, 2).shape == (0,)


def test_check_distance_and_strategy():
  for distance in elite.DISTANCES:
    elite.check_distance(distance)
  for strategy in elite.STRATEGIES:
    elite.check_strategy(strategy)
    elite.check_strategy(np.int64(strategy))  # As NumPy or gin may give it.
  with pytest.raises(ValueError, match="distance = 'KL'"):
    elite.check_distance('KL')
  with pytest.raises(ValueError, match="distance = None"):
    elite.check_distance(None)
