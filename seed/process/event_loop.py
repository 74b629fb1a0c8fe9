"""The event loop the learner's server and the actor run on: uvloop's where it is
installed (libuv under asyncio's API), else asyncio's own.

Why: the learner's event loop reads, decodes, batches and answers every actor message,
and on an accelerator that loop, not the model, bounds how many actors one learner
feeds (docs/performance.md). uvloop runs the same coroutines, transports, timers and
signal handlers for less CPU per message (about a tenth of the learner's per
4-env message, gRPC and Unix socket alike). `--event_loop=asyncio` is the way back.
"""
import asyncio
import importlib.util
from typing import Awaitable, Callable, Optional, TypeVar

CHOICES = ('uvloop', 'asyncio')  # settings.EVENT_LOOPS: the flags' choices (a test checks)
T = TypeVar('T')


def loop_factory(name: str) -> Optional[Callable[[], asyncio.AbstractEventLoop]]:
  """The new_event_loop of `name` (None: asyncio's default). 'uvloop' where it is not
  installed is asyncio's, as a platform without uvloop's wheels gets it."""
  if name not in CHOICES:
    raise ValueError(f'--event_loop={name!r}; expected one of {", ".join(CHOICES)}')
  if name == 'uvloop' and importlib.util.find_spec('uvloop') is not None:
    import uvloop  # pylint: disable=g-import-not-at-top,import-outside-toplevel
    return uvloop.new_event_loop
  return None


def effective(name: str) -> str:
  """The loop `name` gives here: 'uvloop', or 'asyncio' (also where uvloop is missing)."""
  return 'uvloop' if loop_factory(name) is not None else 'asyncio'


def run(main: Awaitable[T], name: str) -> T:
  """asyncio.run(main) on the loop `name` names."""
  with asyncio.Runner(loop_factory=loop_factory(name)) as runner:
    return runner.run(main)
