"""Runs one batch of env steps through the policy and files what comes out.

This is the work of an inference thread: gather each env's observation and
recurrent state, pad to a fixed batch size, run the agent's policy once,
then store the new state, append each step to its env's unroll and count
episodes. Agent-agnostic: the agent's policy outputs are stored as they come.

A lost life (Atari's episodic_life) ends the value target but not the episode: the
policy, the unrolls and the train step see it as `terminated` (zero discount, the
recurrent state reset), the episode's return and length run on to the game's end.

With several inference devices (--inference_devices) each has a lane, a thread of
its own, and batches run on them at once. They never share an env (an actor's next
step for an env waits for this one's action), so each env's slot is touched by one
lane at a time; what they share (counters, metrics, the agent input) takes its own lock.
"""
import dataclasses
import math
import time
from typing import Callable, List, Optional, Sequence

import numpy as np

from seed import types
from seed.inference.env_state import EnvSlot
from seed.inference.unroll_builder import StepRows


def padded_batch_sizes(max_batch_envs: int) -> List[int]:
  """Powers of two up to max_batch_envs, and max_batch_envs itself."""
  sizes, size = [], 1
  while size < max_batch_envs:
    sizes.append(size)
    size *= 2
  return sizes + [max_batch_envs]


@dataclasses.dataclass(eq=False)
class StepRequest:
  """One actor's Step: k envs, already checked against the specs."""
  slots: Sequence[EnvSlot]
  observations: np.ndarray  # [k, *obs_shape]
  rewards: np.ndarray       # [k]
  terminated: np.ndarray    # [k]
  truncated: np.ndarray     # [k]
  life_lost: Optional[np.ndarray] = None  # [k]; None: no env lost a life

  def __post_init__(self):
    if self.life_lost is None:
      self.life_lost = np.zeros(len(self.slots), bool)

  @property
  def num_envs(self) -> int:
    return len(self.slots)


@dataclasses.dataclass
class BatchStats:
  num_envs: int
  padded_size: int
  inference_s: float
  lane: int = 0  # the inference device's, in --inference_devices order


