"""What the learner keeps per env: recurrent state, partial unroll, episode stats."""
import dataclasses
import heapq
import threading
from typing import Callable, Dict, List, Tuple

import grpc
import numpy as np

from seed import types
from seed.inference.unroll_builder import UnrollBuilder
from seed.protocol import ProtocolError


@dataclasses.dataclass(eq=False)
class EnvSlot:
  """One env of one actor, as the learner tracks it."""
  actor_id: int
  index: int
  run_id: str
  ordinal: int  # Its rung of the epsilon ladder and its replay env id, while it lives.
  core_state: Tuple[np.ndarray, ...]  # The network's recurrent state before the next step.
  acting: types.ActingParams          # How this env acts: its epsilon, evaluation or not.
  unroll: UnrollBuilder
  # The first step after a (re)connection is a reset, not a transition.
  has_previous_step: bool = False
  episode_return: float = 0.0
  episode_steps: int = 0


class EnvTable:
  """All envs of all connected actor streams, keyed by (actor_id, split_index, env index).

  Slots live as long as their stream: a disconnection drops them (recurrent
  state, partial unroll, episode statistics), so the table holds the live envs
  only however many actors died. A reconnecting actor (it resets its envs and
  uses a fresh run id) gets fresh slots. A batch already in flight keeps writing
  to the old slot objects, which are then unreachable, so nothing of the old
  stream leaks into the new one.

  Each live env holds an ordinal (its rung of an epsilon ladder, its replay env
  id). A disconnection frees its envs' ordinals and a new env takes the lowest
  free one, so a replaced actor acts with the epsilons of the one it replaces,
  the ladder stays covered, and the ordinals never outnumber the most envs ever
  connected at once, however many actor ids come and go.
  """

  def __init__(self, initial_core_state: Callable[[int], Tuple[np.ndarray, ...]],
               acting_params: Callable[[int, bool], types.ActingParams],
               unroll_length: int, unroll_overlap: int = 0):
    """Args: the agent's initial_core_state and acting_params, and its unroll shape."""
    self._fresh_core_state = tuple(part[0] for part in initial_core_state(1))
    self._acting_params = acting_params  # (env ordinal, evaluation) -> ActingParams
    self._free_ordinals: List[int] = []  # a heap: the lowest free ordinal first
    self._num_ordinals = 0  # ordinals handed out: the most envs ever connected at once
    self._unroll_length = unroll_length
    self._unroll_overlap = unroll_overlap
    self._slots: Dict[Tuple[int, int], List[EnvSlot]] = {}
    self._connected: Dict[Tuple[int, int], str] = {}  # stream key -> run_id of the open stream
    self._lock = threading.Lock()

  def connect(self, actor_id: int, run_id: str, num_envs: int, split_index: int = 0,
              evaluation: bool = False) -> List[EnvSlot]:
    key = (actor_id, split_index)
    with self._lock:
      if key in self._connected:
        raise ProtocolError(
            grpc.StatusCode.ALREADY_EXISTS,
            f'actor_id {actor_id} (split {split_index}) is already connected (run id '
            f'{self._connected[key]}); give every actor process its own --actor_id')
      slots = [self._new_slot(actor_id, i, run_id, evaluation)
               for i in range(num_envs)]
      self._slots[key] = slots
      self._connected[key] = run_id
      return slots

  def disconnect(self, actor_id: int, run_id: str, split_index: int = 0) -> None:
    key = (actor_id, split_index)
    with self._lock:
      if self._connected.get(key) == run_id:
        del self._connected[key]
        for slot in self._slots.pop(key):
          heapq.heappush(self._free_ordinals, slot.ordinal)

  @property
  def num_ordinals(self) -> int:
    """Ordinals handed out so far: the most envs that were ever connected at once."""
    with self._lock:
      return self._num_ordinals

  @property
  def num_envs(self) -> int:
    """Envs of the open streams (each has its recurrent state and partial unroll here)."""
    with self._lock:
      return sum(len(slots) for slots in self._slots.values())

  def _new_slot(self, actor_id: int, index: int, run_id: str, evaluation: bool) -> EnvSlot:
    if self._free_ordinals:
      ordinal = heapq.heappop(self._free_ordinals)
    else:
      ordinal = self._num_ordinals
      self._num_ordinals += 1
    return EnvSlot(actor_id=actor_id, index=index, run_id=run_id, ordinal=ordinal,
                   core_state=self._fresh_core_state,
                   acting=self._acting_params(ordinal, evaluation),
                   unroll=UnrollBuilder(self._unroll_length, self._unroll_overlap,
                                        env_id=ordinal))
