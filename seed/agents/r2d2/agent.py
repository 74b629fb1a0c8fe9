"""The R2D2 agent (Kapturowski et al., 2019): recurrent Q-learning from prioritized replay.

Actors act epsilon-greedily with `inference`; unrolls go to a prioritized
sequence replay and `train_step` regresses n-step double-Q targets with value
rescaling, returning the new priorities of the sequences it trained on.

Unrolls hold burn_in + unroll_length + 1 steps: the `unroll_length` property is
burn_in + unroll_length, what the server's unroll builder uses, and
`trained_length` is the configured unroll_length. The first burn_in steps only
prime the LSTM from the stored state; the trained part is the last
unroll_length + 1 steps (unroll_length transitions and the bootstrap state).

core_state is the LSTM state (c, h) followed by a per-env exploration epsilon
[B] float32 (just (epsilon,) without an LSTM). `inference` samples with that
epsilon and passes it through unchanged; `done` resets only the LSTM part. The
server should create each env's state with `env_core_state` (Ape-X's epsilon
ladder); `initial_core_state` gives every env epsilon_base. Training ignores the
stored epsilon.
"""
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple

import gin
import keras
import numpy as np
import tensorflow as tf

from seed.agents import base
from seed.agents import tf_agent
from seed.agents.r2d2 import config as config_lib
from seed.agents.r2d2 import exploration
from seed.agents.r2d2 import loss as loss_lib
from seed.agents.r2d2 import networks
from seed.envs import spec as spec_lib
from seed.replay import prioritized

# Batch fields train_step reads; any other policy outputs ('q') are ignored.
_TRAIN_FIELDS = ('observation', 'reward', 'terminated', 'truncated', 'action')


def _check(condition: bool, message: str) -> None:
  if not condition:
    raise ValueError(message)


