"""ACER's networks: the discrete agent's is the shared policy-value network
(seed.agents.common.networks) with a Q(x, .) head; the continuous agent's is the
stochastic dueling network (Wang et al., 2017, section 5): phi(x), V(x) and A(x, a)."""
import keras
import tensorflow as tf

from seed.agents.acer import config as config_lib
from seed.agents.common import mlp
from seed.agents.common import networks as shared
from seed.envs import spec as spec_lib


def policy_q_network(env_spec: spec_lib.EnvSpec, config: config_lib.ACERConfig, name: str
                     ) -> shared.PolicyValueNetwork:
  """Logits [B, A] and Q(x, .) [B, A] (the discrete agent's network and its average)."""
  return shared.PolicyValueNetwork.from_config(env_spec, config, q_head=True, name=name)


class StochasticDuelingNetwork(keras.layers.Layer):
  """phi(x), V(x) and A(x, a) as three MLPs; `q_tilde` combines them."""

  def __init__(self, observation_size: int, action_size: int, hidden_sizes, *, seed: int,
               name: str = 'sdn'):
    super().__init__(name=name)
    seeds = mlp.SeedStream(seed)
    self.action_size = int(action_size)
    # Orthogonal, policy output gain 0.01 (as PPO's): the first means are near 0,
    # so the first actions explore the middle of the box.
    self._policy = mlp.MLP(observation_size, hidden_sizes, action_size, seeds=seeds,
                           activation='tanh', initializer='orthogonal', output_gain=0.01,
                           name='policy_mean')
    self._value = mlp.MLP(observation_size, hidden_sizes, 1, seeds=seeds,
                          activation='tanh', initializer='orthogonal', name='value')
    self._advantage = mlp.Critic(observation_size, action_size, hidden_sizes, seeds=seeds,
                                 name='advantage')
    self.built = True

  def policy_mean(self, x):
    """[N, D] -> [N, A]."""
    return self._policy(x)

  def value(self, x):
    """[N, D] -> [N]."""
    return tf.squeeze(self._value(x), -1)

  def advantage(self, x, action):
    """[N, D] x [N, A] -> [N]."""
    return self._advantage(x, action)
