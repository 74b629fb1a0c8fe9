"""ACER's policy loss and trust region (Wang et al., 2017, "Sample efficient
actor-critic with experience replay"), for discrete actions and for a Gaussian policy
over continuous ones.

Tensors are time-major [T, B, ...] (any batch shape between time and the action
axis A). With f = pi(.|x_t) the current policy, mu the behaviour policy that acted,
rho_t(a) = f(a) / mu(a), Q = Q(x_t, .) the critic and V_t = sum_a f(a) Q(a), the
policy gradient (eq. 9 of the paper) is
  g_t = min(c, rho_t(a_t)) grad log f(a_t) (Q^ret_t - V_t)
      + E_{a ~ f}[ [1 - c / rho_t(a)]_+ grad log f(a) (Q(a) - V_t) ],
the first term the truncated importance weight (c = 10 in the paper) and the second
the bias correction, which takes over exactly where truncation cut the weight.
`acer_policy_loss` is a loss whose gradient is -g_t; everything but the log-probs is
held fixed.

Trust region (section 3.3): take the gradient g of the objective with respect to
the distribution's statistics phi (here the probabilities f) and the gradient
k = grad_phi KL(f_average || f) = -f_average / f of the divergence from a Polyak
average of the policy network. The step is the solution of
  min_z 1/2 ||g - z||^2  s.t.  k . z <= delta,
  z* = g - max(0, (k . g - delta) / ||k||^2) k,
which `trust_region_projection` computes per step; the agent then back-propagates
z* through phi (a surrogate loss -sum(stop_gradient(z*) * f)).

Continuous actions (section 5): f = N(phi(x_t), sigma^2 I) with a fixed sigma, so phi
is the mean and k = (phi - phi_average) / sigma^2. The expectation in the bias
correction becomes one sample a' ~ f, and the critic is a stochastic dueling network
Q~(x, a) = V(x) + A(x, a) - mean_i A(x, u_i), u_i ~ f:
  g_t = min(c, rho_t(a_t)) grad log f(a_t) (Q^opc_t - V_t)
      + [1 - c / rho_t(a')]_+ grad log f(a') (Q~(x_t, a') - V_t),
with Q^opc Retrace with every c_i = 1 (`acer_gaussian_policy_loss`). V learns from
V^target_t = min(1, rho_t(a_t)) (Q^ret_t - Q~(x_t, a_t)) + V_t (`sdn_value_target`).
"""
import collections

import tensorflow as tf

from seed.losses import distributions
from seed.losses import shapes

AcerPolicyLoss = collections.namedtuple(
    'AcerPolicyLoss', ['loss', 'truncated_term', 'bias_correction', 'importance_weights'])
"""loss [T, B]: -(truncated_term + bias_correction), differentiable in `probs` only;
truncated_term, bias_correction [T, B]: the two parts of the objective;
importance_weights [T, B, A]: rho_t(a) of every action (gradient-stopped)."""

# Keeps log(0) and x / 0 finite where a probability underflows.
PROBABILITY_EPSILON = 1e-8


def _check_positive(name, value):
  if not float(value) > 0.0:
    raise ValueError(f'{name} = {value!r}; accepted: a number > 0.')


