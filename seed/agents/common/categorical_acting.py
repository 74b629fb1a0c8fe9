"""The agents that act with a categorical policy over a PolicyValueNetwork: V-trace, ACER
and Reactor.

Training envs sample from the policy (these agents explore by its entropy);
evaluation envs (ActingParams.evaluation) take its most probable action, so an
evaluation reports the greedy policy.
"""
from typing import Any, Callable, Tuple

import numpy as np
import tensorflow as tf

from seed import types
from seed.agents.common import networks as shared
from seed.agents.common import tf_agent


class CategoricalActingAgent(tf_agent.TFAgent):
  """`initial_core_state` and `inference` of an agent acting with the network
  `make_network(env_spec, config)` gives (a PolicyValueNetwork); its actions are sampled
  from a random stream of its own, seeded config.seed, so sampling is reproducible per
  agent."""

  def __init__(self, env_spec, config,
               make_network: Callable[[Any, Any], shared.PolicyValueNetwork]):
    super().__init__(env_spec, config)
    self.network = make_network(env_spec, self.config)
    self._sampler = tf.random.Generator.from_seed(self.config.seed)

  def initial_core_state(self, num_envs: int) -> Tuple[np.ndarray, ...]:
    """(c, h), each [num_envs, lstm_size] zeros, with an LSTM; () without."""
    return tuple(np.asarray(x) for x in self.network.initial_state(num_envs))

  @tf.function
  def inference(self, observation, reward, done, core_state, acting: types.ActingParams):
    """Samples actions (the most probable for evaluation envs); see base.Agent.inference.

    One trace per input shape and dtype: pass observation in the env's dtype,
    reward float32, done bool, core_state float32 and acting as `warm_up` does.
    Returns (action int32 [B], {'logits': [B, A] float32}, new core_state).
    """
    del reward  # No conditioning on the previous reward; no epsilon.
    logits, _, new_state = self.network.step(observation, done, core_state)
    seed = self._sampler.make_seeds(1)[:, 0]
    sampled = tf.random.stateless_categorical(logits, 1, seed=seed, dtype=tf.int32)[:, 0]
    greedy = tf.argmax(logits, axis=-1, output_type=tf.int32)
    action = tf.where(tf.cast(acting.evaluation, tf.bool), greedy, sampled)
    return action, {'logits': logits}, new_state
