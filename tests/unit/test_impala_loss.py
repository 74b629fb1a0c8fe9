"""Tests of the IMPALA loss against hand-worked and NumPy-computed values."""
import numpy as np
import pytest

tf = pytest.importorskip('tensorflow')

from seed.agents.vtrace import loss as loss_lib  # pylint: disable=g-import-not-at-top


def _log_softmax(logits):
  shifted = logits - logits.max(-1, keepdims=True)
  return shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))


def _loss(**overrides):
  """impala_loss on a one-step, one-env, on-policy case; overrides replace inputs."""
  inputs = dict(
      target_logits=np.array([[[1.0, 0.0, -1.0]]], np.float32),
      behaviour_logits=np.array([[[1.0, 0.0, -1.0]]], np.float32),
      actions=np.array([[2]], np.int32),
      values=np.array([[0.2]], np.float32),
      bootstrap_value=np.array([0.5], np.float32),
      rewards=np.array([[1.0]], np.float32),
      discounts=np.array([[0.9]], np.float32),
      truncated=np.array([[False]]),
      baseline_cost=0.5, entropy_cost=0.01)
  inputs.update(overrides)
  return loss_lib.impala_loss(**inputs)[:2]  # (total_loss, components)


def test_one_step_on_policy_by_hand():
  total, parts = _loss()
  # On-policy, rho = 1: vs = r + gamma * V(x_1) = 1 + 0.9 * 0.5 = 1.45, and the
  # advantage is vs - V(x_0) = 1.25.
  log_pi = _log_softmax(np.array([1.0, 0.0, -1.0]))
  probs = np.exp(log_pi)
  expected_policy = -log_pi[2] * 1.25
  expected_baseline = 0.5 * 0.5 * 1.25**2
  expected_entropy = -(probs * log_pi).sum()
  np.testing.assert_allclose(parts['policy_loss'], expected_policy, rtol=1e-5)
  np.testing.assert_allclose(parts['baseline_loss'], expected_baseline, rtol=1e-5)
  np.testing.assert_allclose(parts['entropy'], expected_entropy, rtol=1e-5)
  np.testing.assert_allclose(parts['entropy_loss'], -0.01 * expected_entropy, rtol=1e-5)
  np.testing.assert_allclose(parts['mean_rho'], 1.0, rtol=1e-6)
  np.testing.assert_allclose(
      total, expected_policy + expected_baseline - 0.01 * expected_entropy, rtol=1e-5)


def test_multi_step_on_policy_matches_numpy_sum_over_time_mean_over_batch():
  rng = np.random.default_rng(0)
  steps, envs, num_actions = 4, 3, 5
  logits = rng.normal(size=(steps, envs, num_actions)).astype(np.float32)
  actions = rng.integers(0, num_actions, (steps, envs)).astype(np.int32)
  values = rng.normal(size=(steps, envs)).astype(np.float32)
  bootstrap = rng.normal(size=envs).astype(np.float32)
  rewards = rng.normal(size=(steps, envs)).astype(np.float32)
  discounts = (0.95 * (rng.random((steps, envs)) > 0.3)).astype(np.float32)

  # On-policy V-trace is the n-step return: vs_t = r_t + gamma_t * vs_{t+1}.
  vs = np.zeros_like(values)
  next_vs = bootstrap
  for t in reversed(range(steps)):
    vs[t] = rewards[t] + discounts[t] * next_vs
    next_vs = vs[t]
  vs_tp1 = np.concatenate([vs[1:], bootstrap[None]], 0)
  advantages = rewards + discounts * vs_tp1 - values
  log_pi = _log_softmax(logits)
  log_pi_a = np.take_along_axis(log_pi, actions[..., None], -1)[..., 0]
  entropy = -(np.exp(log_pi) * log_pi).sum(-1)

  loss = loss_lib.impala_loss(
      logits, logits, actions, values, bootstrap, rewards, discounts,
      truncated=np.zeros((steps, envs), bool), baseline_cost=0.25, entropy_cost=0.1)
  total, parts = loss.total_loss, loss.components
  np.testing.assert_allclose(
      parts['policy_loss'], (-log_pi_a * advantages).sum(0).mean(), rtol=1e-5)
  np.testing.assert_allclose(
      parts['baseline_loss'], 0.25 * (0.5 * (vs - values)**2).sum(0).mean(), rtol=1e-5)
  np.testing.assert_allclose(parts['entropy_loss'], -0.1 * entropy.sum(0).mean(), rtol=1e-5)
  np.testing.assert_allclose(parts['entropy'], entropy.mean(), rtol=1e-5)
  np.testing.assert_allclose(
      total, parts['policy_loss'] + parts['baseline_loss'] + parts['entropy_loss'],
      rtol=1e-6)
  # A prioritized replay's priority: each unroll's mean |vs - V| over its steps.
  np.testing.assert_allclose(loss.unroll_priorities, np.abs(vs - values).mean(0), rtol=1e-5)

  # Importance weights scale each unroll's terms before the batch mean.
  weights = np.array([0.5, 1.0, 0.25], np.float32)
  weighted = loss_lib.impala_loss(
      logits, logits, actions, values, bootstrap, rewards, discounts,
      truncated=np.zeros((steps, envs), bool), baseline_cost=0.25, entropy_cost=0.1,
      unroll_weights=weights).components
  np.testing.assert_allclose(
      weighted['policy_loss'], ((-log_pi_a * advantages).sum(0) * weights).mean(), rtol=1e-5)
  np.testing.assert_allclose(
      weighted['baseline_loss'], 0.25 * ((0.5 * (vs - values)**2).sum(0) * weights).mean(),
      rtol=1e-5)
  np.testing.assert_allclose(weighted['entropy_loss'],
                             -0.1 * (entropy.sum(0) * weights).mean(), rtol=1e-5)


