"""Distributional Retrace (Gruslys et al., 2018, "The Reactor", section 3.3): Retrace
targets for a categorical return distribution on fixed atoms, and the projection onto
those atoms (Bellemare et al., 2017).

Scalar Retrace (seed.losses.retrace) unrolls into a weighted sum of n-step returns:
  Q^ret_t = sum_{s=t}^{T-1} w_{t,s} (G_{t,s+1} + D_{t,s+1} V_{s+1})
          - sum_{s=t+1}^{T-1} w_{t,s} (G_{t,s} + D_{t,s} Q_s),
with w_{t,s} = prod_{i=t+1}^{s} c_i the trace weights (w_{t,t} = 1), D_{t,s} =
prod_{j=t}^{s-1} discounts_j and G_{t,s} = sum_{k=t}^{s-1} D_{t,k} r_k the discounted
reward from t up to s. The distributional target replaces every value by its
distribution shifted and scaled the same way, V_{s+1} by the distribution
sum_b pi(b|x_{s+1}) Z(x_{s+1}, b) and Q_s by Z(x_s, a_s), each atom z moved to
G + D z: a mixture whose weights sum to 1 (some may be negative), projected onto the
atoms. The projection is linear and keeps the mean of what lies inside
[v_min, v_max], so the mean of the target is the scalar Retrace target of the mean
values (tested).

Tensors are time-major with one batch axis: [T, B] per step, [T, B, N] per
distribution over N atoms. Episode ends and truncation as in seed.losses.retrace: a
termination is discount 0 (a scale-0 shift is a point mass at the return), a truncated
transition's target is its own Z(x_t, a_t) and it cuts the trace of the steps before.
"""
import tensorflow as tf

from seed.losses import shapes


def categorical_projection(positions, weights, support) -> tf.Tensor:
  """Projects weighted atoms onto a uniform support (Bellemare et al., 2017, eq. 7).

  Args:
    positions: [..., K] where each source atom lies.
    weights: [..., K] its mass (may be negative).
    support: [N] evenly spaced atoms, N >= 2, increasing.

  Returns:
    [..., N]: each source atom clipped into [support[0], support[-1]] and split
    between its two neighbouring atoms in proportion to closeness.
  """
  positions = tf.convert_to_tensor(positions, tf.float32)
  weights = tf.convert_to_tensor(weights, tf.float32)
  support = tf.convert_to_tensor(support, tf.float32)
  shapes.check_shape('weights', weights, positions.shape)
  v_min, v_max = support[0], support[-1]
  spacing = (v_max - v_min) / tf.cast(tf.size(support) - 1, tf.float32)
  # Distance to each atom in units of the spacing; the hat max(0, 1 - |d|) splits mass.
  scaled = (tf.clip_by_value(positions, v_min, v_max) - v_min) / spacing
  atom_index = tf.range(tf.size(support), dtype=tf.float32)
  hat = tf.nn.relu(1.0 - tf.abs(scaled[..., tf.newaxis] - atom_index))
  return tf.reduce_sum(weights[..., tf.newaxis] * hat, axis=-2)


