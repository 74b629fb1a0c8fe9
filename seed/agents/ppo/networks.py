"""PPO's networks, and the policies that act and score actions through them: a Gaussian
policy with a state-independent log-std and a value MLP for continuous actions (over a
box, the sample mapped onto it); a categorical policy and value for discrete ones. The
agent (seed/agents/ppo/agent.py) hands each policy its inputs: flat float vectors
(normalised or not) for the MLPs, the env's frames for the image torsos.

Continuous: separate torsos for policy and value (no shared features), tanh
activations and orthogonal init with gains sqrt(2) / 0.01 (policy mean) / 1
(value): the MuJoCo setting of Schulman et al. (2017) and of the well-tuned open
implementations.
"""
from typing import Dict, List, Sequence, Tuple

import keras
import numpy as np
import tensorflow as tf

from seed import types
from seed.agents.common import continuous
from seed.agents.common import mlp
from seed.agents.common import networks as shared
from seed.losses import distributions


class GaussianPolicyValue(keras.layers.Layer):
  """x [N, D] (normalised observations) -> policy mean [N, A], log-std [A], value [N]."""

  def __init__(self, observation_size: int, action_size: int, hidden_sizes: Sequence[int], *,
               initial_log_std: float = 0.0, seed: int = 0, name: str = 'policy_value'):
    super().__init__(name=name)
    seeds = mlp.SeedStream(seed)
    self._policy = mlp.MLP(observation_size, hidden_sizes, action_size, seeds=seeds,
                           activation='tanh', initializer='orthogonal', output_gain=0.01,
                           name='policy')
    self._value = mlp.MLP(observation_size, hidden_sizes, 1, seeds=seeds, activation='tanh',
                          initializer='orthogonal', output_gain=1.0, name='value')
    self.log_std = self.add_weight(
        shape=(action_size,), initializer=keras.initializers.Constant(initial_log_std),
        name='log_std')
    self.built = True

  def torso_inputs(self, x) -> tf.Tensor:
    """What `value` and the policy take: the flat float inputs as they are."""
    return tf.convert_to_tensor(x)

  def policy(self, x) -> Tuple[tf.Tensor, tf.Tensor]:
    """(mean [N, A], log_std [A]) of the Gaussian over unit-space actions."""
    return self._policy(x), tf.convert_to_tensor(self.log_std)

  def value(self, x) -> tf.Tensor:
    """V(x) [N]."""
    return tf.squeeze(self._value(x), -1)

  @property
  def value_head(self) -> keras.layers.Dense:
    """The value's last layer (one unit)."""
    return self._value.output_layer


class CategoricalPolicyValue(keras.layers.Layer):
  """Discrete actions: observations -> policy logits [N, A] and value [N].

  Image observations ([C, H, W], torso 'nature' or 'impala_shallow') go through one
  convolutional torso shared by two linear heads, as cleanrl's ppo_atari does;
  vector observations (torso 'mlp') through separate policy and value tanh MLPs,
  as its classic-control ppo does. Orthogonal init throughout, gains sqrt(2)
  (hidden), 0.01 (logits: a near-uniform first policy) and 1 (value).
  """

  def __init__(self, observation_shape: Sequence[int], observation_dtype: str,
               num_actions: int, hidden_sizes: Sequence[int], *, torso: str, seed: int = 0,
               name: str = 'policy_value'):
    """torso: a resolved torso (shared.resolve_torso); the MLPs take flat float inputs."""
    super().__init__(name=name)
    seeds = mlp.SeedStream(seed)
    self._torso_name = torso
    self._observation_shape = tuple(int(d) for d in observation_shape)
    if torso == 'mlp':
      size = mlp.flat_size(observation_shape)
      self._policy = mlp.MLP(size, hidden_sizes, num_actions, seeds=seeds, activation='tanh',
                             initializer='orthogonal', output_gain=0.01, name='policy')
      self._value = mlp.MLP(size, hidden_sizes, 1, seeds=seeds, activation='tanh',
                            initializer='orthogonal', output_gain=1.0, name='value')
    else:
      layers = shared.build_torso_layers(
          torso, (), lambda: seeds.initializer('orthogonal', gain=float(np.sqrt(2.0))))
      self._num_torso_layers = len(layers)
      for i, layer in enumerate(layers):  # Attributes: tf.train.Checkpoint needs them.
        setattr(self, f'_torso_layer_{i}', layer)
      self._policy_head = keras.layers.Dense(
          num_actions, name='policy_logits',
          kernel_initializer=seeds.initializer('orthogonal', gain=0.01))
      self._value_head = keras.layers.Dense(
          1, name='value', kernel_initializer=seeds.initializer('orthogonal', gain=1.0))
      self.policy_and_value(self.torso_inputs(
          tf.zeros((1,) + self._observation_shape, tf.as_dtype(np.dtype(observation_dtype)))))
    self.built = True

  def _torso_layers(self) -> List[keras.layers.Layer]:
    return [getattr(self, f'_torso_layer_{i}') for i in range(self._num_torso_layers)]

  def torso_inputs(self, x) -> tf.Tensor:
    """What `policy_and_value` and `value` take for inputs [N, D] (mlp) or [N, C, H, W]
    (images): the MLPs' inputs as they are; the frames as the torso's first layer takes
    them (cast, scaled by 1/255, NHWC). A train step that passes over its batch several
    times (epochs of minibatches) makes them once and takes minibatches of them."""
    x = tf.convert_to_tensor(x)
    if self._torso_name == 'mlp':
      return x
    return shared.torso_input(self._torso_name, self._observation_shape, x)

  def _features(self, torso_inputs):
    return shared.apply_torso_layers(self._torso_layers(), torso_inputs)

  def layer_outputs(self, observations) -> List[Tuple[str, tf.Tensor]]:
    """Each torso layer's output for observations [N, C, H, W] (Flatten's left out), for
    diagnostics (seed diagnose); [] for vector observations, which have no torso."""
    if self._torso_name == 'mlp':
      return []
    return shared.torso_layer_outputs(self._torso_layers(), self._torso_name, observations)

  def policy_and_value(self, x) -> Tuple[tf.Tensor, tf.Tensor]:
    """(logits [N, A], value [N]) for `torso_inputs(inputs)`."""
    if self._torso_name == 'mlp':
      return self._policy(x), tf.squeeze(self._value(x), -1)
    features = self._features(x)
    return self._policy_head(features), tf.squeeze(self._value_head(features), -1)

  def logits(self, x) -> tf.Tensor:
    """Policy logits [N, A] alone for inputs [N, D] (mlp) or [N, C, H, W] (images):
    acting needs no value (the MLP case skips its MLP)."""
    if self._torso_name == 'mlp':
      return self._policy(x)
    return self._policy_head(self._features(self.torso_inputs(x)))

  def value(self, x) -> tf.Tensor:
    """V(x) [N] for `torso_inputs(inputs)`."""
    if self._torso_name == 'mlp':
      return tf.squeeze(self._value(x), -1)
    return tf.squeeze(self._value_head(self._features(x)), -1)

  @property
  def value_head(self) -> keras.layers.Dense:
    """The value's last layer (one unit)."""
    return self._value.output_layer if self._torso_name == 'mlp' else self._value_head