def acer_policy_loss(probs, behaviour_probs, actions, q_values, q_retrace,
                     importance_clip=10.0) -> AcerPolicyLoss:
  """The per-step ACER policy loss; see the module docstring.

  Args:
    probs: [T, B, A] f = pi(.|x_t), the current policy (the only input gradients
      flow into).
    behaviour_probs: [T, B, A] mu(.|x_t), the policy that acted.
    actions: [T, B] integer actions taken.
    q_values: [T, B, A] Q(x_t, .), the critic.
    q_retrace: [T, B] the Retrace targets Q^ret_t (seed.losses.retrace).
    importance_clip: c > 0, the truncation of the importance weight.

  Returns:
    AcerPolicyLoss.

  Raises:
    ValueError: if the shapes do not agree or importance_clip <= 0.
  """
  _check_positive('importance_clip', importance_clip)
  probs = tf.convert_to_tensor(probs, dtype=tf.float32)
  behaviour_probs = tf.convert_to_tensor(behaviour_probs, dtype=tf.float32)
  q_values = tf.convert_to_tensor(q_values, dtype=tf.float32)
  q_retrace = tf.convert_to_tensor(q_retrace, dtype=tf.float32)
  actions = tf.convert_to_tensor(actions)
  if probs.shape.rank is not None and probs.shape.rank < 2:
    raise ValueError(f'probs has shape {probs.shape}, expected [T, ..., A].')
  shapes.check_shape('behaviour_probs', behaviour_probs, probs.shape)
  shapes.check_shape('q_values', q_values, probs.shape)
  shapes.check_shape('actions', actions, probs.shape[:-1])
  shapes.check_shape('q_retrace', q_retrace, probs.shape[:-1])
  if not actions.dtype.is_integer:
    raise ValueError(f'actions must be integers, got dtype {actions.dtype.name}.')

  fixed_probs = tf.stop_gradient(probs)
  q_values = tf.stop_gradient(q_values)
  log_probs = tf.math.log(probs + PROBABILITY_EPSILON)
  rhos = fixed_probs / (behaviour_probs + PROBABILITY_EPSILON)
  state_values = tf.reduce_sum(fixed_probs * q_values, axis=-1)
  taken = tf.one_hot(tf.cast(actions, tf.int32), tf.shape(probs)[-1], dtype=tf.float32)
  rho_taken = tf.reduce_sum(rhos * taken, axis=-1)
  clip = tf.cast(importance_clip, tf.float32)

  truncated_weight = tf.minimum(clip, rho_taken) * (tf.stop_gradient(q_retrace) - state_values)
  truncated_term = truncated_weight * tf.reduce_sum(log_probs * taken, axis=-1)
  # E_{a~f}[w(a) grad log f(a)] with f held fixed: sum_a f(a) w(a) log f(a).
  correction_weights = (fixed_probs * tf.nn.relu(1.0 - clip / (rhos + PROBABILITY_EPSILON))
                        * (q_values - state_values[..., tf.newaxis]))
  bias_correction = tf.reduce_sum(correction_weights * log_probs, axis=-1)
  return AcerPolicyLoss(loss=-(truncated_term + bias_correction),
                        truncated_term=truncated_term, bias_correction=bias_correction,
                        importance_weights=tf.stop_gradient(rhos))


def average_kl_gradient(average_probs, probs) -> tf.Tensor:
  """k = grad_f KL(f_average || f) = -f_average / f, [..., A], gradient-stopped."""
  average_probs = tf.convert_to_tensor(average_probs, dtype=tf.float32)
  probs = tf.convert_to_tensor(probs, dtype=tf.float32)
  shapes.check_shape('average_probs', average_probs, probs.shape)
  return tf.stop_gradient(-average_probs / (probs + PROBABILITY_EPSILON))


def trust_region_projection(objective_gradient, kl_gradient, max_kl=1.0) -> tf.Tensor:
  """z* = g - max(0, (k . g - delta) / ||k||^2) k over the last axis.

  Args:
    objective_gradient: g [..., A], the gradient of the objective (to increase) with
      respect to the distribution's statistics.
    kl_gradient: k [..., A], the gradient of KL(average || current) with respect to them.
    max_kl: delta > 0, how far the linearised divergence may grow in one step.

  Returns:
    [..., A] the projected gradient; equal to g wherever k . g <= delta, and with
    k . z* = delta elsewhere.

  Raises:
    ValueError: if the shapes differ or max_kl <= 0.
  """
  _check_positive('max_kl', max_kl)
  g = tf.convert_to_tensor(objective_gradient, dtype=tf.float32)
  k = tf.convert_to_tensor(kl_gradient, dtype=tf.float32)
  shapes.check_shape('kl_gradient', k, g.shape)
  k_dot_g = tf.reduce_sum(k * g, axis=-1, keepdims=True)
  k_norm_sq = tf.reduce_sum(k * k, axis=-1, keepdims=True)
  # k = 0 only where the average assigns no mass at all: nothing to project onto.
  scale = tf.nn.relu(tf.math.divide_no_nan(k_dot_g - tf.cast(max_kl, tf.float32), k_norm_sq))
  return g - scale * k


