"""Reactor's loss of a batch of sequences (Gruslys et al., 2018): the critic's cross-entropy
against distributional Retrace targets, and the beta-leave-one-out policy gradient with an
entropy bonus, weighted by the replay's importance weights. A pure function of the
network's outputs; the targets and the policy term are seed/losses/'s
distributional_retrace and beta_loo."""
from typing import NamedTuple, Optional

import tensorflow as tf

from seed.losses import beta_loo
from seed.losses import distributional_retrace


class ReactorLoss(NamedTuple):
  """What reactor_loss gives the agent, time-major [T, B] per step."""
  total_loss: tf.Tensor  # what the optimizer minimises
  q_loss: tf.Tensor  # the critic's weighted cross-entropy, a mean over the steps
  policy: beta_loo.BetaLooLoss  # the policy term per step and its betas
  entropy: tf.Tensor  # the policy's entropy per step
  log_rhos: tf.Tensor  # log pi/mu of the taken actions (gradient-stopped)
  q_values: tf.Tensor  # [T, B, A] Q(x, .) from the critic's distributions
  returns: tf.Tensor  # the Retrace targets' means


def reactor_loss(logits, atom_logits, bootstrap_atom_logits: Optional[tf.Tensor],
                 behaviour_logits, actions, taken, rewards, discounts, truncated, weights,
                 support, *, retrace_lambda: float, beta_clip: float, entropy_cost: float,
                 q_cost: float) -> ReactorLoss:
  """The loss of T + 1 steps of B sequences, time-major.

  Args:
    logits: [T + 1, B, A] the policy's; atom_logits: [T + 1, B, A, N] the critic's.
    bootstrap_atom_logits: the target network's atom logits, or None: the targets then
      bootstrap from the critic's own distributions, gradient-stopped.
    behaviour_logits: [T, B, A] what the actors acted with; actions: [T, B] int32 and
      `taken` their one-hot [T, B, A].
    rewards, discounts, truncated: [T, B] of the transitions t -> t + 1.
    weights: [T, B] each step's weight: the sequence's importance weight, 0 where
      truncated.
    support: [N] the atoms z_j.
  """
  steps_in_batch = tf.cast(tf.size(weights), tf.float32)
  probs = tf.nn.softmax(logits)
  distributions = tf.nn.softmax(atom_logits)                 # [T + 1, B, A, N]
  fixed_probs = tf.stop_gradient(probs)
  fixed_distributions = tf.stop_gradient(distributions)
  bootstrap_distributions = (fixed_distributions if bootstrap_atom_logits is None
                             else tf.nn.softmax(bootstrap_atom_logits))
  state_distributions = tf.reduce_sum(
      fixed_probs[..., tf.newaxis] * bootstrap_distributions, axis=2)  # [T + 1, B, N]
  taken_distributions = tf.reduce_sum(taken[..., tf.newaxis] * distributions[:-1], axis=2)
  taken_bootstrap = tf.reduce_sum(taken[..., tf.newaxis] * bootstrap_distributions[:-1], axis=2)
  log_rhos = tf.stop_gradient(tf.reduce_sum(
      (tf.nn.log_softmax(logits[:-1]) - tf.nn.log_softmax(behaviour_logits)) * taken, -1))
  targets = distributional_retrace.distributional_retrace_targets(
      log_rhos, discounts, rewards, tf.stop_gradient(taken_bootstrap),
      state_distributions[:-1], state_distributions[-1], support,
      truncated=truncated, lambda_=retrace_lambda)
  cross_entropy = -tf.reduce_sum(targets * tf.math.log(taken_distributions + 1e-8), axis=-1)
  q_loss = tf.reduce_sum(weights * cross_entropy) / steps_in_batch
  q_values = tf.reduce_sum(fixed_distributions[:-1] * support, axis=-1)  # [T, B, A]
  returns = tf.reduce_sum(targets * support, axis=-1)
  policy = beta_loo.beta_loo_policy_loss(
      probs[:-1], tf.nn.softmax(behaviour_logits), actions, q_values, returns, beta_clip)
  entropy = -tf.reduce_sum(probs[:-1] * tf.nn.log_softmax(logits[:-1]), axis=-1)
  policy_loss = tf.reduce_sum(weights * (policy.loss - entropy_cost * entropy))
  total_loss = policy_loss / steps_in_batch + q_cost * q_loss
  return ReactorLoss(total_loss, q_loss, policy, entropy, log_rhos, q_values, returns)
