"""Reactor's beta-leave-one-out policy gradient (Gruslys et al., 2018, section 3.1).

With f = pi(.|x) the current policy, mu the behaviour policy that took a^ at x, Q the
critic and R a return estimate of Q(x, a^) (Reactor: the Retrace target), the
gradient with respect to the probabilities is
  G = beta (R - Q(a^)) grad f(a^) + sum_a Q(a) grad f(a),
  beta = min(c, 1 / mu(a^)).
The second term uses the critic for every action; the first corrects the taken one
with its return. With beta = 1 / mu (c large enough) the estimate is unbiased, since
E_{a^ ~ mu}[(1 / mu(a^)) (R(a^) - Q(a^)) e_{a^}] = R - Q; a smaller c trades that bias
for variance. Gradients flow into the probabilities only, not their logarithms.
"""
import collections

import tensorflow as tf

from seed.losses import shapes

BetaLooLoss = collections.namedtuple(
    'BetaLooLoss', ['loss', 'leave_one_out_term', 'expected_q_term', 'betas'])
"""loss [T, B]: -(leave_one_out_term + expected_q_term), differentiable in `probs` only;
betas [T, B]: min(c, 1 / mu(a^)), gradient-stopped."""


def beta_loo_policy_loss(probs, behaviour_probs, actions, q_values, returns,
                         beta_clip) -> BetaLooLoss:
  """The per-step beta-LOO loss; see the module docstring.

  Args:
    probs: [T, B, A] pi(.|x_t) (the only input gradients flow into).
    behaviour_probs: [T, B, A] mu(.|x_t).
    actions: [T, B] integer actions taken.
    q_values: [T, B, A] Q(x_t, .).
    returns: [T, B] R, the return estimate of the taken action.
    beta_clip: c > 0.

  Raises:
    ValueError: if the shapes disagree or beta_clip <= 0.
  """
  if not float(beta_clip) > 0.0:
    raise ValueError(f'beta_clip = {beta_clip!r}; accepted: a number > 0.')
  probs = tf.convert_to_tensor(probs, tf.float32)
  if probs.shape.rank is not None and probs.shape.rank < 2:
    raise ValueError(f'probs has shape {probs.shape}, expected [T, ..., A].')
  behaviour_probs, q_values = (tf.stop_gradient(tf.convert_to_tensor(x, tf.float32))
                               for x in (behaviour_probs, q_values))
  returns = tf.stop_gradient(tf.convert_to_tensor(returns, tf.float32))
  actions = tf.convert_to_tensor(actions)
  shapes.check_shape('behaviour_probs', behaviour_probs, probs.shape)
  shapes.check_shape('q_values', q_values, probs.shape)
  shapes.check_shape('actions', actions, probs.shape[:-1])
  shapes.check_shape('returns', returns, probs.shape[:-1])
  if not actions.dtype.is_integer:
    raise ValueError(f'actions must be integers, got dtype {actions.dtype.name}.')
  taken = tf.one_hot(tf.cast(actions, tf.int32), tf.shape(probs)[-1], dtype=tf.float32)
  mu_taken = tf.reduce_sum(behaviour_probs * taken, axis=-1)
  betas = tf.minimum(tf.cast(beta_clip, tf.float32), 1.0 / mu_taken)
  q_taken = tf.reduce_sum(q_values * taken, axis=-1)
  leave_one_out = betas * (returns - q_taken) * tf.reduce_sum(probs * taken, axis=-1)
  expected_q = tf.reduce_sum(q_values * probs, axis=-1)
  return BetaLooLoss(loss=-(leave_one_out + expected_q), leave_one_out_term=leave_one_out,
                     expected_q_term=expected_q, betas=tf.stop_gradient(betas))