def test_entropy_bonus_lowers_the_loss_of_a_more_uniform_policy():
  # Zero rewards, values and bootstrap make every advantage and error zero, so
  # only the entropy term is left.
  zeros = dict(values=np.zeros((1, 1), np.float32),
               bootstrap_value=np.zeros([1], np.float32),
               rewards=np.zeros((1, 1), np.float32))
  uniform = np.zeros((1, 1, 3), np.float32)
  peaked = np.array([[[5.0, 0.0, 0.0]]], np.float32)
  uniform_total, uniform_parts = _loss(target_logits=uniform, behaviour_logits=uniform,
                                       **zeros)
  peaked_total, _ = _loss(target_logits=peaked, behaviour_logits=peaked, **zeros)
  assert float(uniform_parts['entropy_loss']) < 0.0
  np.testing.assert_allclose(uniform_parts['entropy'], np.log(3.0), rtol=1e-6)
  np.testing.assert_allclose(uniform_total, -0.01 * np.log(3.0), rtol=1e-5)
  assert float(uniform_total) < float(peaked_total)


def test_baseline_gradient_treats_vtrace_target_as_constant():
  values = tf.constant([[0.2], [0.4]], tf.float32)  # T = 2, B = 1.
  rewards = np.array([[1.0], [0.0]], np.float32)
  discounts = np.array([[0.5], [0.5]], np.float32)
  logits = np.zeros((2, 1, 2), np.float32)
  with tf.GradientTape() as tape:
    tape.watch(values)
    parts = loss_lib.impala_loss(
        logits, logits, np.zeros((2, 1), np.int32), values,
        np.array([2.0], np.float32), rewards, discounts, None,
        baseline_cost=2.0, entropy_cost=0.0).components
  # vs_1 = 0 + 0.5 * 2.0 = 1.0; vs_0 = 1 + 0.5 * vs_1 = 1.5.
  vs = np.array([[1.5], [1.0]])
  np.testing.assert_allclose(
      parts['baseline_loss'], 2.0 * 0.5 * ((vs - values.numpy())**2).sum(), rtol=1e-5)
  gradient = tape.gradient(parts['baseline_loss'], values)
  # d/dv 0.5 c (vs - v)^2 = -c (vs - v) only if vs does not depend on v.
  np.testing.assert_allclose(gradient, -2.0 * (vs - values.numpy()), rtol=1e-5)


@pytest.mark.parametrize('reward, sign', [(1.0, -1.0), (-1.0, 1.0)])
def test_policy_gradient_pushes_the_taken_action_with_the_advantage(reward, sign):
  logits = tf.Variable([[[0.0, 0.0, 0.0]]])
  with tf.GradientTape() as tape:
    _, parts = _loss(target_logits=logits, behaviour_logits=np.zeros((1, 1, 3), np.float32),
                     values=np.zeros((1, 1), np.float32),
                     bootstrap_value=np.zeros([1], np.float32),
                     rewards=np.array([[reward]], np.float32))
  gradient = tape.gradient(parts['policy_loss'], logits).numpy()[0, 0]
  # Descent on the loss raises the taken action's logit after a positive
  # advantage and lowers it after a negative one.
  assert np.sign(gradient[2]) == sign
  assert np.all(np.sign(gradient[:2]) == -sign)