@gin.configurable
class R2D2Agent(tf_agent.KerasAgentMixin, base.Agent):
  """Recurrent dueling double-Q network, n-step targets, burn-in, prioritized replay."""

  input_kind = 'replay'

  def __init__(self, env_spec: spec_lib.EnvSpec, *, unroll_length: int = 80,
               burn_in: int = 40, batch_size: int = 64, discount: float = 0.997,
               n_steps: int = 5, learning_rate: float = 1e-4, adam_epsilon: float = 1e-3,
               max_grad_norm: Optional[float] = 40.0, target_update_period: int = 2500,
               rescaling_eps: Optional[float] = 1e-3, priority_eta: float = 0.9,
               torso: str = 'auto', mlp_hidden_sizes: Sequence[int] = (64,),
               lstm_size: int = 512, use_lstm: bool = True, head_hidden_size: int = 512,
               num_epsilon_envs: int = 256, epsilon_base: float = 0.4,
               epsilon_alpha: float = 7.0, eval_epsilon: float = 1e-3, seed: int = 0):
    """Builds the online and target networks and the optimizer.

    Args:
      env_spec: the environment's EnvSpec; actions must be discrete.
      The others: see config.R2D2Config, which documents and checks them.

    Raises:
      ValueError: naming any argument outside its accepted values.
    """
    arguments = dict(locals())
    del arguments['self'], arguments['env_spec']
    _check(isinstance(env_spec, spec_lib.EnvSpec),
           f'env_spec must be a seed.envs.spec.EnvSpec, got {type(env_spec).__name__}.')
    _check(env_spec.is_discrete and env_spec.num_actions >= 1,
           f'R2D2Agent needs discrete actions (EnvSpec.num_actions >= 1), got '
           f'{env_spec.describe()}.')
    self._config = config = config_lib.R2D2Config(**arguments)
    self._configured_learning_rate = float(config.learning_rate)
    self._env_spec = env_spec

    def make_network(name):
      # The same seed for both: identical variable order and shapes, then a copy.
      return networks.DuelingQNetwork(
          env_spec.observation_shape, env_spec.observation_dtype, env_spec.num_actions,
          torso=config.torso, mlp_hidden_sizes=config.mlp_hidden_sizes,
          use_lstm=config.use_lstm, lstm_size=config.lstm_size,
          head_hidden_size=config.head_hidden_size, seed=config.seed, name=name)

    self._network = make_network('online_q')
    self._target_network = make_network('target_q')
    # Not trainable: the tape then does not watch it and the optimizer never sees it.
    self._target_network.trainable = False
    self._copy_to_target()
    self._optimizer = keras.optimizers.Adam(config.learning_rate, epsilon=config.adam_epsilon)
    # Its own stream (not the global seed), so exploration is reproducible per agent.
    self._sampler = tf.random.Generator.from_seed(config.seed)
    self._train_function = tf.function(self._train)

  @property
  def config(self) -> config_lib.R2D2Config:
    return self._config

  @property
  def unroll_length(self) -> int:
    """burn_in + trained_length: unrolls hold this + 1 steps."""
    return self._config.burn_in + self._config.unroll_length

  @property
  def unroll_overlap(self) -> int:
    # Sequences overlap by the burn-in, as in the R2D2 paper: each step is
    # trained on after a burn-in of real experience.
    return self.burn_in

  @property
  def trained_length(self) -> int:
    """Transitions trained per sequence, after the burn-in."""
    return self._config.unroll_length

  @property
  def burn_in(self) -> int:
    return self._config.burn_in

  @property
  def batch_size(self) -> int:
    return self._config.batch_size

  @property
  def target_network(self) -> networks.DuelingQNetwork:
    return self._target_network

  def initial_core_state(self, num_envs: int) -> Tuple[np.ndarray, ...]:
    """Zero LSTM state and epsilon_base for every env: ((c, h,) epsilon [num_envs])."""
    lstm = tuple(np.asarray(x) for x in self._network.initial_state(num_envs))
    return lstm + (np.full([num_envs], self._config.epsilon_base, np.float32),)

  def env_core_state(self, env_ordinal: int, evaluation: bool) -> Tuple[np.ndarray, ...]:
    """One env's fresh core_state, without a batch dim: zero LSTM state, then its epsilon.

    Args:
      env_ordinal: the env's index among all envs, >= 0; only its value mod
        num_epsilon_envs matters.
      evaluation: the env evaluates the policy: it gets eval_epsilon.
    """
    _check(isinstance(env_ordinal, (int, np.integer)) and env_ordinal >= 0,
           f'env_ordinal must be an int >= 0, got {env_ordinal!r}.')
    config = self._config
    if evaluation:
      epsilon = config.eval_epsilon
    else:
      epsilon = exploration.env_epsilon(env_ordinal, config.num_epsilon_envs,
                                        config.epsilon_base, config.epsilon_alpha)
    lstm = tuple(np.asarray(x)[0] for x in self._network.initial_state(1))
    return lstm + (np.asarray(epsilon, np.float32),)

  @tf.function
  def inference(self, observation, reward, done, core_state):
    """Epsilon-greedy actions; see base.Agent.inference.

    One trace per input shape and dtype: pass observation in the env's dtype,
    reward float32, done bool and core_state float32, as `warm_up` does.
    Returns (action int32 [B], {'q': [B, A] float32}, new core_state).
    """
    del reward  # The network does not condition on the previous reward.
    *lstm_state, epsilon = core_state
    q, new_lstm_state = self._network.step(observation, done, tuple(lstm_state))
    action = exploration.epsilon_greedy(q, epsilon, self._sampler.make_seeds(2))
    return action, {'q': q}, tuple(new_lstm_state) + (tf.identity(epsilon),)

  def _copy_to_target(self):
    """target <- online, variable by variable (both were built in the same order)."""
    for target, online in zip(self._target_network.weights, self._network.weights):
      target.assign(online)
    return tf.constant(True)

  def checkpoint_items(self) -> Dict[str, object]:
    return {'model': self._network, 'target_model': self._target_network,
            'optimizer': self._optimizer}

  def _check_batch(self, batch: Mapping[str, Any]) -> None:
    base.check_batch(batch, _TRAIN_FIELDS, (self.batch_size, self.unroll_length + 1),
                     '[batch_size, burn_in + unroll_length + 1]',
                     also_required=('core_state', 'importance_weights'))
    weights_shape = np.shape(batch['importance_weights'])
    _check(weights_shape == (self.batch_size,),
           f"batch['importance_weights'] has shape {weights_shape}, expected "
           f'[batch_size] = [{self.batch_size}].')
    num_parts = len(self.initial_core_state(1))
    _check(len(batch['core_state']) == num_parts,
           f"batch['core_state'] has {len(batch['core_state'])} arrays, expected "
           f'{num_parts} (LSTM state, then epsilon).')

  def train_step(self, batch: Mapping[str, Any]) -> Dict[str, Any]:
    """One optimizer step on a [batch_size, burn_in + unroll_length + 1] batch.

    Args:
      batch: STEP_FIELDS arrays [B, L + 1, ...] (L = burn_in + unroll_length),
        'core_state' (the stored state before step 0, epsilon included) and
        'importance_weights' [B] float32. Other keys ('q') are ignored.

    Returns:
      Python floats loss, mean_q, mean_target, mean_abs_td, max_abs_td,
      valid_fraction, grad_norm (before clipping), learning_rate and
      target_updated (1.0 on the steps that copied the target network), and
      'priorities': np.ndarray [B] float64, the sequences' new replay priorities
      eta max_t |delta_t| + (1 - eta) mean_t |delta_t| over the valid steps of the
      trained part, from the TD errors before this update. The learner must pop
      'priorities' before logging the rest.
    """
    self._check_batch(batch)
    self._build_optimizer()
    fields = {key: tf.convert_to_tensor(np.asarray(batch[key])) for key in _TRAIN_FIELDS}
    core_state = tuple(tf.convert_to_tensor(np.asarray(x, np.float32))
                       for x in batch['core_state'])
    weights = tf.convert_to_tensor(np.asarray(batch['importance_weights'], np.float32))
    logs, abs_td_errors, valid_mask = self._train_function(fields, core_state, weights)
    result: Dict[str, Any] = {key: float(value) for key, value in logs.items()}
    result['priorities'] = prioritized.sequence_priority(
        abs_td_errors.numpy(), eta=self._config.priority_eta, mask=valid_mask.numpy(), axis=0)
    return result

  def sequence_loss(self, fields: Mapping[str, Any], core_state,
                    importance_weights) -> loss_lib.LossOutputs:
    """The loss of a batch-major batch: burn-in, then the trained part; traceable.

    See networks.burn_in_and_unroll for the burn-in (no gradient reaches it) and
    loss.r2d2_loss for the targets and the reduction. Differentiable w.r.t. the
    online network's variables (and float observations of the trained part).

    Args:
      fields: _TRAIN_FIELDS tensors [B, L + 1, ...].
      core_state: the stored core_state, each [B, ...]; its last element (the
        epsilon) is ignored.
      importance_weights: [B].
    """
    def time_major(x):
      x = tf.convert_to_tensor(x)
      return tf.transpose(x, [1, 0] + list(range(2, x.shape.rank)))

    batch = {key: time_major(fields[key]) for key in _TRAIN_FIELDS}
    terminated = tf.cast(batch['terminated'], tf.bool)
    truncated = tf.cast(batch['truncated'], tf.bool)
    # Step t's flags belong to the transition into observation[t]: they say
    # whether observation[t] starts an episode (reset the LSTM) and, shifted by
    # one, whether transition t -> t+1 ended (discount) or was cut (truncated).
    done = tf.logical_or(terminated, truncated)
    lstm_state = tuple(tf.convert_to_tensor(x, tf.float32) for x in core_state[:-1])
    config = self._config
    burn = config.burn_in
    online_q, target_q = networks.burn_in_and_unroll(
        self._network, self._target_network, batch['observation'], done, lstm_state, burn)
    return loss_lib.r2d2_loss(
        online_q, target_q, actions=batch['action'][burn:-1],
        rewards=batch['reward'][burn + 1:], terminated=terminated[burn + 1:],
        truncated=truncated[burn + 1:], importance_weights=importance_weights,
        discount=config.discount, n_steps=config.n_steps, rescaling_eps=config.rescaling_eps)

  def _train(self, fields, core_state, importance_weights):
    """The traced part of train_step: returns (scalar logs, |delta| [T, B], mask [T, B])."""
    variables = self._network.trainable_variables
    with tf.GradientTape() as tape:
      outputs = self.sequence_loss(fields, core_state, importance_weights)
    gradients = tape.gradient(outputs.loss, variables)
    max_grad_norm = self._config.max_grad_norm
    if max_grad_norm is None:
      grad_norm = tf.linalg.global_norm(gradients)
    else:
      gradients, grad_norm = tf.clip_by_global_norm(gradients, max_grad_norm)
    # The rate this step uses (read before apply: a schedule advances with it).
    learning_rate = tf.convert_to_tensor(self._optimizer.learning_rate, tf.float32)
    self._optimizer.apply_gradients(zip(gradients, variables))
    # Counted by the optimizer's iterations, so the period survives a checkpoint restore.
    iterations = tf.convert_to_tensor(self._optimizer.iterations)
    due = tf.equal(iterations % self._config.target_update_period, 0)
    updated = tf.cond(due, self._copy_to_target, lambda: tf.constant(False))
    logs = dict(outputs.logs, loss=outputs.loss, grad_norm=grad_norm,
                learning_rate=learning_rate, target_updated=tf.cast(updated, tf.float32))
    return logs, outputs.abs_td_errors, outputs.valid_mask
