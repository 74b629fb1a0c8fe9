"""`seed plot`: learning curves from TensorBoard event files, as a PNG.

  seed plot runs/catch_a runs/catch_b --out catch.png
  seed plot runs/dmc15/cheetah-run__seed=0 --baseline runs/sac_cheetah --out cheetah.png
  seed plot runs/grid --compare --out grid.png      (python -m seed plot ... likewise)
  seed plot runs/ppo runs/sac --reference 'cleanrl SAC, 1M=9600' \
      --save_data docs/figures/halfcheetah.csv --out docs/learning_halfcheetah.png
  seed plot docs/figures/learning_breakout.csv --window 100 --published Breakout \
      --reference 'cleanrl PPO@40M=414.7' --out docs/learning_breakout.png
  seed plot docs/figures/halfcheetah.csv --out docs/learning_halfcheetah.png

Each RUN is a run directory (its events files), or a directory of run directories, each
a seed of the same experiment (the experiment runner's `<name>__seed=<k>`). A learner
that trained several seeds (--num_seeds) logged each under `seed_<k>/`: those are its
seeds. The curve of a seed is the running mean of its episode returns (--window
episodes) against env frames and against wall time; over several seeds, the mean and
the band between the lowest and highest seed. A run resumed from its checkpoints has
an events file per learner start: the episodes an earlier file logged after the frame
the next one resumed from came from training the resume threw away, and are left out
(to within the next file's first progress tick or episode); wall time is the training
time of what is kept, each file's clock going on from the last episode kept, without
the pause between. --baseline draws another RUN dashed behind the rest; --compare
gives each RUN a panel of its own, side by side, instead of one panel for all;
--reference draws a published figure as a horizontal line, or with its frames
(LABEL@5M=25.5) as a point at those frames on the frames panel; --published GAME draws
every published Atari value for the game (seed.experiments.atari_references: Dopamine's
and RLlib's) at the frames the figure spans, a marker per source; --max_env_frames cuts runs
of different lengths to one budget. --evaluations adds each checkpoint's greedy
evaluation that the run saved (RUN/evaluation/*.json, written by the learner's
--eval_interval_s or by `seed eval`) as a point at the checkpoint's frames: the mean of
its episodes, with a bar from the lowest episode to the highest.

--save_data writes every episode the figure uses (run label, run, baseline or
evaluation, seed, env frames, wall time, return) to a CSV, small enough to keep beside
the figure; a RUN that is such a CSV brings back its runs, their evaluations and the
baseline under their labels, so the figure can be drawn again when the run directories
are gone.
"""
import argparse
import csv
import glob
import os
import sys
import textwrap
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np

from seed.evaluation import report

METRIC = 'episode/return'
EVENTS_GLOB = 'events.out.tfevents.*'


class NoCurves(ValueError):
  """A path with no event files, or event files without the metric."""


# Summaries of one write lie within this of each other (s); writes are seconds apart.
WRITE_S = 0.5
DATA_COLUMNS = ('label', 'role', 'seed', 'env_frames', 'wall_s', 'episode_return')
ROLES = ('run', 'baseline', 'evaluation')
# Evaluations drawn: those that acted as the agent's evaluation actors do (seed.evaluate).
EVALUATION_POLICY = 'greedy'


class Reference(NamedTuple):
  """A published figure: a horizontal line, or a point where `frames` is given."""
  label: str
  value: float
  frames: Optional[float] = None


class Evaluation(NamedTuple):
  """One checkpoint's evaluation: the checkpoint's env frames, the run's wall time at
  those frames (s, on its training curve's clock), each episode's return."""
  frames: float
  wall_s: float
  returns: np.ndarray


