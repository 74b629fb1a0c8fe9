"""How PPO acts and scores actions: a Gaussian over a box of continuous actions, or
a categorical over discrete ones. The agent (seed/agents/ppo/agent.py) owns the
training loop and hands each policy its inputs: flat float vectors (normalised or
not) for the MLPs, the env's frames for the image torsos."""
from typing import Dict, Tuple

import tensorflow as tf

from seed import types
from seed.agents.common import continuous
from seed.agents.ppo import networks
from seed.losses import distributions


class GaussianPolicy:
  """Diagonal Gaussian with a state-independent log-std over unit-space actions; the
  env action is the sample mapped onto the box (clipped). Stores the unclipped sample."""

  trained_outputs = ('raw_action', 'log_prob', 'policy_input')

  def __init__(self, env_spec, config, observation_size: int):
    """env_spec: continuous actions (checked by the agent)."""
    self.bounds = continuous.ActionBounds(env_spec)
    self.network = networks.GaussianPolicyValue(
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
    self.network = networks.CategoricalPolicyValue(
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
    """As the Gaussian policy's, from one pass: image observations share a torso, which a
    second pass for the value would run (and differentiate) twice a minibatch."""
    logits, value = self.network.policy_and_value(x)
    return (distributions.categorical_log_prob(logits, actions),
            tf.reduce_mean(distributions.categorical_entropy(logits)), value)

  def logs(self) -> Dict[str, tf.Tensor]:
    return {}
