"""The contract between an agent and the shared learner machinery.

The inference server, batcher, unroll builder, agent inputs, checkpointing and
logging know nothing about a particular agent: they talk to it only through this
interface, and what passes is typed (seed/types.py): an agent acts on a batch of
observations, core states and ActingParams, and trains on a Sample, returning a
TrainResult. Step conventions are those of seed.types.Steps.
"""
import abc
from typing import Any, Dict, Optional, Tuple

import numpy as np

from seed import types
from seed.envs import spec as spec_lib


def check_discrete_spec(env_spec: spec_lib.EnvSpec, agent_name: str) -> None:
  """Raises ValueError unless `env_spec` is an EnvSpec with discrete actions."""
  if not isinstance(env_spec, spec_lib.EnvSpec):
    raise ValueError(
        f'env_spec must be a seed.envs.spec.EnvSpec, got {type(env_spec).__name__}.')
  if not (env_spec.is_discrete and env_spec.num_actions >= 1):
    raise ValueError(f'{agent_name} needs discrete actions (EnvSpec.num_actions >= 1), '
                     f'got {env_spec.describe()}.')


class Agent(abc.ABC):
  """What the learner needs from an agent."""

  # The agent's config dataclass (seed/agents/<agent>/config.py), set by its __init__.
  config: Any

  # What it trains from (seed.types.InputKind; seed.inputs builds the input).
  input_kind: types.InputKind = types.InputKind.FIFO

  # The policy outputs the train step reads; the unroll builder keeps only these.
  trained_outputs: Tuple[str, ...] = ()

  # The policy output holding the acting network's feature vectors per step, which
  # elite and attentive replay compare with `replay_features`; None: the agent has none.
  feature_output: Optional[str] = None

  # Replay kinds a queue-fed agent's mixture may hold (seed.inputs.mixture_spec.KINDS):
  # 'prioritized' needs TrainResult.priorities and a loss weighted by Sample.weights.
  mixture_kinds: Tuple[str, ...] = ('queue', 'uniform')

  # Why the train step cannot run data-parallel over several learner devices
  # (--learner_devices, seed.agents.common.learning); '' for an agent that can.
  several_devices_refusal: str = (
      'its train step is not yet split into per-device shards of the batch')

  # Sizes: an agent whose config names them unroll_length and batch_unrolls (V-trace,
  # PPO, ACER, Reactor) keeps these; R2D2 and the off-policy agents derive their own.
  @property
  def unroll_length(self) -> int:
    """T: unrolls hold T + 1 steps (R2D2: burn_in_steps + trained_steps)."""
    return self.config.unroll_length

  @property
  def unroll_overlap(self) -> int:
    """Steps consecutive unrolls share beyond their boundary step (R2D2: its burn-in)."""
    return 0

  @property
  def batch_unrolls(self) -> int:
    """Unrolls per train step (sequences for R2D2, n-step transitions for SAC and DDPG)."""
    return self.config.batch_unrolls

  @property
  def samples_per_insert(self) -> Optional[float]:
    """The replay ratio this agent fixes (SAC, DDPG), or None to leave it to ReplayInput."""
    return None

  @property
  def num_seeds(self) -> int:
    """Independent agents trained together (SAC and DDPG: --num_seeds); 1 for the rest."""
    return 1

  @property
  def reset_interval_env_steps(self) -> Optional[float]:
    """Env steps between resets of the networks (SAC, DDPG), or None: no resets."""
    return None

  @abc.abstractmethod
  def initial_core_state(self, num_envs: int) -> Tuple[np.ndarray, ...]:
    """Recurrent state for `num_envs` fresh envs, each array [num_envs, ...]; () if stateless."""

  def acting_params(self, env_ordinal: int, evaluation: bool) -> types.ActingParams:
    """How one env acts. `env_ordinal` numbers envs 0, 1, 2, ... in the order they
    first connect (stable across reconnects); `evaluation` marks envs of evaluation
    actors. By default no epsilon; R2D2 gives each env its rung of the Ape-X ladder."""
    del env_ordinal
    return types.ActingParams(epsilon=np.float32(0.0), evaluation=np.bool_(evaluation))

  @abc.abstractmethod
  def inference(self, observation, reward, done, core_state,
                acting: types.ActingParams) -> Tuple[Any, Dict[str, Any], Tuple]:
    """One batched policy step; a `tf.function`.

    Args: observation [B, *obs_shape], reward [B] float32, done [B] bool (the
    step starts a new episode: the agent resets its recurrent state for those
    rows), core_state (tuple of [B, ...]), acting (ActingParams of [B] arrays).
    Returns (action [B, ...], policy_outputs {name: [B, ...]}, new core_state).
    The server pads B to a few fixed sizes so this never retraces after warm-up.
    """

  @abc.abstractmethod
  def train_step(self, sample: types.Sample) -> types.TrainResult:
    """One update from a batch of `batch_unrolls` unrolls of `unroll_length + 1` steps."""

  def replay_features(self, unrolls: types.Unroll) -> np.ndarray:
    """The current network's feature vectors [B, T + 1, F] for batched stored unrolls,
    comparable with their `feature_output` as acted (only agents that set it)."""
    raise NotImplementedError(f'{type(self).__name__} keeps no feature vectors')

  @abc.abstractmethod
  def checkpoint_items(self) -> Dict[str, Any]:
    """Trackables to save and restore whole (model, optimizer, ...)."""

  def batched_policy(self, batch_size: int, device: Optional[str] = None):
    """`inference` for exactly `batch_size` rows, after warm_up, run on `device` (a
    TensorFlow device name; None: wherever TensorFlow places it).

    Agents may return something cheaper to call than `inference` itself (a
    traced concrete function); the server calls it once per batch.
    """
    del batch_size
    if device is not None:
      raise ValueError(f'{type(self).__name__} runs no TensorFlow: it cannot infer on '
                       f'{device}')
    return self.inference

  def on_restored(self) -> None:
    """Called after a checkpoint restore: re-apply config that must win over saved state."""

  def observe_env_frames(self, env_frames: int) -> None:
    """Told the env frames played so far (the learner's counter, which checkpoints
    keep) before each train step and once before serving, so that acting may follow a
    schedule over the run (R2D2's decaying epsilon ladder). By default nothing does."""
    del env_frames

  def scale_learning_rates(self, fraction: float) -> None:
    """Sets every optimizer's step size to `fraction` times its configured one, for the
    next train steps (the learner's --anneal_learning_rate)."""
    raise NotImplementedError(f'{type(self).__name__} cannot scale its learning rates')

  def warm_up(self, batch_sizes) -> None:
    """Trace `inference` for each padded batch size and build the optimizer.

    Called once before serving and before restoring a checkpoint, so that
    every variable exists when the checkpoint is read.
    """