class Seed:
  """One seed's episodes: env frames, wall time since its first episode (s), return;
  and its checkpoints' evaluations, if any were read."""

  def __init__(self, frames: np.ndarray, wall_s: np.ndarray, returns: np.ndarray,
               evaluations: Sequence[Evaluation] = ()):
    order = np.argsort(frames, kind='stable')
    self.frames, self.wall_s, self.returns = frames[order], wall_s[order], returns[order]
    self.evaluations = tuple(sorted(evaluations, key=lambda e: e.frames))

  def up_to(self, max_env_frames: float) -> 'Seed':
    """The episodes that ended, and the checkpoints evaluated, by max_env_frames."""
    keep = self.frames <= max_env_frames
    return Seed(self.frames[keep], self.wall_s[keep], self.returns[keep],
                [e for e in self.evaluations if e.frames <= max_env_frames])

  def with_saved_evaluations(self, saved: Sequence[report.SavedEvaluation]) -> 'Seed':
    """This seed with `saved` as its evaluations, each placed on this seed's clock at
    its checkpoint's frames."""
    evaluations = [Evaluation(float(e.env_frames),
                              float(np.interp(e.env_frames, self.frames, self.wall_s)),
                              np.array(e.returns, np.float64)) for e in saved if e.returns]
    return Seed(self.frames, self.wall_s, self.returns, evaluations)


def running_mean(values: np.ndarray, window: int) -> np.ndarray:
  """Mean of each value and up to window - 1 before it."""
  sums = np.cumsum(np.insert(np.asarray(values, np.float64), 0, 0.0))
  counts = np.minimum(np.arange(1, len(values) + 1), window)
  return (sums[1:] - sums[np.arange(1, len(values) + 1) - counts]) / counts


def _read_events(run_dir: str, metric: str) -> Dict[str, List[Tuple[int, float, float]]]:
  """{'': [(step, wall_time, value)], 'seed_0/': [...], ...} of `metric` in run_dir's
  events files (TensorBoard's own reader)."""
  from tensorboard.backend.event_processing import event_accumulator  # pylint: disable=g-import-not-at-top,import-outside-toplevel
  from tensorboard.util import tensor_util  # pylint: disable=g-import-not-at-top,import-outside-toplevel
  found: Dict[str, List[Tuple[int, float, float]]] = {}
  # Each learner start writes a file of its own (its name begins with its start time);
  # shifting each file's clock to begin where the last one ended leaves out the pauses
  # between a stop and the resume.
  clock_end_s = None
  for path in sorted(glob.glob(os.path.join(run_dir, EVENTS_GLOB))):
    events = event_accumulator.EventAccumulator(
        path, size_guidance={event_accumulator.TENSORS: 0, event_accumulator.SCALARS: 0})
    events.Reload()
    tags = events.Tags()
    resumed_at = _first_step(events)
    if found and resumed_at is not None:
      # A resume rewinds to its checkpoint's frames, which the file's first progress
      # tick follows: what earlier files logged after that was trained away.
      found = {prefix: [p for p in points if p[0] < resumed_at]
               for prefix, points in found.items()}
      kept_times = [t for points in found.values() for _, t, _ in points]
      clock_end_s = max(kept_times) if kept_times else clock_end_s
    in_file: Dict[str, List[Tuple[int, float, float]]] = {}
    for tag in tags.get('tensors', []):
      if tag == metric or (tag.startswith('seed_') and tag.endswith('/' + metric)):
        prefix = tag[:-len(metric)]
        in_file.setdefault(prefix, []).extend(
            (e.step, e.wall_time, float(tensor_util.make_ndarray(e.tensor_proto)))
            for e in events.Tensors(tag))
    for tag in tags.get('scalars', []):  # Event files from other writers.
      if tag == metric:
        in_file.setdefault('', []).extend((e.step, e.wall_time, e.value)
                                          for e in events.Scalars(tag))
    times = [t for points in in_file.values() for _, t, _ in points]
    if not times:
      continue
    # The file's clock starts at the learner's start, which its first event follows.
    start_s = min(events.FirstEventTimestamp(), min(times))
    shift_s = 0.0 if clock_end_s is None else clock_end_s - start_s
    for prefix, points in in_file.items():
      found.setdefault(prefix, []).extend((step, t + shift_s, v) for step, t, v in points)
    clock_end_s = max(times) + shift_s
  return found


