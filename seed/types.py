"""What crosses module borders on the way from an actor's step to a gradient step.

One way only:

  inference server --StepRequest--> StepProcessor --Steps--> UnrollBuilder
  UnrollBuilder --Unroll--> agent input (ReplayMixture or ReplayInput)
  agent input --Sample--> Trainer --Sample--> Agent.train_step --TrainResult--> Trainer
  Trainer --(Sample.ids, TrainResult.priorities)--> input.update_priorities

How an env acts (its exploration epsilon, whether it evaluates) is an `ActingParams`
kept beside the recurrent `core_state`, never inside it: the core state is the
network's, the acting parameters are the env's.

These are NamedTuples, so TensorFlow's nest functions (and tf.function's tracing)
take them as structures. Each type serves for one item and for a batch of them: a
batch has a leading [B] dimension on every array. NumPy only: actors and the replay
import this module without TensorFlow.
"""
import enum
from typing import Dict, Mapping, NamedTuple, Optional, Sequence, Tuple

import numpy as np

class InputKind(str, enum.Enum):
  """What an agent trains from (seed.inputs builds the input for each kind). A str, so
  a kind compares equal to its name ('fifo') in configs and logs."""
  FIFO = 'fifo'
  """Each unroll once, in arrival order, through a replay mixture whose default is the
  queue alone (on-policy: V-trace, PPO; seed.inputs.mixture)."""
  REPLAY = 'replay'
  """Prioritized sequence replay at a sample-to-insert ratio (R2D2, SAC, DDPG, Reactor;
  seed.inputs.replay_input)."""
  FRESH_THEN_REPLAY = 'fresh_then_replay'
  """Each fresh batch, then a Poisson number of replayed ones (ACER; the agent sets
  `replay_schedule`; seed.inputs.fresh_then_replay)."""


# The fields every step carries, besides the agent's policy outputs.
STEP_FIELDS = ('observation', 'reward', 'terminated', 'truncated', 'action')


class ActingParams(NamedTuple):
  """How an env acts; scalars for one env, [B] arrays for a batch.

  epsilon: float32, the probability of a uniformly random action (R2D2's per-env
    ladder; 0 for agents that explore otherwise).
  evaluation: bool, the env belongs to an evaluation actor: it acts with the
    deterministic or near-greedy policy and its steps are never trained on.
  seed_index: int32, which of the learner's independent seeds acts for the env and
    trains on its steps (--num_seeds; 0 with one seed).
  """
  epsilon: np.ndarray
  evaluation: np.ndarray
  seed_index: np.ndarray = np.int32(0)


def stack_acting_params(params: Sequence[ActingParams]) -> ActingParams:
  """[ActingParams of one env] -> ActingParams of [B] arrays."""
  return ActingParams(epsilon=np.array([p.epsilon for p in params], np.float32),
                      evaluation=np.array([p.evaluation for p in params], bool),
                      seed_index=np.array([p.seed_index for p in params], np.int32))


class Steps(NamedTuple):
  """Consecutive steps of one env: every array [T + 1, ...] (batched: [B, T + 1, ...]).

  For step t: observation[t] is what the actor sent; reward[t], terminated[t] and
  truncated[t] belong to the transition that led to observation[t] (after a
  termination or truncation observation[t] is the first of the next episode);
  action[t] is what the policy chose at observation[t]; policy_outputs holds the
  agent's other outputs at step t that its train step reads, by name (V-trace's
  'logits', PPO's 'log_prob', ...), as the agent's `trained_outputs` lists them.
  """
  observation: np.ndarray
  reward: np.ndarray
  terminated: np.ndarray
  truncated: np.ndarray
  action: np.ndarray
  policy_outputs: Mapping[str, np.ndarray]


class Unroll(NamedTuple):
  """T + 1 steps of one env, with what is needed to replay them through the network.

  steps: the steps, [T + 1, ...] each (batched: [B, T + 1, ...]).
  core_state: the recurrent state before step 0, a tuple of arrays (batched: [B, ...]);
    () for feed-forward agents.
  env_id: int64, the env's ordinal on the learner (batched: [B]).
  """
  steps: Steps
  core_state: Tuple[np.ndarray, ...]
  env_id: np.ndarray

  @property
  def batch_shape(self) -> Tuple[int, ...]:
    """The leading dims before a step's own shape: (T + 1,), or (B, T + 1) for a batch."""
    return tuple(np.shape(self.steps.reward))


def stack_unrolls(unrolls: Sequence[Unroll]) -> Unroll:
  """[Unroll] -> one Unroll whose every array has a leading [B] dimension."""
  steps = Steps(*(np.stack([getattr(u.steps, field) for u in unrolls])
                  for field in STEP_FIELDS),
                policy_outputs={name: np.stack([u.steps.policy_outputs[name] for u in unrolls])
                                for name in unrolls[0].steps.policy_outputs})
  core_state = tuple(np.stack(parts) for parts in zip(*(u.core_state for u in unrolls)))
  return Unroll(steps=steps, core_state=core_state,
                env_id=np.array([u.env_id for u in unrolls], np.int64))


def concat_unrolls(batches: Sequence[Unroll]) -> Unroll:
  """Batched Unrolls [B_i, ...] -> one batch [sum B_i, ...], in the order given."""
  return Unroll(
      steps=Steps(*(np.concatenate([getattr(b.steps, field) for b in batches])
                    for field in STEP_FIELDS),
                  policy_outputs={name: np.concatenate([b.steps.policy_outputs[name]
                                                        for b in batches])
                                  for name in batches[0].steps.policy_outputs}),
      core_state=tuple(np.concatenate(parts)
                       for parts in zip(*(b.core_state for b in batches))),
      env_id=np.concatenate([b.env_id for b in batches]))


def take_unrolls(batch: Unroll, indices) -> Unroll:
  """The rows `indices` (int [K]) of a batched Unroll, as a batch [K, ...]."""
  indices = np.asarray(indices, np.int64)
  steps = batch.steps
  return Unroll(
      steps=Steps(*(getattr(steps, field)[indices] for field in STEP_FIELDS),
                  policy_outputs={name: value[indices]
                                  for name, value in steps.policy_outputs.items()}),
      core_state=tuple(part[indices] for part in batch.core_state),
      env_id=batch.env_id[indices])


class Sample(NamedTuple):
  """A batch handed to a train step.

  ids: int64 [B], which items these are: replay insertion ids (the key to update
    their priorities), or arrival numbers from the FIFO.
  data: the unrolls, batched ([B, T + 1, ...] steps).
  weights: float32 [B] importance weights (ones where sampling was uniform or FIFO).
  """
  ids: np.ndarray
  data: Unroll
  weights: np.ndarray


class TrainResult(NamedTuple):
  """What a train step returns.

  logs: scalar diagnostics by name (losses, entropy, ...), Python floats.
  priorities: float64 [B], new replay priorities of the sample's ids, in its
    order; None for agents that do not prioritize.
  skipped_updates: optimizer updates of this step left out because their loss or
    gradients were not finite (NaN/Inf): those parameters and that optimizer's
    state are untouched. Priorities of a step with skips are not used.
  """
  logs: Dict[str, float]
  priorities: Optional[np.ndarray] = None
  skipped_updates: int = 0