def test_truncated_transition_adds_no_policy_or_baseline_loss():
  total, parts = _loss(truncated=np.array([[True]]), entropy_cost=0.0)
  assert float(parts['policy_loss']) == 0.0
  assert float(parts['baseline_loss']) == 0.0
  assert float(total) == 0.0


def test_rejects_logits_of_the_wrong_rank():
  with pytest.raises(ValueError, match='rank 3'):
    _loss(target_logits=np.zeros((1, 3), np.float32))


def test_normalized_advantages_by_hand_leave_truncated_transitions_at_zero():
  advantages = np.array([[1.0, 3.0], [5.0, 100.0]], np.float32)
  truncated = np.array([[False, False], [False, True]])
  # Over 1, 3, 5: mean 3, variance (4 + 0 + 4) / 3, std sqrt(8/3) = 1.63299.
  np.testing.assert_allclose(loss_lib.normalized_advantages(advantages, truncated),
                             [[-1.2247449, 0.0], [1.2247449, 0.0]], rtol=1e-5)


def test_normalized_advantages_weigh_the_policy_gradient_by_hand():
  logits = np.array([[[1.0, 0.0, -1.0], [0.0, 0.5, 0.0]]], np.float32)
  common = dict(target_logits=logits, behaviour_logits=logits, actions=np.array([[2, 1]]),
                values=np.array([[0.2, 0.25]], np.float32),
                bootstrap_value=np.array([0.5, 0.0], np.float32),
                rewards=np.array([[1.0, 0.0]], np.float32),
                discounts=np.array([[0.9, 0.9]], np.float32), truncated=None)
  plain = _loss(**common)[1]
  normalized = _loss(**common, normalize_advantages=True)[1]
  # Advantages 1 + 0.9 * 0.5 - 0.2 = 1.25 and 0 + 0 - 0.25 = -0.25: mean 0.5, std
  # 0.75, so normalized +1 and -1.
  log_pi = [_log_softmax(logits[0, 0])[2], _log_softmax(logits[0, 1])[1]]
  np.testing.assert_allclose(plain['policy_loss'],
                             (-log_pi[0] * 1.25 - log_pi[1] * -0.25) / 2, rtol=1e-5)
  np.testing.assert_allclose(normalized['policy_loss'], (-log_pi[0] + log_pi[1]) / 2,
                             rtol=1e-5)
  # The baseline regresses on the V-trace targets, untouched.
  np.testing.assert_allclose(normalized['baseline_loss'], plain['baseline_loss'], rtol=1e-6)


def test_value_scale_divides_value_errors_and_advantages_by_hand():
  total, parts, value_targets, _ = loss_lib.impala_loss(
      target_logits=np.array([[[1.0, 0.0, -1.0]]], np.float32),
      behaviour_logits=np.array([[[1.0, 0.0, -1.0]]], np.float32),
      actions=np.array([[2]], np.int32), values=np.array([[0.2]], np.float32),
      bootstrap_value=np.array([0.5], np.float32), rewards=np.array([[1.0]], np.float32),
      discounts=np.array([[0.9]], np.float32), truncated=None, baseline_cost=0.5,
      entropy_cost=0.0, value_scale=2.0)
  # vs = 1 + 0.9 * 0.5 = 1.45 (unnormalised); advantage 1.25 / sigma = 0.625.
  np.testing.assert_allclose(value_targets, [[1.45]], rtol=1e-6)
  log_pi = _log_softmax(np.array([1.0, 0.0, -1.0]))
  np.testing.assert_allclose(parts['policy_loss'], -log_pi[2] * 0.625, rtol=1e-5)
  np.testing.assert_allclose(parts['baseline_loss'], 0.5 * 0.5 * 0.625**2, rtol=1e-5)
  np.testing.assert_allclose(total, parts['policy_loss'] + parts['baseline_loss'], rtol=1e-6)


# --- policy_clip: PPO's clipped surrogate on V-trace's advantage (APPO) ---


def test_policy_clip_on_policy_by_hand():
  # On-policy the ratio is 1 (its value; its gradient is that of log pi): the surrogate
  # is A = r + gamma * vs_1 - V(x_0) = 1 + 0.9 * 0.5 - 0.2 = 1.25, with no log pi factor.
  _, parts = _loss(policy_clip=0.1)
  np.testing.assert_allclose(parts['policy_loss'], -1.25, rtol=1e-5)


