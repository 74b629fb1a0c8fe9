"""n-step double-Q targets with value rescaling (R2D2, Kapturowski et al., 2019).

All tensors are time-major. For an unroll of T + 1 steps (see seed/agents/common/base.py)
there are T transitions t -> t+1, t = 0..T-1, and the caller passes, for each:
  rewards[t]      reward of the transition t -> t+1        (= unroll reward[1:]),
  discounts[t]    gamma * (1 - terminated) of it           (from terminated[1:]),
  truncated[t]    it hit a time limit                      (= truncated[1:]),
  bootstrap_q[t]  Q_target(x_{t+1}, argmax_a Q_online(x_{t+1}, a)), the double-Q
                  value of the state it led to (see `double_q_bootstrap`), in the
                  network's rescaled space (the Q network learns h(Q)).
With D_{t,k} = prod_{i=t}^{t+k-1} discounts[i] (D_{t,0} = 1) and the window length
m_t = min(n, T - t), the target of transition t (the Q(x_t, a_t) regression target) is
  G_t      = sum_{k=0}^{m_t-1} D_{t,k} rewards[t+k] + D_{t,m_t} h^-1(bootstrap_q[t+m_t-1])
  target_t = h(G_t),  h = signed_hyperbolic (skipped when rescaling_eps is None).
For n = 1 this is the one-step TD target h(r_t + discount_t h^-1(q(x_{t+1}))).

Episode ends inside the window:
  * Termination (discounts[j] = 0 for some j in the window) stops the sum: D_{t,k} = 0
    for k > j - t, so neither later rewards (the next episode's) nor the bootstrap
    count. That is the true return of a finished episode, so the target is valid.
  * Truncation (truncated[j], j in the window, with no termination at t..j-1): the
    window stops at j, rewards up to and including rewards[j] are summed, but the
    bootstrap would need the value of the true x_{j+1}, which was never observed
    (x_{j+1} in the unroll is the next episode's reset state). The target is unknown,
    so it is marked invalid: valid_mask[t] = False and targets[t] = 0. This drops
    the targets of transitions j - n + 1 .. j of that episode (those whose window
    reaches j); the loss and priorities must use valid_mask.
  * Terminated and truncated on the same transition: termination wins (the value of
    a terminal state is 0, nothing is unknown), so the target is valid.
  Values of the next episode (rewards, bootstrap_q, even non-finite ones) never leak
  into a target: they are selected away with tf.where, not multiplied by 0.

End of the unroll: windows are cut at T rather than dropped. For t > T - n the window
is the m_t = T - t transitions left, bootstrapping from the last state x_T with
weight D_{t,m_t} (gamma^(T-t) without episode ends): a shorter n-step target, as in
SEED's R2D2. Every transition gets a target, the last one a one-step target.
"""
import collections
from typing import Optional

import tensorflow as tf

from seed.losses import shapes

from seed.losses import value_rescaling

NStepTargets = collections.namedtuple('NStepTargets', ['targets', 'valid_mask'])



def double_q_bootstrap(online_q, target_q):
  """Q_target(x, argmax_a Q_online(x, a)) for every state: the double-Q bootstrap.

  Rescaling is monotonic, so the argmax is the same in rescaled and raw space.

  Args:
    online_q: [T, B, A] online-network Q values at x_1..x_T.
    target_q: [T, B, A] target-network Q values at the same states.

  Returns:
    [T, B] float32, gradient-stopped.
  """
  online_q = tf.convert_to_tensor(online_q, dtype=tf.float32)
  target_q = tf.convert_to_tensor(target_q, dtype=tf.float32)
  if online_q.shape.rank is not None and online_q.shape.rank != 3:
    raise ValueError(f'online_q has shape {online_q.shape}, expected rank 3 [T, B, A].')
  shapes.check_shape('target_q', target_q, online_q.shape)
  best_actions = tf.argmax(online_q, axis=-1, output_type=tf.int32)
  values = tf.gather(target_q, best_actions, axis=-1, batch_dims=2)
  return tf.stop_gradient(values)


