"""Per-env epsilon-greedy exploration (Ape-X, Horgan et al., 2018; kept by R2D2).

Each env acts with its own fixed epsilon from a geometric ladder, so a few envs
explore a lot and most act nearly greedily; evaluation envs use a tiny epsilon.
"""
import tensorflow as tf


def env_epsilon(env_ordinal: int, num_epsilon_envs: int, epsilon_base: float,
                epsilon_alpha: float) -> float:
  """The epsilon of env `env_ordinal` on the ladder.

  eps_i = epsilon_base ** (1 + epsilon_alpha * i / (N - 1)), i = env_ordinal mod N,
  N = num_epsilon_envs; with N = 1 every env gets epsilon_base.

  Raises:
    ValueError: for env_ordinal < 0 or num_epsilon_envs < 1.
  """
  if int(env_ordinal) < 0:
    raise ValueError(f'env_ordinal must be >= 0, got {env_ordinal}.')
  if int(num_epsilon_envs) < 1:
    raise ValueError(f'num_epsilon_envs must be >= 1, got {num_epsilon_envs}.')
  i = int(env_ordinal) % num_epsilon_envs
  fraction = i / (num_epsilon_envs - 1) if num_epsilon_envs > 1 else 0.0
  return float(epsilon_base ** (1.0 + epsilon_alpha * fraction))


def epsilon_greedy(q, epsilon, seed) -> tf.Tensor:
  """Per-row epsilon-greedy actions.

  Args:
    q: [B, A] action values.
    epsilon: [B] float32, each row's probability of a uniformly random action
      (which may be the greedy one): 1 always explores, 0 is greedy.
    seed: [2, 2] int seeds for the two stateless draws (from a tf.random.Generator).

  Returns:
    [B] int32 actions.
  """
  q = tf.convert_to_tensor(q)
  greedy = tf.argmax(q, axis=-1, output_type=tf.int32)
  batch = tf.shape(q)[:1]
  # uniform in [0, 1) < epsilon: always for epsilon = 1, never for epsilon = 0.
  explore = tf.random.stateless_uniform(batch, seed=seed[:, 0]) < epsilon
  random_action = tf.random.stateless_uniform(
      batch, seed=seed[:, 1], minval=0, maxval=tf.shape(q)[-1], dtype=tf.int32)
  return tf.where(explore, random_action, greedy)
