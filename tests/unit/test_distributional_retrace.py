"""Tests for seed.losses.distributional_retrace: the categorical projection by hand,
the targets against a slow NumPy loop, their mean against scalar Retrace, mass,
episode ends and truncation."""
import numpy as np
import pytest

from seed.losses import distributional_retrace as dr
from seed.losses import retrace

SUPPORT = np.linspace(-10.0, 10.0, 51).astype(np.float32)


def test_projection_by_hand():
  # Atoms -1, 0, 1 (spacing 1). 0.25 -> 0.75 on 0 and 0.25 on 1; -3 clips to -1;
  # 1 sits on 1; weights 0.5, 0.2, 0.3.
  got = dr.categorical_projection([[0.25, -3.0, 1.0]], [[0.5, 0.2, 0.3]], [-1.0, 0.0, 1.0])
  np.testing.assert_allclose(got.numpy(), [[0.2, 0.375, 0.125 + 0.3]], atol=1e-6)
  # Negative weights project linearly too.
  got = dr.categorical_projection([[0.5, 0.5]], [[1.0, -0.5]], [-1.0, 0.0, 1.0])
  np.testing.assert_allclose(got.numpy(), [[0.0, 0.25, 0.25]], atol=1e-6)


def test_one_step_by_hand():
  # T = 1: the target is E_pi Z(x_1) moved to r + gamma z, projected. Atoms -1, 0, 1;
  # E_pi Z(x_1) = [0, 1, 0] (all mass on 0); r = 0.5, gamma 0.5: one point at 0.5 ->
  # half on 0, half on 1.
  target = dr.distributional_retrace_targets(
      log_rhos=[[0.0]], discounts=[[0.5]], rewards=[[0.5]],
      q_distributions=[[[1.0, 0.0, 0.0]]], state_distributions=[[[0.2, 0.3, 0.5]]],
      bootstrap_distribution=[[0.0, 1.0, 0.0]], support=[-1.0, 0.0, 1.0])
  np.testing.assert_allclose(target.numpy(), [[[0.0, 0.5, 0.5]]], atol=1e-6)


def _random_inputs(rng, steps=5, batch=3, atoms=len(SUPPORT), terminal_probability=0.2):
  def distributions(shape):
    x = rng.gamma(1.0, size=shape + (atoms,))
    return (x / x.sum(-1, keepdims=True)).astype(np.float32)
  return dict(
      log_rhos=rng.normal(0, 0.7, (steps, batch)).astype(np.float32),
      discounts=(0.9 * (rng.random((steps, batch)) > terminal_probability)).astype(np.float32),
      rewards=rng.normal(0, 1, (steps, batch)).astype(np.float32),
      q_distributions=distributions((steps, batch)),
      state_distributions=distributions((steps, batch)),
      bootstrap_distribution=distributions((batch,)))


def _slow_targets(log_rhos, discounts, rewards, q_distributions, state_distributions,
                  bootstrap_distribution, support, lambda_=1.0):
  """The mixture of the module docstring, term by term, projected atom by atom."""
  steps, batch = log_rhos.shape
  cs = lambda_ * np.minimum(1.0, np.exp(log_rhos.astype(np.float64)))
  next_distributions = np.concatenate([state_distributions[1:], bootstrap_distribution[None]])
  spacing = support[1] - support[0]
  out = np.zeros(q_distributions.shape, np.float64)

  def add(row, position, mass):
    b = (np.clip(position, support[0], support[-1]) - support[0]) / spacing
    low = int(np.floor(b))
    high = min(low + 1, len(support) - 1)
    if low == high:
      row[low] += mass
    else:
      row[low] += mass * (high - b)
      row[high] += mass * (b - low)

  for i in range(batch):
    for t in range(steps):
      trace, scale, ret = 1.0, 1.0, 0.0  # w_{t,s}, D_{t,s}, G_{t,s}
      for s in range(t, steps):
        if s > t:
          trace *= cs[s, i]
          for j, z in enumerate(support):  # - w Z(x_s, a_s) shifted to G + D z
            add(out[t, i], ret + scale * z, -trace * q_distributions[s, i, j])
        ret += scale * rewards[s, i]
        scale *= discounts[s, i]
        for j, z in enumerate(support):  # + w E_pi Z(x_{s+1}) shifted to G + D z
          add(out[t, i], ret + scale * z, trace * next_distributions[s, i, j])
  return out


@pytest.mark.parametrize('seed', [0, 1, 2])
def test_matches_a_slow_loop(seed):
  inputs = _random_inputs(np.random.default_rng(seed))
  got = dr.distributional_retrace_targets(support=SUPPORT, lambda_=0.9, **inputs).numpy()
  want = _slow_targets(support=SUPPORT.astype(np.float64), lambda_=0.9, **inputs)
  np.testing.assert_allclose(got, want, atol=1e-4)  # float32 against float64
  np.testing.assert_allclose(got.sum(-1), 1.0, atol=2e-5)  # the weights sum to 1


def test_mean_is_scalar_retrace_of_the_means_inside_the_support():
  # Rewards and values well inside [-10, 10], so nothing is clipped: the projection
  # keeps means, and the target's mean is the scalar Retrace target.
  rng = np.random.default_rng(5)
  inputs = _random_inputs(rng, steps=6, batch=4)
  inputs['rewards'] *= 0.3
  mean = lambda p: (p * SUPPORT).sum(-1)
  target = dr.distributional_retrace_targets(support=SUPPORT, **inputs).numpy()
  scalar = retrace.retrace_targets(
      inputs['log_rhos'], inputs['discounts'], inputs['rewards'],
      mean(inputs['q_distributions']), mean(inputs['state_distributions']),
      mean(inputs['bootstrap_distribution'])).numpy()
  np.testing.assert_allclose(mean(target), scalar, atol=1e-4)


def test_truncation_keeps_the_own_distribution_and_cuts_the_trace():
  rng = np.random.default_rng(7)
  inputs = _random_inputs(rng, steps=5, batch=2, terminal_probability=0.0)
  truncated = np.zeros((5, 2), bool)
  truncated[2, 0] = True
  # What follows a truncation belongs to the next episode: make it non-finite there.
  inputs['state_distributions'][3:, 0] = np.nan
  got = dr.distributional_retrace_targets(support=SUPPORT, truncated=truncated, **inputs).numpy()
  assert np.all(np.isfinite(got[:3, 0]))
  np.testing.assert_allclose(got[2, 0], inputs['q_distributions'][2, 0])
  # Steps 0..1 of env 0 equal a trace of those two steps alone, bootstrapping from
  # E_pi Z(x_2).
  alone = {k: (v[:2, :1] if k != 'bootstrap_distribution' else v[:1]) for k, v in inputs.items()}
  alone['bootstrap_distribution'] = inputs['state_distributions'][2, :1]
  want = dr.distributional_retrace_targets(support=SUPPORT, **alone).numpy()
  np.testing.assert_allclose(got[:2, :1], want, atol=1e-6)


@pytest.mark.parametrize('kwargs, message', [
    (dict(lambda_=1.5), r'lambda_ = 1.5; accepted: a number in \[0, 1\]'),
    (dict(rewards=np.zeros((4, 3), np.float32)), 'rewards'),
])
def test_bad_input_is_named(kwargs, message):
  inputs = dict(_random_inputs(np.random.default_rng(0)), support=SUPPORT)
  inputs.update(kwargs)
  with pytest.raises(ValueError, match=message):
    dr.distributional_retrace_targets(**inputs)
