"""What a time-to-target run reports: each system's result, where it reached the target,
the table, and its episodes as seed's curve file (`seed plot --save_data`'s CSV) and figure.

Pure formatting and files; the runs themselves are bench/time_to_target_runs.py.
"""
import dataclasses
import os
from typing import Dict, List, Optional, Sequence

import numpy as np

from bench.peer_episodes import Episode
from seed.experiments import plotting

STATUSES = ('reached', 'cap', 'crashed', 'not installed', 'paused')


@dataclasses.dataclass(frozen=True)
class Caps:
  """When a run stops: the target (mean of the last `window` training episodes), or
  `wall_s` seconds from its launch, or `frames` env frames, whichever comes first."""
  wall_s: float
  frames: int
  target: float = 18.0
  window: int = 20

  def __post_init__(self):
    if self.wall_s <= 0 or self.frames <= 0 or self.window < 1:
      raise ValueError(f'caps: wall_s={self.wall_s}, frames={self.frames}, '
                       f'window={self.window}; all must be positive')

  def wall_text(self) -> str:
    return duration(self.wall_s)

  def frames_text(self) -> str:
    return f'{frames_text(self.frames)} frames'


@dataclasses.dataclass
class Result:
  """How one system's run went.

  status: 'reached' (the target), 'cap' (stopped by a cap: `stopped_by` says which),
  'crashed' (`detail`: its log's last lines), 'not installed' (`detail`: how to install),
  'paused' (the bench's sitting ended first: it resumes in the next).
  episodes: every training episode, in order of its end. env_frames, wall_s: the run's
  frames and seconds (its sittings' added up) when it stopped.
  """
  label: str
  config: str
  layout: str
  status: str
  episodes: List[Episode] = dataclasses.field(default_factory=list)
  env_frames: int = 0
  wall_s: float = 0.0
  stopped_by: str = ''  # 'wall' or 'frames' for a cap
  detail: str = ''

  def __post_init__(self):
    if self.status not in STATUSES:
      raise ValueError(f'status {self.status!r}; expected one of {", ".join(STATUSES)}')


def reached_at(episodes: Sequence[Episode], target: float, window: int) -> Optional[Episode]:
  """The first episode at which the mean of the last `window` episodes (a full window)
  reached `target`; None if none did."""
  if len(episodes) < window:
    return None
  returns = np.array([e.episode_return for e in episodes], np.float64)
  means = np.convolve(returns, np.ones(window) / window, mode='valid')
  hits = np.flatnonzero(means >= target - 1e-9)
  return episodes[int(hits[0]) + window - 1] if hits.size else None


def last_mean(episodes: Sequence[Episode], window: int) -> Optional[float]:
  last = [e.episode_return for e in episodes[-window:]]
  return sum(last) / len(last) if last else None


def frames_text(frames: float) -> str:
  return f'{frames / 1e6:.2f}M' if frames >= 1e6 else f'{frames / 1e3:.0f}K'


def duration(seconds: float) -> str:
  """'0.87 h (52 min)' from an hour, else minutes or seconds."""
  if seconds >= 3600:
    return f'{seconds / 3600:.2f} h ({seconds / 60:.0f} min)'
  if seconds >= 120:
    return f'{seconds / 60:.1f} min'
  return f'{seconds:.0f} s'


def _rate(frames: float, seconds: float) -> str:
  return f'{frames / seconds:,.0f}' if seconds > 0 and frames > 0 else '—'


def table_row(result: Result, caps: Caps) -> str:
  """| system | config | actors × envs | frames to target | wall time to target |
  frames/s | mean of the last window at the end |"""
  mean = last_mean(result.episodes, caps.window)
  mean_text = '—' if mean is None else f'{mean:+.2f} ({len(result.episodes)} episodes)'
  hit = reached_at(result.episodes, caps.target, caps.window)
  if hit is not None:
    frames, wall = frames_text(hit.env_frames), duration(hit.wall_s)
    rate = _rate(hit.env_frames, hit.wall_s)
  elif result.status == 'not installed':
    frames = wall = 'not installed'
    rate = '—'
  elif result.status == 'paused':
    frames = f'paused at {frames_text(result.env_frames)} (resumes)'
    wall = f'paused after {duration(result.wall_s)}'
    rate = _rate(result.env_frames, result.wall_s)
  elif result.status == 'crashed':
    frames = f'crashed at {frames_text(result.env_frames)}'
    wall = f'crashed after {duration(result.wall_s)}'
    rate = _rate(result.env_frames, result.wall_s)
  else:
    cap = caps.wall_text() if result.stopped_by == 'wall' else caps.frames_text()
    frames = f'not by {cap} ({frames_text(result.env_frames)} played)'
    wall = f'not by {cap} ({duration(result.wall_s)})'
    rate = _rate(result.env_frames, result.wall_s)
  return (f'| {result.label} | {result.config} | {result.layout} | {frames} | {wall} | '
          f'{rate} | {mean_text} |')


def table(results: Sequence[Result], caps: Caps, hardware_line: str) -> List[str]:
  """The markdown table, the line naming the CPU, and each crash's or missing peer's
  details below it."""
  target = f'{caps.target:+g}'
  lines = [f'Pong, time to {target} (mean of the last {caps.window} training episodes), '
           f'each system alone on this machine, caps {caps.wall_text()} or '
           f'{caps.frames_text()}; {hardware_line}', '',
           f'| system | config | actors × envs | frames to {target} | wall time to {target} '
           f'| frames/s (to {target} or the cap) | mean of last {caps.window} at the end |',
           '|---|---|---|---:|---:|---:|---:|']
  lines += [table_row(result, caps) for result in results]
  for result in results:
    if result.detail and result.status in ('crashed', 'not installed'):
      lines += ['', f'{result.label} ({result.status}):', *result.detail.splitlines()]
  return lines


def curves(results: Sequence[Result]) -> Dict[str, List[plotting.Seed]]:
  """{label: [its one seed]} of the systems that ended some episode."""
  return {r.label: [plotting.Seed(np.array([e.env_frames for e in r.episodes], np.float64),
                                  np.array([e.wall_s for e in r.episodes], np.float64),
                                  np.array([e.episode_return for e in r.episodes], np.float64))]
          for r in results if r.episodes}


def write_curves(path: str, results: Sequence[Result]) -> List[str]:
  """Writes the systems' episodes to the curve file `path`, keeping the runs of other
  labels it already holds (a rerun of some systems replaces only theirs); the labels
  kept."""
  runs = curves(results)
  kept: Dict[str, List[plotting.Seed]] = {}
  if os.path.exists(path):
    saved, _ = plotting.load_data(path)
    kept = {label: seeds for label, seeds in saved.items()
            if label not in {r.label for r in results}}
  plotting.save_data(path, {**kept, **runs}, None)
  return list(kept)


def draw(csv_path: str, png_path: str, caps: Caps, hardware_line: str) -> None:
  """`seed plot`'s figure of the curve file: return against frames and wall time."""
  runs, _ = plotting.load_data(csv_path)
  plotting.plot(runs, png_path, caps.window,
                title=f'Pong: time to {caps.target:+g}, mean of {caps.window} training '
                f'episodes; {hardware_line}',
                references=[plotting.Reference(f'target {caps.target:+g}', caps.target)])
