"""R2D2's sequence loss: n-step double-Q regression with value rescaling.

A pure function of arrays: it reads no flags or configuration, so the agent
decides the discount, n and epsilon and tests can call it on hand-made numbers.
The target pieces are the shared pure functions of seed/losses/nstep.py.

Reduction. With TD errors delta[t, b] = Q(x_t, a_t) - target_t on the trained
part (t = 0..T-1), m[t, b] = the n-step valid_mask and w_b the importance weights:
  loss = (1/B) sum_b w_b * (sum_t m[t, b] 0.5 delta[t, b]^2) / max(1, sum_t m[t, b])
i.e. each sequence contributes its mean squared error over its valid steps,
weighted by its importance weight, and the batch is averaged (a sequence with
no valid step contributes 0 but still counts in B). Averaging over time, as
SEED's R2D2 does, keeps one sequence's weight independent of how many of its
targets were dropped at truncations, which is what the importance weights assume.
"""
import collections

import tensorflow as tf

from seed.losses import nstep

# loss: scalar; abs_td_errors: [T, B] |delta|, 0 where invalid, gradient-stopped;
# valid_mask: [T, B] bool; q_taken and targets: [T, B] Q(x_t, a_t) and its target,
# gradient-stopped; logs: {name: scalar} for logging only (sequence_logs of the above).
LossOutputs = collections.namedtuple(
    'LossOutputs', ['loss', 'abs_td_errors', 'valid_mask', 'q_taken', 'targets', 'logs'])


def _masked_mean(x: tf.Tensor, mask: tf.Tensor) -> tf.Tensor:
  """Mean of `x` where `mask`, 0 when the mask is empty."""
  mask = tf.cast(mask, x.dtype)
  return tf.reduce_sum(x * mask) / tf.maximum(tf.reduce_sum(mask), 1.0)


def r2d2_loss(online_q, target_q, actions, rewards, terminated, truncated,
              importance_weights, *, discount: float, n_steps: int,
              rescaling_eps=1e-3) -> LossOutputs:
  """R2D2 loss over the trained part of B sequences, all time-major.

  Args:
    online_q: [T+1, B, A] online-network Q values (rescaled space) at x_0..x_T,
      differentiable.
    target_q: [T+1, B, A] target-network Q values at the same states.
    actions: [T, B] integer actions a_0..a_{T-1} (unroll action[:-1]).
    rewards: [T, B] rewards of the transitions t -> t+1 (unroll reward[1:]).
    terminated: [T, B] bool, those transitions ended the episode (terminated[1:]).
    truncated: [T, B] bool, those transitions hit a time limit (truncated[1:]).
    importance_weights: [B] prioritized-replay importance weights.
    discount: gamma in [0, 1].
    n_steps: n >= 1 of the n-step targets.
    rescaling_eps: eps of the value rescaling h; None for unrescaled targets.

  Returns:
    LossOutputs, see above; logs hold mean_q (mean Q(x_t, a_t) over valid steps,
    rescaled space), mean_target, mean_abs_td, max_abs_td and valid_fraction.
  """
  online_q = tf.convert_to_tensor(online_q, tf.float32)
  target_q = tf.convert_to_tensor(target_q, tf.float32)
  actions = tf.cast(actions, tf.int32)
  importance_weights = tf.convert_to_tensor(importance_weights, tf.float32)
  discounts = discount * (1.0 - tf.cast(tf.cast(terminated, tf.bool), tf.float32))

  # Double Q: the online network picks a_{t+1}, the target network values it.
  bootstrap_q = nstep.double_q_bootstrap(online_q[1:], target_q[1:])
  targets, valid = nstep.nstep_double_q_targets(
      rewards, discounts, bootstrap_q, truncated=truncated, n_steps=n_steps,
      rescaling_eps=rescaling_eps)
  q_taken = tf.gather(online_q[:-1], actions, axis=-1, batch_dims=2)
  # tf.where, not a product: an invalid step's error must not reach the gradient.
  td_errors = tf.where(valid, q_taken - targets, 0.0)

  valid_float = tf.cast(valid, tf.float32)
  valid_steps = tf.reduce_sum(valid_float, axis=0)
  per_sequence = (tf.reduce_sum(0.5 * tf.square(td_errors), axis=0)
                  / tf.maximum(valid_steps, 1.0))
  loss = tf.reduce_mean(importance_weights * per_sequence)

  abs_td_errors = tf.stop_gradient(tf.abs(td_errors))
  q_taken = tf.stop_gradient(q_taken)
  return LossOutputs(loss=loss, abs_td_errors=abs_td_errors, valid_mask=valid,
                     q_taken=q_taken, targets=targets,
                     logs=sequence_logs(q_taken, targets, abs_td_errors, valid))


def sequence_logs(q_taken, targets, abs_td_errors, valid):
  """mean_q (mean Q(x_t, a_t) over valid steps, rescaled space), mean_target,
  mean_abs_td, max_abs_td and valid_fraction of [T, B] arrays: of one batch, or of a
  batch's per-device shards put back together (seed.agents.common.learning)."""
  return {
      'mean_q': _masked_mean(q_taken, valid),
      'mean_target': _masked_mean(targets, valid),
      'mean_abs_td': _masked_mean(abs_td_errors, valid),
      'max_abs_td': tf.reduce_max(abs_td_errors),
      'valid_fraction': tf.reduce_mean(tf.cast(valid, tf.float32)),
  }