def _first_step(events) -> Optional[int]:
  """The smallest step of any tag in one events file (None for a file without any)."""
  tags = events.Tags()
  steps = ([e.step for tag in tags.get('tensors', []) for e in events.Tensors(tag)] +
           [e.step for tag in tags.get('scalars', []) for e in events.Scalars(tag)])
  return min(steps) if steps else None


def _seed(points: List[Tuple[int, float, float]]) -> Seed:
  array = np.array(points, np.float64)
  frames, wall_s = array[:, 0], array[:, 1] - array[:, 1].min()
  return Seed(frames, _spread_within_writes(frames, wall_s), array[:, 2])


def _spread_within_writes(frames: np.ndarray, wall_s: np.ndarray) -> np.ndarray:
  """Wall times for episodes from the times their summaries were written.

  The learner writes a tick's episodes together (every few seconds), so they share
  one wall time (to within WRITE_S) and a curve against it would climb in stairs.
  Each write's last episode keeps the write's time; the others get times interpolated
  along env frames between writes, as if frames came at an even rate within a tick."""
  order = np.argsort(frames, kind='stable')
  frames, wall_s = frames[order], wall_s[order]
  is_last = np.append(np.diff(wall_s) > WRITE_S, True)  # a write's last episode
  knot_frames = np.concatenate([[0.0], frames[is_last]])
  knot_s = np.concatenate([[min(0.0, wall_s[0])], wall_s[is_last]])
  spread = np.empty_like(wall_s)
  spread[order] = np.interp(frames, knot_frames, knot_s)
  return spread


def load_data(path: str) -> Tuple[Dict[str, List[Seed]], Optional[Tuple[str, List[Seed]]]]:
  """The runs ({label: seeds}, in file order) and the baseline (or None) of a CSV that
  --save_data wrote; NoCurves naming the path and the columns when it is not one."""
  if not os.path.isfile(path):
    raise NoCurves(f'{path}: no such curve file')
  rows: Dict[Tuple[str, str], Dict[int, List[Tuple[float, float, float]]]] = {}
  with open(path, newline='') as f:
    reader = csv.DictReader(f)
    if tuple(reader.fieldnames or ()) != DATA_COLUMNS:
      raise NoCurves(f'{path}: not a curve file of seed plot --save_data (columns '
                     f'{",".join(DATA_COLUMNS)}; found {",".join(reader.fieldnames or [])})')
    for row in reader:
      if row['role'] not in ROLES:
        raise NoCurves(f'{path}: role {row["role"]!r}; expected {", ".join(ROLES)}')
      rows.setdefault((row['label'], row['role']), {}).setdefault(int(row['seed']), []).append(
          (float(row['env_frames']), float(row['wall_s']), float(row['episode_return'])))
  evaluated = {label: by_seed for (label, role), by_seed in rows.items() if role == 'evaluation'}
  rows = {key: by_seed for key, by_seed in rows.items() if key[1] != 'evaluation'}
  if not rows:
    raise NoCurves(f'{path}: no episodes in it')
  curves = {key: [Seed(*np.array(points, np.float64).T) for _, points in sorted(by_seed.items())]
            for key, by_seed in rows.items()}
  runs = {label: seeds for (label, role), seeds in curves.items() if role == 'run'}
  for label, by_seed in evaluated.items():
    for k, points in by_seed.items():
      if label not in runs or k >= len(runs[label]):
        raise NoCurves(f'{path}: evaluations of {label!r} seed {k} without its episodes')
      runs[label][k] = _with_evaluation_rows(runs[label][k], points)
  baselines = [(label, seeds) for (label, role), seeds in curves.items() if role == 'baseline']
  return runs, (baselines[0] if baselines else None)