def test_policy_clip_off_policy_by_hand_clips_only_the_gain():
  # pi(a) / mu(a) = 2 for the taken action: the V-trace advantage has no rho factor
  # (rho-bar clips it to 1 in vs: vs_0 = V + min(1, 2) * 1.25 = 1.45, A = 1.25), and the
  # surrogate takes min(2 * 1.25, 1.1 * 1.25) = 1.375.
  target = np.log(np.array([[[0.2, 0.2, 0.6]]], np.float32))
  behaviour = np.log(np.array([[[0.35, 0.35, 0.3]]], np.float32))
  _, parts = _loss(policy_clip=0.1, target_logits=target, behaviour_logits=behaviour)
  np.testing.assert_allclose(parts['policy_loss'], -1.1 * 1.25, rtol=1e-5)
  # A negative advantage (-0.55 + 0.9 * 0.5 - 0.2 = -0.3) is not clipped on that side:
  # min(2 * -0.3, 1.1 * -0.3) = -0.6.
  _, parts = _loss(policy_clip=0.1, target_logits=target, behaviour_logits=behaviour,
                   rewards=np.array([[-0.55]], np.float32))
  np.testing.assert_allclose(parts['policy_loss'], 2.0 * 0.3, rtol=1e-5)


def test_policy_clip_stops_the_gradient_past_the_clip():
  behaviour = np.log(np.array([[[0.35, 0.35, 0.3]]], np.float32))
  for taken_probability, moves in ((0.6, False), (0.31, True)):
    rest = (1.0 - taken_probability) / 2
    target = tf.Variable(np.log(np.array([[[rest, rest, taken_probability]]], np.float32)))
    with tf.GradientTape() as tape:
      policy_loss = loss_lib.impala_loss(
          target_logits=target, behaviour_logits=behaviour, actions=np.array([[2]], np.int32),
          values=np.array([[0.2]], np.float32), bootstrap_value=np.array([0.5], np.float32),
          rewards=np.array([[1.0]], np.float32), discounts=np.array([[0.9]], np.float32),
          truncated=None, baseline_cost=0.5, entropy_cost=0.0,
          policy_clip=0.1).components['policy_loss']
    gradient = tape.gradient(policy_loss, target).numpy()
    assert np.any(gradient != 0.0) == moves, (taken_probability, gradient)


def test_policy_clip_matches_a_slow_reference_loop():
  rng = np.random.default_rng(1)
  steps, envs, num_actions, clip = 5, 3, 4, 0.2
  target = rng.normal(size=(steps, envs, num_actions)).astype(np.float32)
  behaviour = (target + 0.3 * rng.normal(size=target.shape)).astype(np.float32)
  actions = rng.integers(0, num_actions, (steps, envs)).astype(np.int32)
  values = rng.normal(size=(steps, envs)).astype(np.float32)
  bootstrap = rng.normal(size=envs).astype(np.float32)
  rewards = rng.normal(size=(steps, envs)).astype(np.float32)
  discounts = (0.9 * (rng.random((steps, envs)) > 0.2)).astype(np.float32)
  truncated = rng.random((steps, envs)) > 0.85
  loss = loss_lib.impala_loss(
      target_logits=target, behaviour_logits=behaviour, actions=actions, values=values,
      bootstrap_value=bootstrap, rewards=rewards, discounts=discounts, truncated=truncated,
      baseline_cost=0.5, entropy_cost=0.01, lambda_=0.95, policy_clip=clip)
  vs = loss.value_targets.numpy()
  expected = 0.0
  for b in range(envs):
    for t in range(steps):
      if truncated[t, b]:
        continue
      next_vs = vs[t + 1, b] if t + 1 < steps else bootstrap[b]
      advantage = rewards[t, b] + discounts[t, b] * next_vs - values[t, b]
      ratio = np.exp(_log_softmax(target[t, b])[actions[t, b]]
                     - _log_softmax(behaviour[t, b])[actions[t, b]])
      expected -= min(ratio * advantage,
                      np.clip(ratio, 1 - clip, 1 + clip) * advantage) / envs
  np.testing.assert_allclose(loss.components['policy_loss'], expected, rtol=1e-4, atol=1e-5)


def test_one_step_advantages_by_hand():
  advantages = loss_lib.one_step_advantages(
      vs=np.array([[1.0], [2.0]], np.float32), values=np.array([[0.5], [1.5]], np.float32),
      bootstrap_value=np.array([3.0], np.float32),
      rewards=np.array([[0.1], [0.2]], np.float32),
      discounts=np.array([[0.9], [0.0]], np.float32), truncated=np.array([[False], [True]]))
  # t=0: 0.1 + 0.9 * 2.0 - 0.5 = 1.4; t=1 truncated: 0.
  np.testing.assert_allclose(advantages.numpy(), [[1.4], [0.0]], rtol=1e-6)