def nstep_double_q_targets(rewards, discounts, bootstrap_q, truncated=None,
                           n_steps: int = 5, rescaling_eps: Optional[float] = 1e-3):
  """n-step targets and their validity; see the module docstring for the exact rule.

  Args:
    rewards: [T, B] rewards of the transitions t -> t+1.
    discounts: [T, B] gamma * (1 - terminated) of each transition.
    bootstrap_q: [T, B] double-Q value of x_{t+1} in rescaled space (network output).
    truncated: optional [T, B] bool (or 0/1), the transition hit a time limit.
    n_steps: n >= 1, the longest window.
    rescaling_eps: eps of h / h^-1; None for plain (unrescaled) n-step targets.

  Returns:
    NStepTargets(targets [T, B] float32 gradient-stopped, 0 where invalid;
                 valid_mask [T, B] bool).

  Raises:
    ValueError: on mismatched shapes or n_steps < 1.
  """
  if not isinstance(n_steps, int) or n_steps < 1:
    raise ValueError(f'n_steps must be an int >= 1, got {n_steps!r}.')
  rewards = tf.convert_to_tensor(rewards, dtype=tf.float32)
  discounts = tf.convert_to_tensor(discounts, dtype=tf.float32)
  bootstrap_q = tf.convert_to_tensor(bootstrap_q, dtype=tf.float32)
  if rewards.shape.rank is not None and rewards.shape.rank != 2:
    raise ValueError(f'rewards has shape {rewards.shape}, expected rank 2 [T, B].')
  time_batch = rewards.shape if rewards.shape.rank is not None else [None, None]
  shapes.check_shape('discounts', discounts, time_batch)
  shapes.check_shape('bootstrap_q', bootstrap_q, time_batch)
  if truncated is None:
    truncated = tf.zeros_like(rewards, dtype=tf.bool)
  else:
    truncated = tf.convert_to_tensor(truncated)
    shapes.check_shape('truncated', truncated, time_batch)
    truncated = tf.cast(truncated, tf.bool)  # Only "nonzero" matters.

  if rescaling_eps is None:
    bootstrap_values = bootstrap_q
  else:
    bootstrap_values = value_rescaling.signed_parabolic(bootstrap_q, rescaling_eps)

  # Pad time with n - 1 neutral transitions (reward 0, discount 1, not truncated), so
  # the windows of the last steps run to T and then change nothing: the sum and
  # D_{t,m_t} are those of the cut window. The bootstrap is padded with copies of
  # the last state's value, so window t always bootstraps from padded[t + n - 1],
  # which is x_{min(t + n, T)}.
  num_steps = tf.shape(rewards)[0]
  pad = n_steps - 1

  def padded(x, fill):
    tail = tf.fill(tf.concat([[pad], tf.shape(x)[1:]], axis=0), tf.cast(fill, x.dtype))
    return tf.concat([x, tail], axis=0)

  rewards_p = padded(rewards, 0.0)
  discounts_p = padded(discounts, 1.0)
  truncated_p = padded(truncated, False)
  bootstrap_p = tf.concat([bootstrap_values] + [bootstrap_values[-1:]] * pad, axis=0)

  returns = tf.zeros_like(rewards)
  discount = tf.ones_like(rewards)  # D_{t,k}.
  alive = tf.ones_like(truncated)  # No termination or truncation at t..t+k-1.
  valid = tf.ones_like(truncated)
  for k in range(n_steps):  # n is small and static: unrolled, T stays dynamic.
    reward_k = rewards_p[k:k + num_steps]
    discount_k = discounts_p[k:k + num_steps]
    truncated_k = truncated_p[k:k + num_steps]
    returns = tf.where(alive, returns + discount * reward_k, returns)
    terminated_k = tf.equal(discount_k, 0.0)
    valid = tf.logical_and(valid, tf.logical_not(
        alive & truncated_k & tf.logical_not(terminated_k)))
    discount = tf.where(alive, discount * discount_k, discount)
    alive = alive & tf.logical_not(terminated_k) & tf.logical_not(truncated_k)

  bootstrap_k = bootstrap_p[pad:pad + num_steps]
  returns = tf.where(alive, returns + discount * bootstrap_k, returns)
  if rescaling_eps is not None:
    returns = value_rescaling.signed_hyperbolic(returns, rescaling_eps)
  targets = tf.where(valid, returns, 0.0)
  # Targets, not functions of the parameters: the loss must not backprop here.
  return NStepTargets(targets=tf.stop_gradient(targets), valid_mask=valid)