class GaussianPolicy:
  """Diagonal Gaussian with a state-independent log-std over unit-space actions; the
  env action is the sample mapped onto the box (clipped). Stores the unclipped sample."""

  trained_outputs = ('raw_action', 'log_prob', 'policy_input')

  def __init__(self, env_spec, config, observation_size: int):
    """env_spec: continuous actions (checked by the agent)."""
    self.bounds = continuous.ActionBounds(env_spec)
    self.network = GaussianPolicyValue(
        observation_size, self.bounds.size, config.hidden_sizes,
        initial_log_std=float(config.initial_log_std), seed=config.seed)
    self.noise = tf.random.Generator.from_seed(config.seed)

  def act(self, x, evaluation) -> Tuple[tf.Tensor, Dict[str, tf.Tensor]]:
    """(env actions, outputs to store) for inputs x [B, D]; the mean where `evaluation`."""
    mean, log_std = self.network.policy(x)
    sample = distributions.sample_diag_gaussian(mean, log_std, generator=self.noise)
    raw_action = tf.where(tf.expand_dims(evaluation, -1), mean, sample)
    log_prob = distributions.diag_gaussian_log_prob(raw_action, mean, log_std)
    return self.bounds.to_env(raw_action), {'raw_action': raw_action, 'log_prob': log_prob}

  def taken_actions(self, steps: types.Steps) -> tf.Tensor:
    """[B * T, A] the stored unit-space samples of steps 0..T-1, batch-major."""
    return tf.reshape(tf.cast(steps.policy_outputs['raw_action'][:, :-1], tf.float32),
                      [-1, self.bounds.size])

  def log_prob_entropy_and_value(self, x, actions) -> Tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """(log pi(a|x) [N], mean entropy, the value head's V(x) [N]) under the current
    parameters; policy and value have torsos of their own here."""
    mean, log_std = self.network.policy(x)
    return (distributions.diag_gaussian_log_prob(actions, mean, log_std),
            tf.reduce_mean(distributions.diag_gaussian_entropy(mean, log_std)),
            self.network.value(x))

  def logs(self) -> Dict[str, tf.Tensor]:
    return {'log_std': tf.reduce_mean(self.network.log_std)}


class CategoricalPolicy:
  """Categorical over the env's discrete actions; the argmax where `evaluation`."""

  def __init__(self, env_spec, config, torso: str, stores_inputs: bool):
    """torso: resolved; stores_inputs: the inputs are normalised, so inference stores
    them (policy_input) and training reuses them, as for the Gaussian policy."""
    self.network = CategoricalPolicyValue(
        env_spec.observation_shape, env_spec.observation_dtype, env_spec.num_actions,
        config.hidden_sizes, torso=torso, seed=config.seed)
    self.noise = tf.random.Generator.from_seed(config.seed)
    self.trained_outputs = ('log_prob', 'policy_input') if stores_inputs else ('log_prob',)

  def act(self, x, evaluation) -> Tuple[tf.Tensor, Dict[str, tf.Tensor]]:
    logits = self.network.logits(x)
    seed = self.noise.make_seeds(1)[:, 0]
    sample = tf.random.stateless_categorical(logits, 1, seed=seed, dtype=tf.int32)[:, 0]
    action = tf.where(evaluation, tf.argmax(logits, -1, output_type=tf.int32), sample)
    # The logits are not stored (trained_outputs): they are there for seed diagnose.
    return action, {'log_prob': distributions.categorical_log_prob(logits, action),
                    'logits': logits}

  def taken_actions(self, steps: types.Steps) -> tf.Tensor:
    """[B * T] int32 actions of steps 0..T-1, batch-major."""
    return tf.reshape(tf.cast(steps.action[:, :-1], tf.int32), [-1])

  def log_prob_entropy_and_value(self, x, actions) -> Tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """As the Gaussian policy's, for `network.torso_inputs(inputs)`, from one pass: image
    observations share a torso, which a second pass for the value would run (and
    differentiate) twice a minibatch."""
    logits, value = self.network.policy_and_value(x)
    return (distributions.categorical_log_prob(logits, actions),
            tf.reduce_mean(distributions.categorical_entropy(logits)), value)

  def logs(self) -> Dict[str, tf.Tensor]:
    return {}
