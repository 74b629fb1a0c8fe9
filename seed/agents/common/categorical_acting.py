"""Acting with a categorical policy over a PolicyValueNetwork: V-trace's and ACER's.

Training envs sample from the policy (these agents explore by its entropy);
evaluation envs (ActingParams.evaluation) take its most probable action, so an
evaluation reports the greedy policy.
"""
from typing import Tuple

import numpy as np
import tensorflow as tf

from seed import types


class CategoricalActingMixin:
  """`initial_core_state` and `inference` for agents holding `_network` (a
  seed.agents.common.policy_value.PolicyValueNetwork) and `_sampler` (a
  tf.random.Generator of their own, so sampling is reproducible per agent)."""

  def initial_core_state(self, num_envs: int) -> Tuple[np.ndarray, ...]:
    """(c, h), each [num_envs, lstm_size] zeros, with an LSTM; () without."""
    return tuple(np.asarray(x) for x in self._network.initial_state(num_envs))

  @tf.function
  def inference(self, observation, reward, done, core_state, acting: types.ActingParams):
    """Samples actions (the most probable for evaluation envs); see base.Agent.inference.

    One trace per input shape and dtype: pass observation in the env's dtype,
    reward float32, done bool, core_state float32 and acting as `warm_up` does.
    Returns (action int32 [B], {'logits': [B, A] float32}, new core_state).
    """
    del reward  # No conditioning on the previous reward; no epsilon.
    logits, _, new_state = self._network.step(observation, done, core_state)
    seed = self._sampler.make_seeds(1)[:, 0]
    sampled = tf.random.stateless_categorical(logits, 1, seed=seed, dtype=tf.int32)[:, 0]
    greedy = tf.argmax(logits, axis=-1, output_type=tf.int32)
    action = tf.where(tf.cast(acting.evaluation, tf.bool), greedy, sampled)
    return action, {'logits': logits}, new_state