def _with_evaluation_rows(seed: Seed, points: List[Tuple[float, float, float]]) -> Seed:
  """`seed` with the evaluations of its saved rows (frames, wall_s, return), an evaluation
  per checkpoint's frames."""
  by_frames: Dict[float, Tuple[float, List[float]]] = {}
  for frames, wall_s, value in points:
    by_frames.setdefault(frames, (wall_s, []))[1].append(value)
  return Seed(seed.frames, seed.wall_s, seed.returns,
              [Evaluation(frames, wall_s, np.array(values))
               for frames, (wall_s, values) in by_frames.items()])


def save_data(path: str, runs: Dict[str, List[Seed]],
              baseline: Optional[Tuple[str, List[Seed]]]) -> None:
  """Every episode of the figure, as load_data reads it back (an evaluation's episodes
  each a row at the checkpoint's frames)."""
  labelled = [(label, 'run', seeds) for label, seeds in runs.items()]
  if baseline is not None:
    labelled.append((baseline[0], 'baseline', baseline[1]))
  os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
  with open(path, 'w', newline='') as f:
    writer = csv.writer(f)
    writer.writerow(DATA_COLUMNS)
    for label, role, seeds in labelled:
      for k, seed in enumerate(seeds):
        for frames, wall_s, value in zip(seed.frames, seed.wall_s, seed.returns):
          writer.writerow([label, role, k, int(frames), f'{wall_s:.1f}', f'{value:.6g}'])
    for label, seeds in runs.items():
      for k, seed in enumerate(seeds):
        for evaluation in seed.evaluations:
          for value in evaluation.returns:
            writer.writerow([label, 'evaluation', k, int(evaluation.frames),
                             f'{evaluation.wall_s:.1f}', f'{value:.6g}'])


def load_run(path: str, metric: str = METRIC, evaluations: bool = False) -> List[Seed]:
  """The seeds of RUN (see the module docstring), with their checkpoints' greedy
  evaluations if `evaluations`; NoCurves naming the path otherwise."""
  if not os.path.isdir(path):
    raise NoCurves(f'{path}: not a directory')
  if glob.glob(os.path.join(path, EVENTS_GLOB)):
    found = _read_events(path, metric)
    per_seed = {prefix: points for prefix, points in found.items() if prefix}
    chosen = per_seed or ({'': found['']} if found.get('') else {})
    if not chosen:
      raise NoCurves(f'{path}: its event files have no {metric!r}')
    seeds = [_seed(points) for _, points in sorted(chosen.items())]
    saved = (report.read_all(os.path.join(path, 'evaluation'), EVALUATION_POLICY)
             if evaluations else [])
    if saved and len(seeds) > 1:
      raise NoCurves(f'{path}: a learner of {len(seeds)} seeds; its evaluations do not say '
                     'which seed they played')
    return [seeds[0].with_saved_evaluations(saved)] if saved else seeds
  runs = sorted(d for d in glob.glob(os.path.join(path, '*'))
                if glob.glob(os.path.join(d, EVENTS_GLOB)))
  if not runs:
    raise NoCurves(f'{path}: no TensorBoard event files ({EVENTS_GLOB}) in it or in the '
                   'directories under it; give a run directory (its --logdir)')
  seeds = []
  for run in runs:
    seeds.extend(load_run(run, metric, evaluations))
  return seeds


def band(seeds: Sequence[Seed], axis: str, window: int, points: int = 200):
  """(x, mean, low, high) over the seeds on a common grid of `axis` ('frames' or
  'wall_s'), up to where every seed has data; one seed gives its own points."""
  curves = [(getattr(s, axis), running_mean(s.returns, window)) for s in seeds]
  if len(curves) == 1:
    x, y = curves[0]
    return x, y, y, y
  end = min(x[-1] for x, _ in curves)
  start = max(x[0] for x, _ in curves)
  grid = np.linspace(start, end, points) if end > start else np.array([end])
  values = np.array([np.interp(grid, x, y) for x, y in curves])
  return grid, values.mean(axis=0), values.min(axis=0), values.max(axis=0)


