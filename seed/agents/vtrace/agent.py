"""The IMPALA / V-trace agent: an actor-critic trained on-policy-ish from a FIFO.

Actors act with `inference` (sampling from the current policy on the learner),
unrolls of T + 1 steps come back in arrival order, and `train_step` corrects
for the few updates of policy lag with V-trace (Espeholt et al., 2018).
"""
from typing import Dict, Mapping, Optional, Sequence, Tuple

import gin
import keras
import numpy as np
import tensorflow as tf

from seed.agents import base
from seed.agents import tf_agent
from seed.agents.vtrace import loss as loss_lib
from seed.agents.vtrace import networks
from seed.envs import spec as spec_lib

OPTIMIZERS = ('adam', 'rmsprop')
REWARD_CLIPPINGS = (None, 'abs_one')
# Batch fields train_step reads; any other policy outputs are ignored.
_TRAIN_FIELDS = ('observation', 'reward', 'terminated', 'truncated', 'action', 'logits')


def _check(condition: bool, message: str) -> None:
  if not condition:
    raise ValueError(message)


@gin.configurable
class VTraceAgent(tf_agent.KerasAgentMixin, base.Agent):
  """Policy + value network, V-trace loss, Adam or RMSProp with global-norm clipping.

  Hyperparameter defaults follow IMPALA/SEED where they carry over:
  discount 0.99, baseline_cost 0.5, max_grad_norm 40, rho-bars 1, lambda 1;
  RMSProp uses IMPALA's decay 0.99 and epsilon 0.01. entropy_cost 0.01 and
  learning_rate 6e-4 suit small control tasks and Atari alike.
  """

  input_kind = 'fifo'

  def __init__(self, env_spec: spec_lib.EnvSpec, *, unroll_length: int = 20,
               batch_size: int = 32, discount: float = 0.99,
               baseline_cost: float = 0.5, entropy_cost: float = 0.01,
               learning_rate: float = 6e-4, optimizer: str = 'adam',
               adam_epsilon: float = 1e-3, rmsprop_epsilon: float = 0.01,
               max_grad_norm: Optional[float] = 40.0,
               reward_clipping: Optional[str] = None, lambda_: float = 1.0,
               clip_rho_threshold: Optional[float] = 1.0,
               clip_pg_rho_threshold: Optional[float] = 1.0, torso: str = 'auto',
               mlp_hidden_sizes: Sequence[int] = (64, 64), use_lstm: bool = False,
               lstm_size: int = 256, seed: int = 0):
    """Builds the network and optimizer; every network variable exists on return.

    Args:
      env_spec: the environment's EnvSpec; actions must be discrete.
      unroll_length: T, transitions per unroll (unrolls hold T + 1 steps).
      batch_size: unrolls per train step.
      discount: gamma in [0, 1].
      baseline_cost: weight of the value loss.
      entropy_cost: weight of the entropy bonus.
      learning_rate: optimizer step size.
      optimizer: 'adam' or 'rmsprop'.
      adam_epsilon: Adam's epsilon (ignored by RMSProp).
      rmsprop_epsilon: RMSProp's epsilon, inside the square root (ignored by Adam).
      max_grad_norm: global-norm gradient clip; None disables clipping.
      reward_clipping: None, or 'abs_one' to clip rewards to [-1, 1] in the loss
        only (returns logged from the raw rewards are unaffected).
      lambda_: V-trace lambda in [0, 1].
      clip_rho_threshold: V-trace rho-bar; None disables clipping.
      clip_pg_rho_threshold: policy-gradient rho clip; None disables clipping.
      torso: 'auto' (mlp for rank 0-2 observations, nature for rank 3), 'mlp',
        'nature' or 'impala_shallow'; image torsos take [C, H, W] observations.
      mlp_hidden_sizes: hidden layer widths of the mlp torso.
      use_lstm: put an LSTM core after the torso.
      lstm_size: LSTM units.
      seed: seeds the weights and the action sampling.

    Raises:
      ValueError: naming any argument outside its accepted values.
    """
    _check(isinstance(env_spec, spec_lib.EnvSpec),
           f'env_spec must be a seed.envs.spec.EnvSpec, got {type(env_spec).__name__}.')
    _check(env_spec.is_discrete and env_spec.num_actions >= 1,
           f'VTraceAgent needs discrete actions (EnvSpec.num_actions >= 1), got '
           f'{env_spec.describe()}.')
    _check(int(unroll_length) >= 1, f'unroll_length must be >= 1, got {unroll_length}.')
    _check(int(batch_size) >= 1, f'batch_size must be >= 1, got {batch_size}.')
    _check(0.0 <= discount <= 1.0, f'discount must be in [0, 1], got {discount}.')
    _check(baseline_cost >= 0, f'baseline_cost must be >= 0, got {baseline_cost}.')
    _check(entropy_cost >= 0, f'entropy_cost must be >= 0, got {entropy_cost}.')
    _check(learning_rate > 0, f'learning_rate must be > 0, got {learning_rate}.')
    _check(optimizer in OPTIMIZERS,
           f'Unknown optimizer {optimizer!r}; accepted: {", ".join(OPTIMIZERS)}.')
    _check(adam_epsilon > 0, f'adam_epsilon must be > 0, got {adam_epsilon}.')
    _check(rmsprop_epsilon > 0, f'rmsprop_epsilon must be > 0, got {rmsprop_epsilon}.')
    _check(max_grad_norm is None or max_grad_norm > 0,
           f'max_grad_norm must be > 0 or None (no clipping), got {max_grad_norm}.')
    _check(reward_clipping in REWARD_CLIPPINGS,
           f'Unknown reward_clipping {reward_clipping!r}; accepted: None, \'abs_one\'.')
    _check(0.0 <= lambda_ <= 1.0, f'lambda_ must be in [0, 1], got {lambda_}.')
    for name, value in (('clip_rho_threshold', clip_rho_threshold),
                        ('clip_pg_rho_threshold', clip_pg_rho_threshold)):
      _check(value is None or value > 0, f'{name} must be > 0 or None, got {value}.')
    _check(all(int(size) >= 1 for size in mlp_hidden_sizes),
           f'mlp_hidden_sizes must be positive widths, got {tuple(mlp_hidden_sizes)}.')
    _check(int(lstm_size) >= 1, f'lstm_size must be >= 1, got {lstm_size}.')

    self._env_spec = env_spec
    self._unroll_length = int(unroll_length)
    self._batch_size = int(batch_size)
    self._discount = float(discount)
    self._baseline_cost = float(baseline_cost)
    self._entropy_cost = float(entropy_cost)
    self._max_grad_norm = None if max_grad_norm is None else float(max_grad_norm)
    self._reward_clipping = reward_clipping
    self._lambda = float(lambda_)
    self._clip_rho_threshold = clip_rho_threshold
    self._clip_pg_rho_threshold = clip_pg_rho_threshold

    self._network = networks.PolicyValueNetwork(
        env_spec.observation_shape, env_spec.observation_dtype, env_spec.num_actions,
        torso=torso, mlp_hidden_sizes=tuple(int(s) for s in mlp_hidden_sizes),
        use_lstm=use_lstm, lstm_size=lstm_size, seed=seed)
    self._configured_learning_rate = float(learning_rate)
    if optimizer == 'adam':
      self._optimizer = keras.optimizers.Adam(learning_rate, epsilon=adam_epsilon)
    else:
      self._optimizer = keras.optimizers.RMSprop(
          learning_rate, rho=0.99, momentum=0.0, epsilon=rmsprop_epsilon)
    # Its own stream (not the global seed), so sampling is reproducible per agent.
    self._sampler = tf.random.Generator.from_seed(seed)
    self._train_function = tf.function(self._train)

  @property
  def unroll_length(self) -> int:
    return self._unroll_length

  @property
  def batch_size(self) -> int:
    return self._batch_size

  def initial_core_state(self, num_envs: int) -> Tuple[np.ndarray, ...]:
    return tuple(np.asarray(x) for x in self._network.initial_state(num_envs))

  @tf.function
  def inference(self, observation, reward, done, core_state):
    """Samples actions; see base.Agent.inference.

    One trace per input shape and dtype: pass observation in the env's dtype,
    reward float32, done bool and core_state float32, as `warm_up` does.
    """
    del reward  # The network does not condition on the previous reward.
    logits, _, new_state = self._network.step(observation, done, core_state)
    seed = self._sampler.make_seeds(1)[:, 0]
    action = tf.random.stateless_categorical(logits, 1, seed=seed, dtype=tf.int32)
    return action[:, 0], {'logits': logits}, new_state

  def checkpoint_items(self) -> Dict[str, object]:
    return {'model': self._network, 'optimizer': self._optimizer}

  def _check_batch(self, batch: Mapping[str, np.ndarray]) -> None:
    base.check_batch(batch, _TRAIN_FIELDS, (self._batch_size, self._unroll_length + 1),
                     '[batch_size, unroll_length + 1]', also_required=('core_state',))

  def train_step(self, batch: Mapping[str, np.ndarray]) -> Dict[str, float]:
    """One optimizer step on a [batch_size, unroll_length + 1] batch of unrolls.

    Returns:
      Python floats: total_loss, policy_loss, baseline_loss, entropy_loss,
      entropy, mean_rho, mean_value, grad_norm (before clipping), learning_rate.
    """
    self._check_batch(batch)
    self._build_optimizer()
    fields = {key: tf.convert_to_tensor(np.asarray(batch[key])) for key in _TRAIN_FIELDS}
    core_state = tuple(tf.convert_to_tensor(np.asarray(x)) for x in batch['core_state'])
    logs = self._train_function(fields, core_state)
    return {key: float(value) for key, value in logs.items()}

  def _train(self, fields, core_state):
    """The traced part of train_step: batch-major fields in, scalar logs out."""

    def time_major(x):
      return tf.transpose(x, [1, 0] + list(range(2, x.shape.rank)))

    batch = {key: time_major(value) for key, value in fields.items()}
    terminated = tf.cast(batch['terminated'], tf.bool)
    truncated = tf.cast(batch['truncated'], tf.bool)
    # Step t's flags belong to the transition into observation[t]: they say
    # whether observation[t] starts an episode (reset the LSTM) and, shifted by
    # one, whether transition t -> t+1 ended (discount) or was cut (truncated).
    done = tf.logical_or(terminated, truncated)
    rewards = tf.cast(batch['reward'][1:], tf.float32)
    if self._reward_clipping == 'abs_one':
      rewards = tf.clip_by_value(rewards, -1.0, 1.0)
    discounts = self._discount * (1.0 - tf.cast(terminated[1:], tf.float32))

    variables = self._network.trainable_variables
    with tf.GradientTape() as tape:
      logits, values, _ = self._network.unroll(batch['observation'], done, core_state)
      total_loss, logs = loss_lib.impala_loss(
          target_logits=logits[:-1], behaviour_logits=batch['logits'][:-1],
          actions=batch['action'][:-1], values=values[:-1],
          bootstrap_value=values[-1], rewards=rewards, discounts=discounts,
          truncated=truncated[1:], baseline_cost=self._baseline_cost,
          entropy_cost=self._entropy_cost,
          clip_rho_threshold=self._clip_rho_threshold,
          clip_pg_rho_threshold=self._clip_pg_rho_threshold, lambda_=self._lambda)
    gradients = tape.gradient(total_loss, variables)
    if self._max_grad_norm is None:
      grad_norm = tf.linalg.global_norm(gradients)
    else:
      gradients, grad_norm = tf.clip_by_global_norm(gradients, self._max_grad_norm)
    # The rate this step uses (read before apply: a schedule advances with it).
    learning_rate = tf.convert_to_tensor(self._optimizer.learning_rate, tf.float32)
    self._optimizer.apply_gradients(zip(gradients, variables))
    logs.update(total_loss=total_loss, grad_norm=grad_norm, learning_rate=learning_rate)
    return logs
