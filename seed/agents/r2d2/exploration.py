"""Per-env epsilon-greedy exploration (Ape-X, Horgan et al., 2018; kept by R2D2).

Each env acts with its own epsilon from a geometric ladder, so a few envs
explore a lot and most act nearly greedily; evaluation envs use a tiny epsilon.
The ladder is fixed (Ape-X, R2D2), or its base falls linearly over the first env
frames of a run, as DQN's single epsilon does (`ladder_exponent`).
"""
import math

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


def ladder_exponent(env_frames: int, epsilon_base: float, epsilon_base_final: float,
                    decay_frames: int) -> float:
  """The power k that takes the starting ladder to the ladder at `env_frames`.

  The base falls linearly, b(t) = b0 + (b1 - b0) min(1, t / decay_frames), with
  b0 = epsilon_base and b1 = epsilon_base_final, and stays at b1 after. Rung i's
  epsilon is b(t) ** (1 + alpha f_i) = (b0 ** (1 + alpha f_i)) ** k with
  k = log b(t) / log b0, so one scalar moves every rung: each env keeps the
  epsilon of its rung at the start (its ActingParams) and acts with that ** k.

  Raises:
    ValueError: unless 0 < epsilon_base_final <= epsilon_base < 1,
      decay_frames >= 1 and env_frames >= 0.
  """
  if not 0.0 < epsilon_base_final <= epsilon_base < 1.0:
    raise ValueError(f'a decaying ladder needs 0 < epsilon_base_final <= epsilon_base < 1, '
                     f'got epsilon_base_final {epsilon_base_final!r} and epsilon_base '
                     f'{epsilon_base!r}.')
  if int(decay_frames) < 1 or int(env_frames) < 0:
    raise ValueError(f'decay_frames must be >= 1 and env_frames >= 0, got {decay_frames} '
                     f'and {env_frames}.')
  progress = min(1.0, int(env_frames) / int(decay_frames))
  base = epsilon_base + (epsilon_base_final - epsilon_base) * progress
  return math.log(base) / math.log(epsilon_base)


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