def _legend_and_title(figure, axes, title: str) -> None:
  """One legend for all panels, below them, and the title wrapped above them.

  Both rows draw the same curves, so one legend says it all; below the panels it
  hides no curve and long labels (a run's config, its date) are not cut off.
  The figure grows by the legend's and the title's lines.
  """
  entries = {}
  for ax in axes.flat:
    for handle, label in zip(*ax.get_legend_handles_labels()):
      entries.setdefault(label, handle)
  width_in = figure.get_figwidth()
  chars_per_line = int(width_in * 13)  # About 13 characters of 8-point text an inch.
  labels = ['\n'.join(textwrap.wrap(label, chars_per_line)) for label in entries]
  legend_lines = sum(label.count('\n') + 1 for label in labels)
  title = '\n'.join(textwrap.wrap(title, int(width_in * 9)))  # 12-point: about 9 an inch.
  legend_in = legend_lines * 0.17 + 0.2 if entries else 0.0
  title_in = (title.count('\n') + 1) * 0.25
  height_in = figure.get_figheight() + legend_in + title_in
  figure.set_figheight(height_in)
  if entries:
    figure.legend(list(entries.values()), labels, loc='lower center', fontsize=8,
                  framealpha=0.5, borderaxespad=0.2)
  figure.suptitle(title, y=1 - 0.05 / height_in, va='top')
  figure.tight_layout(rect=(0, legend_in / height_in, 1, 1))  # It leaves the suptitle room.


def plot(runs: Dict[str, List[Seed]], out: str, window: int, title: str = '',
         baseline: Optional[Tuple[str, List[Seed]]] = None, compare: bool = False,
         references: Sequence[Reference] = ()) -> None:
  import matplotlib  # pylint: disable=g-import-not-at-top,import-outside-toplevel
  matplotlib.use('Agg')  # Files only: no display.
  from matplotlib import pyplot  # pylint: disable=g-import-not-at-top,import-outside-toplevel
  columns = len(runs) if compare else 1
  longest_s = max(float(seed.wall_s[-1]) for seeds in runs.values() for seed in seeds)
  wall_scale, wall_unit = ((3600.0, 'h') if longest_s >= 7200 else
                           (60.0, 'min') if longest_s >= 120 else (1.0, 's'))
  figure, axes = pyplot.subplots(2, columns, figsize=(5 * columns + 2, 7), squeeze=False,
                                 sharey='row')
  colors = pyplot.rcParams['axes.prop_cycle'].by_key()['color']
  for index, (label, seeds) in enumerate(runs.items()):
    column = index if compare else 0
    for row, (axis, scale, unit) in enumerate((('frames', 1e6, 'env frames (M)'),
                                               ('wall_s', wall_scale, f'wall time ({wall_unit})'))):
      ax = axes[row][column]
      if baseline is not None:
        x, mean, _, _ = band(baseline[1], axis, window)
        ax.plot(x / scale, mean, '--', color='black', linewidth=1,
                label=f'baseline: {baseline[0]}')
      x, mean, low, high = band(seeds, axis, window)
      color = colors[index % len(colors)]
      seeds_text = f' ({len(seeds)} seeds)' if len(seeds) > 1 else ''
      ax.plot(x / scale, mean, color=color, label=label + seeds_text)
      if len(seeds) > 1:
        ax.fill_between(x / scale, low, high, color=color, alpha=0.2)
      evaluations = [e for seed in seeds for e in seed.evaluations]
      if evaluations:
        at = np.array([getattr(e, axis) for e in evaluations]) / scale
        means = np.array([e.returns.mean() for e in evaluations])
        spread = [means - [e.returns.min() for e in evaluations],
                  [e.returns.max() for e in evaluations] - means]
        whose = f'{label}: ' if len(runs) > 1 else ''
        ax.errorbar(at, means, yerr=spread, fmt='o', markersize=3, color=color,
                    elinewidth=0.8, capsize=2, alpha=0.8,
                    label=f'{whose}{EVALUATION_POLICY} evaluations (mean; bar: lowest to '
                    'highest episode)')
      ax.set_xlabel(unit)
      ax.set_ylabel(f'return (mean of {window} episodes)')
      ax.grid(alpha=0.3)
  for ax in axes.flat:  # After every curve, so that the labels are drawn over them.
    for name, value, _ in (r for r in references if r.frames is None):
      ax.axhline(value, color='grey', linestyle=':', linewidth=1, zorder=4)
      ax.annotate(name, (1, value), xycoords=('axes fraction', 'data'), zorder=5,
                  textcoords='offset points', xytext=(-4, 3), ha='right', fontsize=8,
                  color='dimgrey')
  _reference_points(axes[0], [r for r in references if r.frames is not None])
  _legend_and_title(figure, axes, title or default_title(len(runs), window))
  figure.savefig(out, dpi=100)
  pyplot.close(figure)


