"""The contract between an agent and the shared learner machinery.

The inference server, batcher, unroll builder, agent input, checkpointing and
logging know nothing about a particular agent: they talk to it only through
this interface.

Step conventions (the same for every agent). For one env, step t holds:
  observation[t]  the observation the actor sent at step t,
  reward[t]       the reward received on the transition that led to observation[t],
  terminated[t]   that transition ended the episode (observation[t] is then the
                  first observation of the next episode, after the actor's reset),
  truncated[t]    that transition hit a time limit (likewise, observation[t] is a reset one),
  action[t]       the action the policy chose at observation[t],
  plus whatever else `inference` returns in `policy_outputs` (e.g. `logits`).
An unroll is `unroll_length + 1` consecutive steps; consecutive unrolls of one
env share their boundary step. `core_state` is the recurrent state before step 0.
"""
import abc
from typing import Any, Dict, Mapping, Sequence, Tuple

import numpy as np

# Field names every unroll carries, besides the agent's own policy outputs.
STEP_FIELDS = ('observation', 'reward', 'terminated', 'truncated', 'action')


def check_batch(batch: Mapping[str, Any], fields: Sequence[str], leading_shape: Sequence[int],
                leading_names: str, also_required: Sequence[str] = ()) -> None:
  """Raises ValueError naming a missing field or one whose leading dims are not `leading_shape`.

  Args:
    batch: the train step's batch.
    fields: names that must be there, each [*leading_shape, ...].
    leading_shape: e.g. (batch_size, unroll_length + 1).
    leading_names: how the message names those dims, e.g. '[batch_size, unroll_length + 1]'.
    also_required: names that must be there too, shapes not checked (e.g. 'core_state').
  """
  missing = [k for k in tuple(fields) + tuple(also_required) if k not in batch]
  if missing:
    raise ValueError(f'batch lacks {missing}; it has {sorted(batch)}.')
  expected = tuple(leading_shape)
  for key in fields:
    shape = tuple(np.shape(batch[key]))
    if shape[:len(expected)] != expected:
      raise ValueError(f'batch[{key!r}] has shape {shape}, expected leading dims '
                       f'{leading_names} = {list(expected)}.')


class Agent(abc.ABC):
  """What the learner needs from an agent."""

  # 'fifo': each unroll is used once, in arrival order (on-policy: V-trace, PPO).
  # 'replay': unrolls go to a replay buffer (R2D2, SAC).
  input_kind: str = 'fifo'

  @property
  @abc.abstractmethod
  def unroll_length(self) -> int:
    """T: unrolls hold T + 1 steps."""

  @property
  def unroll_overlap(self) -> int:
    """Steps consecutive unrolls share beyond their boundary step (R2D2: its burn-in)."""
    return 0

  @property
  @abc.abstractmethod
  def batch_size(self) -> int:
    """Unrolls per train step."""

  @abc.abstractmethod
  def initial_core_state(self, num_envs: int) -> Tuple[np.ndarray, ...]:
    """Recurrent state for `num_envs` fresh envs, each array [num_envs, ...]; () if stateless."""

  def env_core_state(self, env_ordinal: int, evaluation: bool) -> Tuple[np.ndarray, ...]:
    """The state of one fresh env, without a batch dimension.

    `env_ordinal` numbers the envs 0, 1, 2, ... in the order they first connect
    (stable across reconnects); `evaluation` marks envs of evaluation actors.
    Agents with per-env constants (R2D2's per-env epsilon) carry them in the
    state; by default every env starts from `initial_core_state`.
    """
    del env_ordinal, evaluation
    return tuple(part[0] for part in self.initial_core_state(1))

  @abc.abstractmethod
  def inference(self, observation, reward, done, core_state) -> Tuple[Any, Dict[str, Any], Tuple]:
    """One batched policy step; a `tf.function`.

    Args: observation [B, *obs_shape], reward [B] float32, done [B] bool (the
    step starts a new episode: the agent resets its recurrent state for those
    rows), core_state (tuple of [B, ...]).
    Returns (action [B, ...], policy_outputs {name: [B, ...]}, new core_state).
    The server pads B to a few fixed sizes so this never retraces after warm-up.
    """

  @abc.abstractmethod
  def train_step(self, batch: Mapping[str, np.ndarray]) -> Dict[str, float]:
    """One update from a batch of unrolls; returns scalar logs (losses, entropy, ...).

    `batch` maps each of STEP_FIELDS and each policy output to an array
    [batch_size, unroll_length + 1, ...], and 'core_state' to a tuple of
    [batch_size, ...] arrays.
    """

  @abc.abstractmethod
  def checkpoint_items(self) -> Dict[str, Any]:
    """Trackables to save and restore whole (model, optimizer, ...)."""

  def batched_policy(self, batch_size: int):
    """`inference` for exactly `batch_size` rows, after warm_up.

    Agents may return something cheaper to call than `inference` itself (a
    traced concrete function); the server calls it once per batch.
    """
    del batch_size
    return self.inference

  def on_restored(self) -> None:
    """Called after a checkpoint restore: re-apply config that must win over saved state."""

  def warm_up(self, batch_sizes) -> None:
    """Trace `inference` for each padded batch size and build the optimizer.

    Called once before serving and before restoring a checkpoint, so that
    every variable exists when the checkpoint is read.
    """