class StepProcessor:
  """Callable on a list of StepRequests; returns one action array per request."""

  def __init__(self, agent, max_batch_envs: int, frames_per_step: int,
               put_unroll: Callable[[types.Unroll], bool],
               on_episode: Callable[[float, int, bool, int], None],
               on_batch: Callable[[BatchStats], None], counters,
               devices: Sequence[Optional[str]] = (None,)):
    self._agent = agent
    self.devices = tuple(devices)  # One lane each (None: where TensorFlow places it).
    self.batch_sizes = padded_batch_sizes(max_batch_envs)
    self._frames_per_step = frames_per_step
    self._put_unroll = put_unroll
    self._on_episode = on_episode
    self._on_batch = on_batch
    self._counters = counters
    self._trained_outputs = tuple(agent.trained_outputs)
    self._policies = [{} for _ in self.devices]  # lane -> {padded size: policy}

  @property
  def num_lanes(self) -> int:
    return len(self.devices)

  def __call__(self, requests: Sequence[StepRequest], lane: int = 0) -> List[np.ndarray]:
    """The actions for `requests`, inferred on the device of `lane`."""
    start = time.perf_counter()
    slots = [slot for r in requests for slot in r.slots]
    n = len(slots)
    padded = next((s for s in self.batch_sizes if s >= n), None)
    if padded is None:
      raise ValueError(f'{n} envs in one batch exceed the largest padded size '
                       f'{self.batch_sizes[-1]}')
    observations = _concat_padded([r.observations for r in requests], padded)
    rewards = _concat_padded([r.rewards for r in requests], padded)
    game_over = np.concatenate([r.terminated for r in requests])
    truncated = np.concatenate([r.truncated for r in requests])
    # What the agent sees as the end of an episode: a lost life too (see the docstring).
    terminated = game_over | np.concatenate([r.life_lost for r in requests])
    done = _pad(terminated | truncated, padded)
    core_state = tuple(_pad(np.stack(parts), padded)
                       for parts in zip(*[s.core_state for s in slots]))
    acting = types.ActingParams(*(_pad(part, padded) for part in
                                  types.stack_acting_params([s.acting for s in slots])))

    policy = self._policies[lane].get(padded, self._agent.inference)
    action, outputs, new_state = policy(observations, rewards, done, core_state, acting)
    action = np.asarray(action)[:n]
    # Only what the train step reads goes into unrolls (R2D2's Q values do not).
    outputs = {name: np.asarray(outputs[name])[:n] for name in self._trained_outputs}
    new_state = tuple(np.asarray(part)[:n] for part in new_state)

    rows = StepRows.of(types.Steps(observations, rewards, terminated, truncated, action,
                                   policy_outputs=outputs))
    transitions = 0
    for i, slot in enumerate(slots):
      evaluation = bool(slot.acting.evaluation)
      if not evaluation:  # Evaluation steps are never trained on.
        unroll = slot.unroll.append_row(rows, i, slot.core_state)
        if unroll is not None:
          self._put_unroll(unroll)
      slot.core_state = tuple(part[i] for part in new_state)
      if slot.has_previous_step:
        transitions += 1
        slot.episode_return += float(rewards[i])
        slot.episode_steps += 1
        if game_over[i] or truncated[i]:
          self._on_episode(slot.episode_return, slot.episode_steps, evaluation,
                           int(slot.acting.seed_index))
          slot.episode_return, slot.episode_steps = 0.0, 0
      slot.has_previous_step = True
    self._counters.add(env_steps=transitions, env_frames=transitions * self._frames_per_step)
    self._on_batch(BatchStats(n, padded, time.perf_counter() - start, lane))

    actions, offset = [], 0
    for r in requests:
      actions.append(action[offset:offset + r.num_envs])
      offset += r.num_envs
    return actions

  def warm_up(self) -> None:
    self._agent.warm_up(self.batch_sizes)
    self._policies = [{size: self._agent.batched_policy(size, device)
                       for size in self.batch_sizes} for device in self.devices]


def _pad(array: np.ndarray, size: int) -> np.ndarray:
  if len(array) == size:
    return array
  padding = np.zeros((size - len(array),) + array.shape[1:], array.dtype)
  return np.concatenate([array, padding])


# Batch arrays of at least ALIGNED_BATCH_MIN_BYTES start at a multiple of
# BATCH_ALIGNMENT_BYTES: TensorFlow takes such an array without copying it
# (tf_agent.zero_copy_tensor). Below that size a copy costs less than aligning (~10 µs).
BATCH_ALIGNMENT_BYTES = 64
ALIGNED_BATCH_MIN_BYTES = 256 * 1024


def aligned_empty(shape: Sequence[int], dtype) -> np.ndarray:
  """np.empty(shape, dtype) whose data starts at a multiple of BATCH_ALIGNMENT_BYTES."""
  dtype = np.dtype(dtype)
  nbytes = math.prod(shape) * dtype.itemsize
  raw = np.empty(nbytes + BATCH_ALIGNMENT_BYTES, np.uint8)
  start = -raw.ctypes.data % BATCH_ALIGNMENT_BYTES
  return raw[start:start + nbytes].view(dtype).reshape(shape)


def _concat_padded(arrays: Sequence[np.ndarray], size: int) -> np.ndarray:
  """Concatenates along axis 0 straight into a zero-padded, aligned array (one copy)."""
  # Not np.zeros: a large np.zeros comes as fresh zero pages from the kernel, each
  # faulted in by the copy, where np.empty reuses the allocator's (malloc_tuning).
  shape = (size,) + arrays[0].shape[1:]
  large = math.prod(shape) * arrays[0].itemsize >= ALIGNED_BATCH_MIN_BYTES
  out = (aligned_empty if large else np.empty)(shape, arrays[0].dtype)
  offset = 0
  for a in arrays:
    out[offset:offset + len(a)] = a
    offset += len(a)
  out[offset:] = 0
  return out