# Markers of the published points, one per source in the order they come.
REFERENCE_MARKERS = ('D', 's', '^', 'v', 'P', 'X', '*', 'h')


def _reference_points(frame_axes, points: Sequence[Reference]) -> None:
  """Published values at given frames, on each panel of frames: a black-edged marker per
  source (label). The values themselves belong in the docs' tables: written beside the
  points they overlap where sources agree."""
  by_label: Dict[str, List[Reference]] = {}
  for point in points:
    by_label.setdefault(point.label, []).append(point)
  for ax in frame_axes:
    for index, (label, group) in enumerate(by_label.items()):
      x = np.array([p.frames for p in group]) / 1e6
      y = np.array([p.value for p in group])
      ax.plot(x, y, REFERENCE_MARKERS[index % len(REFERENCE_MARKERS)], color='white',
              markeredgecolor='black', markersize=6, zorder=6, linestyle='none',
              label=f'{label} (published)')


def published_references(game: str, max_frames: float) -> List[Reference]:
  """Every published value for the Atari `game` at the frames up to `max_frames` (those
  1% past it too: a run stopped at 5M frames ends its last episodes just before)."""
  from seed.experiments import atari_references  # pylint: disable=g-import-not-at-top
  known = sorted({g for values in atari_references.PUBLISHED.values() for g in values})
  if game not in known:
    raise ValueError(f'--published={game!r}: no published values; games with some: '
                     f'{", ".join(known)}')
  return [Reference(source.name, float(values[game][i]), float(frames))
          for source, values in atari_references.PUBLISHED.items() if game in values
          for i, frames in enumerate(atari_references.FRAMES) if 0.99 * frames <= max_frames]


def default_title(num_runs: int, window: int) -> str:
  """A short title: the legend names the runs, the title says what the curves are."""
  return (f'{num_runs} runs, ' if num_runs > 1 else '') + f'return: mean of {window} episodes'


def _label(path: str) -> str:
  return os.path.basename(os.path.normpath(path))


_FRAME_UNITS = {'': 1.0, 'K': 1e3, 'M': 1e6}


def _reference(text: str) -> Reference:
  """--reference LABEL=RETURN or LABEL@FRAMES=RETURN (FRAMES like 5M, 500K or 5000000) as
  a Reference; ValueError naming the text otherwise."""
  label, _, value = text.rpartition('=')
  label, at, frames_text = label.rpartition('@') if '@' in label else (label, '', '')
  try:
    frames = None
    if at:
      unit = frames_text[-1:].upper() if frames_text[-1:].isalpha() else ''
      frames = float(frames_text[:len(frames_text) - len(unit)]) * _FRAME_UNITS[unit]
    if not label:
      raise ValueError
    return Reference(label, float(value), frames)
  except (ValueError, KeyError):
    raise ValueError(f'--reference={text!r}; expected LABEL=RETURN, e.g. '
                     "'cleanrl PPO, 1M=1400', or LABEL@FRAMES=RETURN for a point, e.g. "
                     "'RLlib IMPALA@5M=25.5'") from None


