"""What one scenario reports, the machine it ran on, and the table of several."""
import dataclasses
import os
import platform
import time
from typing import Dict, List, Sequence


class Unavailable(Exception):
  """This machine cannot run the scenario (e.g. no root to mount a tmpfs); says why."""


@dataclasses.dataclass
class Outcome:
  """One scenario's result: passed when no failure was recorded.

  count: how many times the fault or input was applied. figures: named
  measurements with their units in the name (e.g. 'reconnect_s_max'), shown in
  the table as they are. failures: one line per broken expectation.
  """
  scenario: str
  count: int
  seconds: float = 0.0
  figures: Dict[str, str] = dataclasses.field(default_factory=dict)
  failures: List[str] = dataclasses.field(default_factory=list)

  @property
  def passed(self) -> bool:
    return not self.failures

  def fail(self, message: str) -> None:
    self.failures.append(message)


class Stopwatch:
  """`with Stopwatch(outcome):` sets outcome.seconds to the block's wall time."""

  def __init__(self, outcome: Outcome):
    self._outcome = outcome

  def __enter__(self):
    self._start = time.monotonic()
    return self._outcome

  def __exit__(self, *exc):
    self._outcome.seconds = time.monotonic() - self._start


def machine() -> str:
  """Cores, memory, CPU model and Python, for the table's caption."""
  model = platform.processor() or platform.machine()
  try:
    with open('/proc/cpuinfo') as f:
      names = [line.split(':', 1)[1].strip() for line in f if line.startswith('model name')]
    model = names[0] if names else model
  except OSError:
    pass
  memory_gib = os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30
  return (f'{os.cpu_count()} cores ({model}), {memory_gib:.0f} GiB, '
          f'Python {platform.python_version()}, {platform.system()} {platform.release()}')


def table(outcomes: Sequence[Outcome]) -> str:
  """Markdown: scenario | count | result | time | figures, then every failure."""
  lines = ['| scenario | count | result | time | figures |', '|---|---:|---|---:|---|']
  for o in outcomes:
    figures = '; '.join(f'{name} {value}' for name, value in o.figures.items())
    result = 'pass' if o.passed else f'FAIL ({len(o.failures)})'
    lines.append(f'| {o.scenario} | {o.count:,} | {result} | {o.seconds:.0f} s | {figures} |')
  for o in outcomes:
    lines += [f'- {o.scenario}: {failure}' for failure in o.failures]
  return '\n'.join(lines)