def acer_gaussian_policy_loss(mean, behaviour_mean, actions, sampled_actions, policy_std,
                              q_opc, q_sampled, state_values,
                              importance_clip=10.0) -> AcerPolicyLoss:
  """The per-step ACER policy loss of a Gaussian policy with fixed std; see the module
  docstring.

  Args:
    mean: [T, B, A] phi(x_t), the current policy's mean (the only input gradients flow
      into).
    behaviour_mean: [T, B, A] the mean of the policy that acted (same std).
    actions: [T, B, A] the actions taken (as sampled, unclipped).
    sampled_actions: [T, B, A] a' ~ f(.|x_t), one fresh sample (held fixed).
    policy_std: sigma > 0, the std of every action dimension.
    q_opc: [T, B] Retrace targets with c_i = 1 (seed.losses.retrace with log_rhos 0).
    q_sampled: [T, B] Q~(x_t, a').
    state_values: [T, B] V(x_t).
    importance_clip: c > 0, the truncation of the importance weight.

  Returns:
    AcerPolicyLoss; its importance_weights are [T, B, 2]: rho_t(a_t) and rho_t(a').

  Raises:
    ValueError: if the shapes do not agree or policy_std or importance_clip <= 0.
  """
  _check_positive('importance_clip', importance_clip)
  _check_positive('policy_std', policy_std)
  mean = tf.convert_to_tensor(mean, dtype=tf.float32)
  if mean.shape.rank is not None and mean.shape.rank < 2:
    raise ValueError(f'mean has shape {mean.shape}, expected [T, ..., A].')
  behaviour_mean = tf.convert_to_tensor(behaviour_mean, dtype=tf.float32)
  actions = tf.stop_gradient(tf.convert_to_tensor(actions, dtype=tf.float32))
  sampled_actions = tf.stop_gradient(tf.convert_to_tensor(sampled_actions, dtype=tf.float32))
  for name, tensor in (('behaviour_mean', behaviour_mean), ('actions', actions),
                       ('sampled_actions', sampled_actions)):
    shapes.check_shape(name, tensor, mean.shape)
  q_opc, q_sampled, state_values = (
      tf.stop_gradient(tf.convert_to_tensor(x, dtype=tf.float32))
      for x in (q_opc, q_sampled, state_values))
  for name, tensor in (('q_opc', q_opc), ('q_sampled', q_sampled),
                       ('state_values', state_values)):
    shapes.check_shape(name, tensor, mean.shape[:-1])

  log_std = tf.fill(tf.shape(mean), tf.math.log(tf.cast(policy_std, tf.float32)))
  fixed_mean = tf.stop_gradient(mean)

  def log_rho(x):
    return (distributions.diag_gaussian_log_prob(x, fixed_mean, log_std)
            - distributions.diag_gaussian_log_prob(x, behaviour_mean, log_std))

  rho_taken = tf.exp(log_rho(actions))
  rho_sampled = tf.exp(log_rho(sampled_actions))
  clip = tf.cast(importance_clip, tf.float32)
  truncated_term = (tf.minimum(clip, rho_taken) * (q_opc - state_values)
                    * distributions.diag_gaussian_log_prob(actions, mean, log_std))
  bias_correction = (tf.nn.relu(1.0 - clip / (rho_sampled + PROBABILITY_EPSILON))
                     * (q_sampled - state_values)
                     * distributions.diag_gaussian_log_prob(sampled_actions, mean, log_std))
  return AcerPolicyLoss(loss=-(truncated_term + bias_correction),
                        truncated_term=truncated_term, bias_correction=bias_correction,
                        importance_weights=tf.stop_gradient(
                            tf.stack([rho_taken, rho_sampled], axis=-1)))


def gaussian_average_kl_gradient(average_mean, mean, policy_std) -> tf.Tensor:
  """k = grad_phi KL(N(phi_average, s^2) || N(phi, s^2)) = (phi - phi_average) / s^2,
  [..., A], gradient-stopped."""
  _check_positive('policy_std', policy_std)
  average_mean = tf.convert_to_tensor(average_mean, dtype=tf.float32)
  mean = tf.convert_to_tensor(mean, dtype=tf.float32)
  shapes.check_shape('average_mean', average_mean, mean.shape)
  return tf.stop_gradient((mean - average_mean) / tf.square(tf.cast(policy_std, tf.float32)))


def sdn_value_target(log_rhos, q_retrace, q_taken, state_values) -> tf.Tensor:
  """V^target_t = min(1, rho_t) (Q^ret_t - Q~(x_t, a_t)) + V_t, [T, B], gradient-stopped.

  Args:
    log_rhos: [T, B] log(f(a_t) / mu(a_t)) of the taken actions (all dimensions).
    q_retrace: [T, B] Q^ret_t.
    q_taken: [T, B] Q~(x_t, a_t).
    state_values: [T, B] V(x_t).
  """
  log_rhos, q_retrace, q_taken, state_values = (
      tf.convert_to_tensor(x, dtype=tf.float32)
      for x in (log_rhos, q_retrace, q_taken, state_values))
  for name, tensor in (('q_retrace', q_retrace), ('q_taken', q_taken),
                       ('state_values', state_values)):
    shapes.check_shape(name, tensor, log_rhos.shape)
  return tf.stop_gradient(tf.minimum(1.0, tf.exp(log_rhos)) * (q_retrace - q_taken)
                          + state_values)