def _cut(label: str, seeds: List[Seed], max_env_frames: float) -> List[Seed]:
  """The seeds' episodes up to max_env_frames; NoCurves when none is left."""
  cut = [seed.up_to(max_env_frames) for seed in seeds]
  if not all(len(seed.frames) for seed in cut):
    raise NoCurves(f'{label}: no episode ended by --max_env_frames={max_env_frames:g}')
  return cut


def main(argv: Optional[List[str]] = None) -> int:
  parser = argparse.ArgumentParser(prog='seed plot', description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument('runs', nargs='+', metavar='RUN')
  parser.add_argument('--out', required=True, help='PNG path')
  parser.add_argument('--baseline', metavar='RUN', help='a run drawn dashed behind the rest')
  parser.add_argument('--compare', action='store_true', help='a panel per RUN, side by side')
  parser.add_argument('--window', type=int, default=20, help='episodes in the running mean')
  parser.add_argument('--metric', default=METRIC,
                      help=f'the TensorBoard tag (default {METRIC}; eval/episode_return for '
                      'the evaluation actors)')
  parser.add_argument('--title', default='')
  parser.add_argument('--label', action='append', default=[],
                      help='a name for each RUN directory, in order (default: its name); a '
                      'curve file keeps the labels saved in it')
  parser.add_argument('--baseline_label', help="the baseline's name")
  parser.add_argument('--reference', action='append', default=[], metavar='LABEL=RETURN',
                      help="a horizontal line, e.g. a published figure: 'cleanrl, 1M=1400'; "
                      "or a point at given frames: 'RLlib IMPALA@5M=25.5'")
  parser.add_argument('--published', metavar='GAME',
                      help="the published values for an Atari game (Dopamine's, RLlib's) "
                      'as points at their frames, up to the longest run')
  parser.add_argument('--evaluations', action='store_true',
                      help="also draw each RUN directory's saved greedy evaluations of its "
                      'checkpoints (RUN/evaluation/*.json): mean, lowest and highest episode')
  parser.add_argument('--max_env_frames', type=float,
                      help='only the episodes that ended by this many env frames')
  parser.add_argument('--save_data', metavar='CSV',
                      help="also write the figure's episodes here (a RUN can be that file)")
  args = parser.parse_args(argv)
  try:
    if args.window < 1:
      raise ValueError(f'--window={args.window}; expected at least 1')
    directories = [path for path in args.runs if not path.endswith('.csv')]
    if len(args.label) > len(directories):
      raise ValueError(f'{len(args.label)} --label for {len(directories)} run directories '
                       '(a curve file keeps its own labels)')
    labels = iter(args.label)  # Taken by the run directories in order.
    references = [_reference(text) for text in args.reference]
    runs, baseline = {}, None
    for path in args.runs:
      if path.endswith('.csv'):
        saved_runs, saved_baseline = load_data(path)
        loaded = list(saved_runs.items())
        baseline = baseline or saved_baseline
      else:
        loaded = [(next(labels, None) or _label(path),
                   load_run(path, args.metric, args.evaluations))]
      for label, seeds in loaded:
        if label in runs:  # Two runs of one name: told apart by their place.
          label = f'{label} ({len(runs) + 1})'
        runs[label] = seeds
    if args.baseline:
      baseline = (args.baseline_label or _label(args.baseline),
                  load_run(args.baseline, args.metric))
    if args.max_env_frames is not None:
      runs = {label: _cut(label, seeds, args.max_env_frames) for label, seeds in runs.items()}
      if baseline is not None:
        baseline = (baseline[0], _cut(baseline[0], baseline[1], args.max_env_frames))
    if args.published:
      longest = max(float(seed.frames[-1]) for seeds in runs.values() for seed in seeds)
      references += published_references(args.published, longest)
    if args.save_data:
      save_data(args.save_data, runs, baseline)
    plot(runs, args.out, args.window, args.title, baseline, args.compare, references)
  except ValueError as e:
    print(f'seed plot: {e}', file=sys.stderr)
    return 2
  print(f'seed plot: wrote {args.out}')
  return 0


if __name__ == '__main__':
  sys.exit(main())
