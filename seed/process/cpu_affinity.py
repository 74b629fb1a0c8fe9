"""Keeps a process, and every thread it starts afterwards, on a set of CPU cores
(--cpu_cores of the learner and the actor).

Where the learner shares a few cores with its actors, the scheduler moves its threads
(the event loop, the inference lane, TensorFlow's pools) between cores, and every
hand-off between them wakes a thread on another core; on a virtual machine an idle vCPU
wakes slowly. On the 2-core dev machine, one actor of 16 envs was served 3-46% faster
(median 21%) with the learner kept on one core, in each of fifteen paired runs
(docs/performance.md).
Sample Factory pins its rollout workers for the same reason.
"""
import itertools
import os
import sys
from typing import AbstractSet, FrozenSet, Optional

from seed import settings


def parse_cores(text: str) -> FrozenSet[int]:
  """'1' -> {1}; '0-3,6' -> {0, 1, 2, 3, 6}. ValueError names the text and the form."""
  if settings.CORE_LIST.fullmatch(text) is None:
    raise ValueError(f'--cpu_cores={text!r}: expected {settings.CORE_LIST_EXPECTED}')
  cores = set()
  for part in text.split(','):
    first, _, last = part.partition('-')
    low, high = int(first), int(last or first)
    if high < low:
      raise ValueError(f'--cpu_cores={text!r}: the range {part} runs backwards; expected '
                       f'{settings.CORE_LIST_EXPECTED}')
    cores.update(range(low, high + 1))
  return frozenset(cores)


def describe(cores: AbstractSet[int]) -> str:
  """{0, 1, 2, 5} -> '0-2,5'."""
  parts = []
  # Consecutive cores share core - position in the sorted list.
  for _, run in itertools.groupby(enumerate(sorted(cores)), lambda pair: pair[1] - pair[0]):
    run = [core for _, core in run]
    parts.append(str(run[0]) if len(run) == 1 else f'{run[0]}-{run[-1]}')
  return ','.join(parts)


def pin(text: Optional[str]) -> Optional[FrozenSet[int]]:
  """Keeps this process's calling thread, and the threads it starts from now on, on the
  cores `text` names (settings.CORE_LIST); nothing for an empty text. Call it before
  anything starts threads. ValueError names a core this process may not use."""
  if not text:
    return None
  cores = parse_cores(text)
  available = os.sched_getaffinity(0)
  if not cores <= available:
    raise ValueError(f'--cpu_cores={text!r} names cores {describe(cores - available)} that '
                     f'this process may not use; available: {describe(available)}')
  os.sched_setaffinity(0, cores)
  return cores


def pin_or_exit(text: Optional[str]) -> None:
  """pin(text) for a process's main: a bad list ends the process with the error and
  status 2, as a bad flag does."""
  try:
    pin(text)
  except ValueError as e:
    print(f'error: {e}', file=sys.stderr)
    sys.exit(2)
