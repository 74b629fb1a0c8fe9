"""Learning curves as a PNG: the running mean of training-episode returns against env
frames and against wall time, one line per run.

  python -m bench.plot_curves --run pong=/work/runs/pong_vtrace --window 20 \
      --title 'V-trace on Pong' --out docs/learning_pong.png

Each --run is LABEL=RUN_DIRECTORY (its episodes.csv, as the learner writes it).
Needs matplotlib (the 'plots' extra, installed by scripts/venv.sh).
"""
import argparse
import sys

import numpy as np

from bench import learning_curve


def running_mean(values, window: int) -> np.ndarray:
  """Mean of each value and up to window - 1 before it."""
  values = np.asarray(values, np.float64)
  sums = np.cumsum(np.insert(values, 0, 0.0))
  counts = np.minimum(np.arange(1, len(values) + 1), window)
  return (sums[1:] - sums[np.arange(1, len(values) + 1) - counts]) / counts


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument('--run', action='append', required=True, help='LABEL=RUN_DIRECTORY')
  parser.add_argument('--window', type=int, default=20, help='episodes in the running mean')
  parser.add_argument('--title', default='')
  parser.add_argument('--reference', action='append', default=[],
                      help='LABEL=RETURN: a horizontal line, e.g. a published figure')
  parser.add_argument('--max_env_frames', type=float, default=None,
                      help='plot only episodes that ended by this many env frames '
                           '(runs of different lengths at one budget)')
  parser.add_argument('--out', required=True, help='PNG path')
  args = parser.parse_args(argv)
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use('Agg')  # Files only: no display.
  from matplotlib import pyplot  # pylint: disable=g-import-not-at-top

  figure, (by_frames, by_time) = pyplot.subplots(1, 2, figsize=(11, 4), sharey=True)
  for run in args.run:
    label, _, logdir = run.partition('=')
    episodes = learning_curve.read_episodes(logdir)
    if args.max_env_frames is not None:
      episodes = [e for e in episodes if e['frames'] <= args.max_env_frames]
    if not episodes:
      parser.error(f'{logdir}/episodes.csv has no episodes')
    returns = running_mean([e['return'] for e in episodes], args.window)
    by_frames.plot([e['frames'] / 1e6 for e in episodes], returns, label=label)
    by_time.plot([e['wall_s'] / 3600 for e in episodes], returns, label=label)
  for reference in args.reference:
    label, _, value = reference.partition('=')
    for axes in (by_frames, by_time):
      axes.axhline(float(value), color='grey', linestyle='--', linewidth=1)
    by_frames.annotate(label, (0, float(value)), textcoords='offset points', xytext=(4, 4),
                       fontsize=8, color='grey')
  by_frames.set_xlabel('env frames (millions)')
  by_time.set_xlabel('wall time (hours)')
  by_frames.set_ylabel(f'training return, mean of {args.window} episodes')
  by_frames.legend(loc='lower right')
  for axes in (by_frames, by_time):
    axes.grid(alpha=0.3)
  figure.suptitle(args.title)
  figure.tight_layout()
  figure.savefig(args.out, dpi=80)
  print(f'wrote {args.out}')
  return 0


if __name__ == '__main__':
  sys.exit(main())