def distributional_retrace_targets(log_rhos, discounts, rewards, q_distributions,
                                   state_distributions, bootstrap_distribution, support,
                                   truncated=None, lambda_=1.0) -> tf.Tensor:
  """The projected distributional Retrace targets of Z(x_t, a_t); see the module docstring.

  Args:
    log_rhos: [T, B] log pi(a_t|x_t) - log mu(a_t|x_t).
    discounts: [T, B] gamma * (1 - terminated) of the transition t -> t+1.
    rewards: [T, B].
    q_distributions: [T, B, N] Z(x_t, a_t), probabilities over the atoms.
    state_distributions: [T, B, N] sum_b pi(b|x_t) Z(x_t, b).
    bootstrap_distribution: [B, N] the same at x_T.
    support: [N] the atoms.
    truncated: optional [T, B], the transition t -> t+1 hit a time limit.
    lambda_: in [0, 1], multiplies every trace coefficient c_t = lambda min(1, rho_t).

  Returns:
    [T, B, N] gradient-stopped target distributions (each sums to 1).

  Raises:
    ValueError: if the shapes disagree or lambda_ is outside [0, 1].
  """
  if not 0.0 <= float(lambda_) <= 1.0:
    raise ValueError(f'lambda_ = {lambda_!r}; accepted: a number in [0, 1].')
  log_rhos = tf.convert_to_tensor(log_rhos, tf.float32)
  if log_rhos.shape.rank != 2:
    raise ValueError(f'log_rhos has shape {log_rhos.shape}, expected [T, B].')
  discounts, rewards = (tf.convert_to_tensor(x, tf.float32) for x in (discounts, rewards))
  q_distributions, state_distributions, bootstrap_distribution = (
      tf.convert_to_tensor(x, tf.float32)
      for x in (q_distributions, state_distributions, bootstrap_distribution))
  support = tf.convert_to_tensor(support, tf.float32)
  atoms = support.shape[0]
  shapes.check_shape('discounts', discounts, log_rhos.shape)
  shapes.check_shape('rewards', rewards, log_rhos.shape)
  shapes.check_shape('q_distributions', q_distributions, log_rhos.shape + [atoms])
  shapes.check_shape('state_distributions', state_distributions, log_rhos.shape + [atoms])
  shapes.check_shape('bootstrap_distribution', bootstrap_distribution,
                     log_rhos.shape[1:] + [atoms])
  is_truncated = (tf.zeros_like(log_rhos, tf.bool) if truncated is None
                  else tf.cast(tf.convert_to_tensor(truncated), tf.bool))
  shapes.check_shape('truncated', is_truncated, log_rhos.shape)

  steps = tf.shape(log_rhos)[0]
  # A truncated step's c is 0: no trace from before it passes through it.
  cs = tf.where(is_truncated, 0.0, tf.cast(lambda_, tf.float32) * tf.minimum(1.0, tf.exp(log_rhos)))
  discounts = tf.where(is_truncated, 0.0, discounts)
  index = tf.range(steps)
  after = index[tf.newaxis, :] > index[:, tf.newaxis]        # [t, s]: s > t
  from_t = index[tf.newaxis, :] >= index[:, tf.newaxis]      # [t, s]: s >= t
  # w[t, s] = prod_{i=t+1}^{s} c_i; dn[t, s] = prod_{j=t}^{s} discounts_j = D_{t,s+1}.
  w = tf.math.cumprod(tf.where(after[..., tf.newaxis], cs[tf.newaxis], 1.0), axis=1)
  dn = tf.math.cumprod(tf.where(from_t[..., tf.newaxis], discounts[tf.newaxis], 1.0), axis=1)
  d = tf.concat([tf.ones_like(dn[:, :1]), dn[:, :-1]], axis=1)  # D_{t,s}
  # gn[t, s] = G_{t,s+1} = sum_{k=t}^{s} D_{t,k} r_k; g[t, s] = G_{t,s}.
  gn = tf.math.cumsum(tf.where(from_t[..., tf.newaxis], d * rewards[tf.newaxis], 0.0), axis=1)
  g = gn - tf.where(from_t[..., tf.newaxis], d * rewards[tf.newaxis], 0.0)
  valid_next = tf.cast(from_t, tf.float32)[..., tf.newaxis]  # E_pi terms: s >= t
  valid_taken = tf.cast(after, tf.float32)[..., tf.newaxis]  # Z(a) terms: s > t
  next_distributions = tf.concat([state_distributions[1:], bootstrap_distribution[tf.newaxis]],
                                 axis=0)
  # A trace weight of 0 (cut, or past a truncation) must not carry a non-finite
  # next-episode distribution in as NaN.
  next_weights = tf.where((valid_next * w)[..., tf.newaxis] > 0,
                          (valid_next * w)[..., tf.newaxis] * next_distributions[tf.newaxis], 0.0)
  taken_weights = tf.where((valid_taken * w)[..., tf.newaxis] > 0,
                           -(valid_taken * w)[..., tf.newaxis] * q_distributions[tf.newaxis], 0.0)
  next_positions = gn[..., tf.newaxis] + dn[..., tf.newaxis] * support
  taken_positions = g[..., tf.newaxis] + d[..., tf.newaxis] * support
  # [t, s, B, N] -> [t, B, s * N]: every source atom of every horizon, then projected.
  positions = tf.concat([next_positions, taken_positions], axis=1)
  weights = tf.concat([next_weights, taken_weights], axis=1)
  positions = tf.reshape(tf.transpose(positions, [0, 2, 1, 3]),
                         [steps, tf.shape(log_rhos)[1], -1])
  weights = tf.reshape(tf.transpose(weights, [0, 2, 1, 3]), tf.shape(positions))
  targets = categorical_projection(positions, weights, support)
  targets = tf.where(is_truncated[..., tf.newaxis], q_distributions, targets)
  return tf.stop_gradient(targets)
