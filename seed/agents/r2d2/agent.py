"""The R2D2 agent (Kapturowski et al., 2019): recurrent Q-learning from prioritized replay.

Actors act epsilon-greedily with `inference`, each env with its own epsilon from
its ActingParams (`acting_params` gives the Ape-X ladder); unrolls go to a
prioritized sequence replay and `train_step` regresses n-step double-Q targets
with value rescaling, returning the new priorities of the sequences it trained on.

An unroll (a sequence) holds burn_in_steps + trained_steps + 1 steps: the first
burn_in_steps only prime the LSTM from the stored state; the trained part is the
last trained_steps + 1 steps (trained_steps transitions and the bootstrap state).
core_state is the LSTM state (c, h), () without an LSTM.
"""
import math
from typing import Dict, Optional, Tuple

import keras
import numpy as np
import tensorflow as tf

from seed import types
from seed.agents.common import base
from seed.agents.common import learning
from seed.agents.common import tf_agent
from seed.agents.r2d2 import config as config_lib
from seed.agents.r2d2 import loss as loss_lib
from seed.agents.r2d2 import networks
from seed.envs import spec as spec_lib
from seed.losses import shapes
from seed.replay import prioritized


class R2D2Agent(tf_agent.TFAgent):
  """Recurrent dueling double-Q network, n-step targets, burn-in, prioritized replay.

  Every hyperparameter is in `config` (an R2D2Config, which gin binds).
  """

  input_kind = types.InputKind.REPLAY
  trained_outputs = ()  # Training recomputes Q; the acting 'q' is not stored.
  config_class = config_lib.R2D2Config
  several_devices_refusal = ''  # learning.gradients: each device trains on its share of sequences

  def __init__(self, env_spec: spec_lib.EnvSpec,
               config: Optional[config_lib.R2D2Config] = None):
    """The online and target networks and the optimizer (config: None takes R2D2Config()
    as gin binds it). ValueError for an env spec it cannot act in."""
    base.check_discrete_spec(env_spec, 'R2D2Agent')
    super().__init__(env_spec, config)
    config = self.config

    def make_network(name):
      # The same seed for both: identical variable order and shapes, then a copy.
      return networks.DuelingQNetwork(
          env_spec.observation_shape, env_spec.observation_dtype, env_spec.num_actions,
          torso=config.torso, mlp_hidden_sizes=config.mlp_hidden_sizes,
          use_lstm=config.use_lstm, lstm_size=config.lstm_size,
          head_hidden_size=config.head_hidden_size, seed=config.seed,
          unroll_torso_dtype=config.unroll_torso_dtype, name=name)

    self.network = make_network('online_q')
    self._target_network = make_network('target_q')
    # Not trainable: the tape then does not watch it and the optimizer never sees it.
    self._target_network.trainable = False
    learning.copy_weights(self.network, self._target_network)
    self.optimizer = keras.optimizers.Adam(config.learning_rate, epsilon=config.adam_epsilon)
    # Its own stream (not the global seed), so exploration is reproducible per agent.
    self._sampler = tf.random.Generator.from_seed(config.seed)
    # Training envs act with their rung's epsilon ** this (1: the ladder as it starts);
    # observe_env_frames moves it along a decaying ladder.
    self._epsilon_exponent = tf.Variable(1.0, trainable=False, dtype=tf.float32,
                                         name='epsilon_exponent')
    self._epsilon_exponent_value = 1.0  # What the variable holds, without reading it back.
    self._train_function = tf.function(self._train)

  @property
  def unroll_length(self) -> int:
    """burn_in_steps + trained_steps: a sequence holds this + 1 steps."""
    return self.config.burn_in_steps + self.config.trained_steps

  @property
  def unroll_overlap(self) -> int:
    # Sequences overlap by the burn-in, as in the R2D2 paper: each step is
    # trained on after a burn-in of real experience.
    return self.config.burn_in_steps

  @property
  def batch_unrolls(self) -> int:
    return self.config.batch_sequences

  @property
  def target_network(self) -> networks.DuelingQNetwork:
    return self._target_network

  def initial_core_state(self, num_envs: int) -> Tuple[np.ndarray, ...]:
    """(c, h), each [num_envs, lstm_size] zeros, with an LSTM; () without."""
    return tuple(np.asarray(x) for x in self.network.initial_state(num_envs))

  def acting_params(self, env_ordinal: int, evaluation: bool) -> types.ActingParams:
    """The env's rung of the Ape-X epsilon ladder as it starts, or eval_epsilon for
    evaluation envs (a decaying ladder moves the rungs in `inference`).

    Args:
      env_ordinal: the env's index among all envs, >= 0; only its value mod
        num_epsilon_envs matters.
      evaluation: the env evaluates the policy.
    """
    if not (isinstance(env_ordinal, (int, np.integer)) and env_ordinal >= 0):
      raise ValueError(f'env_ordinal must be an int >= 0, got {env_ordinal!r}.')
    config = self.config
    if evaluation:
      epsilon = config.eval_epsilon
    else:
      epsilon = env_epsilon(env_ordinal, config.num_epsilon_envs,
                                        config.epsilon_base, config.epsilon_alpha)
    return types.ActingParams(epsilon=np.float32(epsilon), evaluation=np.bool_(evaluation))

  def observe_env_frames(self, env_frames: int) -> None:
    """With a decaying ladder (epsilon_base_final set), every training env's epsilon
    from here on is its rung's at b(env_frames) (ladder_exponent)."""
    config = self.config
    if config.epsilon_base_final is None:
      return
    exponent = ladder_exponent(env_frames, config.epsilon_base,
                                           config.epsilon_base_final,
                                           config.epsilon_decay_frames)
    if exponent != self._epsilon_exponent_value:  # Still once the decay has ended.
      self._epsilon_exponent.assign(exponent)
      self._epsilon_exponent_value = exponent

  @property
  def epsilon_exponent(self) -> float:
    """The power training envs raise their rung's starting epsilon to now (1: as it starts)."""
    return self._epsilon_exponent_value

  @tf.function
  def inference(self, observation, reward, done, core_state, acting: types.ActingParams):
    """Epsilon-greedy actions, each training row with its acting.epsilon ** the ladder's
    exponent now (observe_env_frames), each evaluation row with its acting.epsilon; see
    base.Agent.inference.

    One trace per input shape and dtype: pass observation in the env's dtype,
    reward float32, done bool, core_state float32 and acting as `warm_up` does.
    Returns (action int32 [B], {'q': [B, A] float32}, new core_state).
    """
    del reward  # The network does not condition on the previous reward.
    q, new_state = self.network.step(observation, done, tuple(core_state))
    epsilon = tf.where(acting.evaluation, acting.epsilon,
                       acting.epsilon ** self._epsilon_exponent)
    action = epsilon_greedy(q, epsilon, self._sampler.make_seeds(2))
    return action, {'q': q}, tuple(new_state)

  def _optimized(self) -> Tuple[tf_agent.Optimized, ...]:
    return (tf_agent.Optimized(self.optimizer, self.network.trainable_variables,
                               float(self.config.learning_rate)),)

  def checkpoint_items(self) -> Dict[str, object]:
    return {'model': self.network, 'target_model': self._target_network,
            'optimizer': self.optimizer}

  def train_step(self, sample: types.Sample) -> types.TrainResult:
    """One optimizer step on `batch_sequences` sequences, weighted by sample.weights.

    Returns:
      TrainResult with logs (Python floats) loss, mean_q, mean_target, mean_abs_td,
      max_abs_td, valid_fraction, grad_norm (before clipping), learning_rate and
      target_updated (1.0 on the steps that copied the target network),
      top_rung_epsilon (the ladder's first rung as training envs act now) and
      skipped_updates (1.0 when a NaN or Inf loss or gradient left the update out,
      see learning.apply_if_finite), and priorities: float64 [B], the sequences'
      new replay priorities eta max_t |delta_t| + (1 - eta) mean_t |delta_t| over
      the valid steps of the trained part, from the TD errors before this update;
      None when the update was skipped.
    """
    shapes.check_sample(sample, self.batch_unrolls, self.unroll_length + 1,
                        '[batch_sequences, burn_in_steps + trained_steps + 1]',
                        core_state_parts=len(self.initial_core_state(1)))
    self._build_optimizer()
    steps = tf.nest.map_structure(tf.convert_to_tensor,
                                  sample.data.steps._replace(policy_outputs={}))
    core_state = tuple(tf.convert_to_tensor(np.asarray(x, np.float32))
                       for x in sample.data.core_state)
    weights = tf.convert_to_tensor(np.asarray(sample.weights, np.float32))
    logs, abs_td_errors, valid_mask = self._train_function(steps, core_state, weights)
    logs = {key: float(value) for key, value in logs.items()}
    # The ladder's top rung as training envs act now (epsilon_base until a decay moves it).
    logs['top_rung_epsilon'] = float(self.config.epsilon_base) ** self.epsilon_exponent
    skipped = int(logs['skipped_updates'])
    if skipped:
      # Priorities of a step with skips are not used (types.TrainResult), and its
      # TD errors are likely not finite.
      return types.TrainResult(logs=logs, skipped_updates=skipped)
    priorities = prioritized.sequence_priority(
        abs_td_errors.numpy(), eta=self.config.priority_eta, mask=valid_mask.numpy(), axis=0)
    return types.TrainResult(logs=logs, priorities=priorities)

  def sequence_loss(self, steps: types.Steps, core_state,
                    importance_weights) -> loss_lib.LossOutputs:
    """The loss of batch-major sequences: burn-in, then the trained part; traceable.

    See networks.burn_in_and_unroll for the burn-in (no gradient reaches it) and
    loss.r2d2_loss for the targets and the reduction. Differentiable w.r.t. the
    online network's variables (and float observations of the trained part).

    Args:
      steps: Steps of [B, L + 1, ...] arrays (L = burn_in_steps + trained_steps);
        policy_outputs are not read.
      core_state: the stored LSTM state before step 0, each [B, lstm_size] (or ()).
      importance_weights: [B].
    """
    observation, reward, terminated, truncated, action = (
        shapes.time_major(getattr(steps, field)) for field in types.STEP_FIELDS)
    terminated = tf.cast(terminated, tf.bool)
    truncated = tf.cast(truncated, tf.bool)
    # Step t's flags belong to the transition into observation[t]: they say
    # whether observation[t] starts an episode (reset the LSTM) and, shifted by
    # one, whether transition t -> t+1 ended (discount) or was cut (truncated).
    done = tf.logical_or(terminated, truncated)
    lstm_state = tuple(tf.convert_to_tensor(x, tf.float32) for x in core_state)
    config = self.config
    burn = config.burn_in_steps
    online_q, target_q = networks.burn_in_and_unroll(
        self.network, self._target_network, observation, done, lstm_state, burn)
    return loss_lib.r2d2_loss(
        online_q, target_q, actions=action[burn:-1], rewards=reward[burn + 1:],
        terminated=terminated[burn + 1:], truncated=truncated[burn + 1:],
        importance_weights=importance_weights, discount=config.discount,
        n_steps=config.n_steps, rescaling_eps=config.rescaling_eps)

  def _train(self, steps, core_state, importance_weights):
    """The traced part of train_step: returns (scalar logs, |delta| [T, B], mask [T, B]).
    On several devices (learning.gradients) each computes the loss of its share of the
    sequences; the logs are of the whole batch."""
    variables = self.network.trainable_variables

    def loss_fn(shard):
      outputs = self.sequence_loss(*shard)
      return outputs.loss, {}, (outputs.abs_td_errors, outputs.valid_mask,
                                outputs.q_taken, outputs.targets)

    batch = (steps, core_state, importance_weights)  # batch-major: sequences on axis 0
    loss, gradients, _, (abs_td_errors, valid_mask, q_taken, targets) = (
        learning.gradients(self.strategy, loss_fn, variables, batch,
                                tf.nest.map_structure(lambda _: 0, batch), (1, 1, 1, 1)))
    # The rate this step uses (read before apply: a schedule advances with it).
    learning_rate = tf.convert_to_tensor(self.optimizer.learning_rate, tf.float32)
    applied, grad_norm = learning.apply_if_finite(self.optimizer, gradients, variables,
                                                  loss, self.config.max_grad_norm)
    updated = learning.copy_to_target_when_due(self.optimizer, applied,
                                               self.config.target_update_period,
                                               self.network, self._target_network)
    logs = dict(loss_lib.sequence_logs(q_taken, targets, abs_td_errors, valid_mask),
                loss=loss, grad_norm=grad_norm, learning_rate=learning_rate,
                target_updated=tf.cast(updated, tf.float32),
                skipped_updates=1.0 - tf.cast(applied, tf.float32))
    return logs, abs_td_errors, valid_mask


# Per-env epsilon-greedy exploration (Ape-X, Horgan et al., 2018; kept by R2D2): each env
# acts with its own epsilon from a geometric ladder, so a few envs explore a lot and most
# act nearly greedily; evaluation envs use a tiny epsilon. The ladder is fixed (Ape-X,
# R2D2), or its base falls linearly over the first env frames of a run, as DQN's single
# epsilon does (`ladder_exponent`).


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
