"""One system's run in the time-to-target bench, kept across starts of the bench.

A system may need more wall time than one sitting gives (its cap is 4 h; a machine may be
lent for less). So a run is a list of segments: each start of the bench that runs the
system adds one, from the launch of the system's command to its stop, and the system
resumes from its own checkpoint (seed's learner from its run directory, Sample Factory
with --restart_behavior=resume, RL Zoo from its saved model). The system's wall time is
the segments' durations added up: the time between two sittings does not count, each
restart's start-up does. Every time in the run's curve is on that clock (`bench_s`).

The list is a JSON file in the system's folder (`segments.json`), written at the launch,
every heartbeat (HEARTBEAT_S) and the stop: a bench killed without its stop (SIGKILL, a
lost machine) loses at most a heartbeat of the clock. When the run ends (the target, a cap,
a crash) its outcome is written too, and a later start of the bench reports it again
without running it.
"""
import dataclasses
import json
import os
import time
from typing import List, Optional

FILE = 'segments.json'
HEARTBEAT_S = 60.0


@dataclasses.dataclass
class Segment:
  """One sitting: epoch seconds of the system's launch and of its stop (or of the last
  heartbeat); `clock_start_epoch_s`: when seed's learner started its own clock in it (its
  episodes' wall_time_s count from there), None for a peer or before it is known."""
  start_epoch_s: float
  end_epoch_s: float
  clock_start_epoch_s: Optional[float] = None

  @property
  def duration_s(self) -> float:
    return max(0.0, self.end_epoch_s - self.start_epoch_s)


@dataclasses.dataclass
class Outcome:
  """How a finished run ended: Result's status, stopped_by and detail."""
  status: str
  stopped_by: str = ''
  detail: str = ''


class Segments:
  """The segments of one system's run in `folder` (read from its file if there is one)."""

  def __init__(self, folder: str):
    self.path = os.path.join(folder, FILE)
    self.segments: List[Segment] = []
    self.outcome: Optional[Outcome] = None
    if os.path.exists(self.path):
      with open(self.path) as f:
        saved = json.load(f)
      try:
        self.segments = [Segment(**s) for s in saved['segments']]
        self.outcome = Outcome(**saved['outcome']) if saved.get('outcome') else None
      except (KeyError, TypeError) as error:
        raise ValueError(f'{self.path}: not a time-to-target segments file ({error}); '
                         'move it away to start that system again') from error

  @property
  def finished(self) -> bool:
    return self.outcome is not None

  def elapsed_s(self, now_epoch_s: Optional[float] = None) -> float:
    """The run's wall time: every segment's duration, the last one's up to
    `now_epoch_s` if given (it still runs), else to its last heartbeat."""
    elapsed = sum(s.duration_s for s in self.segments)
    if now_epoch_s is not None and self.segments:
      elapsed += max(0.0, now_epoch_s - self.segments[-1].end_epoch_s)
    return elapsed

  def begin(self, now_epoch_s: Optional[float] = None) -> Segment:
    """A new segment from now (the system's launch)."""
    now = time.time() if now_epoch_s is None else now_epoch_s
    segment = Segment(now, now)
    self.segments.append(segment)
    self.save()
    return segment

  def heartbeat(self, now_epoch_s: Optional[float] = None) -> None:
    """The current segment still runs at `now`."""
    self.segments[-1].end_epoch_s = time.time() if now_epoch_s is None else now_epoch_s
    self.save()

  def finish(self, outcome: Outcome) -> None:
    self.outcome = outcome
    self.save()

  def bench_s(self, epoch_s: float) -> float:
    """Seconds of the run's clock at `epoch_s`: the durations of the segments before the
    one it falls in, plus its time into that one. A time between two segments counts as
    the end of the earlier; one after the last, as its end."""
    elapsed = 0.0
    for segment in self.segments:
      if epoch_s <= segment.end_epoch_s:
        return elapsed + max(0.0, epoch_s - segment.start_epoch_s)
      elapsed += segment.duration_s
    return elapsed

  def save(self) -> None:
    data = {'segments': [dataclasses.asdict(s) for s in self.segments],
            'outcome': dataclasses.asdict(self.outcome) if self.outcome else None}
    partial = self.path + '.partial'
    with open(partial, 'w') as f:
      json.dump(data, f, indent=1)
    os.replace(partial, self.path)  # Never half a file, whenever the bench is killed.
