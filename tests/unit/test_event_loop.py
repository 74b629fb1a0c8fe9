"""seed.process.event_loop: the loop named by --event_loop, and a clear refusal of any other."""
import asyncio

import pytest

from seed import settings
from seed.process import event_loop


async def _loop_module() -> str:
  await asyncio.sleep(0)
  return type(asyncio.get_running_loop()).__module__


def test_each_choice_runs_a_coroutine_on_its_loop():
  pytest.importorskip('uvloop')  # installed with seed (setup.py), except on Windows
  assert event_loop.run(_loop_module(), 'uvloop').startswith('uvloop')
  assert event_loop.run(_loop_module(), 'asyncio').startswith('asyncio')
  assert [event_loop.effective(name) for name in event_loop.CHOICES] == ['uvloop', 'asyncio']


def test_an_unknown_loop_is_refused_by_name():
  with pytest.raises(ValueError, match=r"--event_loop='trio'; expected one of uvloop, asyncio"):
    event_loop.loop_factory('trio')


def test_the_flags_offer_the_loops_this_module_runs():
  assert settings.EVENT_LOOPS == event_loop.CHOICES
  for schema in (settings.LEARNER, settings.ACTOR):
    assert settings.by_name(schema)['event_loop'].choices == event_loop.CHOICES
