"""Long training runs as benchmarks: return against env steps, written as a CSV curve.

Presets (the continuous-control reference runs):
  seed suite learning_curve --preset sac_halfcheetah_100k
  seed suite learning_curve --preset ppo_halfcheetah_1m
or any config:
  seed suite learning_curve --gin_file gin/mujoco/sac.gin --agent sac \
      --num_actors 1 --num_envs 1 --max_env_frames 100000 --out curve.csv

The learner and actors run as separate processes exactly as run_local.sh starts
them (gRPC, central inference); the run stops at --max_env_frames. The curve has
one row per --bucket_frames: env frames, training episodes that ended in the
bucket, their mean return, the mean of the last --window episodes, and wall time.
Returns are those of the training episodes (the behaviour policy, with its
exploration noise). Never part of CI: these runs take tens of minutes.
"""
import argparse
import csv
import os
import sys
import tempfile
import time
from typing import List

from seed import config
from seed.process import local_processes as processes
from seed.run_dir import records

PRESETS = {
    # SAC: one actor with one env, one gradient update per env step.
    'sac_halfcheetah_100k': dict(gin_file='gin/mujoco/sac.gin', agent='sac', num_actors=1,
                                 num_envs=1, max_env_frames=100_000),
    # PPO: 4 actors x 8 envs, 2,048-transition batches.
    'ppo_halfcheetah_1m': dict(gin_file='gin/mujoco/ppo.gin', agent='ppo', num_actors=4,
                               num_envs=8, max_env_frames=1_000_000),
}


def train(args, logdir: str) -> int:
  """Runs learner + actors until the learner stops at max_env_frames; its exit code."""
  gin_flags = [f'--gin_file={os.path.abspath(config.resolve_gin_file(args.gin_file))}'] + [
      f'--gin_bindings={b}' for b in args.gin_bindings]
  socket_flags, actor_address = processes.local_socket(logdir, args.learner_flag)
  learner = processes.start_learner(
      logdir, args.agent, [f'--max_env_frames={args.max_env_frames}', f'--seed={args.seed}',
                           '--checkpoint_interval_s=1800'] + socket_flags + gin_flags
      + args.learner_flag)
  actors = []
  with processes.sigterm_raises():
    try:
      port = processes.wait_for_port(learner, logdir, poll_s=0.2)
      actors += processes.start_actors(logdir, args.num_actors, args.num_envs, port,
                                       gin_flags + [f'--seed={args.seed}'], actor_address)
      return learner.wait()
    finally:
      processes.stop(actors)
      processes.stop([learner], timeout_s=120)


def curve(episodes: List[records.TrainingEpisode], bucket_frames: int, window: int
          ) -> List[dict]:
  """One row per bucket of env frames that some episode ended in."""
  rows = []
  for end in range(bucket_frames, episodes[-1].env_frames + bucket_frames, bucket_frames):
    upto = [e for e in episodes if e.env_frames <= end]
    inside = [e for e in upto if e.env_frames > end - bucket_frames]
    if not inside:
      continue
    last = upto[-window:]
    rows.append({'env_frames': end, 'episodes': len(inside),
                 'mean_return': sum(e.episode_return for e in inside) / len(inside),
                 f'mean_return_last_{window}': sum(e.episode_return for e in last) / len(last),
                 # Training time: the learner's starts added up.
                 'wall_time_s': inside[-1].training_s})
  return rows


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument('--preset', choices=sorted(PRESETS))
  parser.add_argument('--gin_file')
  parser.add_argument('--agent')
  parser.add_argument('--num_actors', type=int, default=1)
  parser.add_argument('--num_envs', type=int, default=1)
  parser.add_argument('--max_env_frames', type=int, default=100_000)
  parser.add_argument('--gin_bindings', action='append', default=[])
  parser.add_argument('--seed', type=int, default=0,
                      help="the learner's and the actors' --seed")
  parser.add_argument('--learner_flag', action='append', default=[],
                      help='extra learner flag, e.g. --learner_flag=--tf_intra_op_threads=2')
  parser.add_argument('--bucket_frames', type=int, default=10_000)
  parser.add_argument('--window', type=int, default=10, help='episodes in the running mean')
  parser.add_argument('--logdir', help='run directory (default: a temporary one, kept)')
  parser.add_argument('--out', help='curve CSV (default: <logdir>/curve.csv)')
  args = parser.parse_args(argv)
  if args.preset:
    # The preset gives defaults; flags given explicitly still win.
    parser.set_defaults(**PRESETS[args.preset])
    args = parser.parse_args(argv)
  if not args.gin_file or not args.agent:
    parser.error('give --preset, or --gin_file and --agent')
  logdir = args.logdir or tempfile.mkdtemp(prefix='seed-curve-')
  started = time.monotonic()
  code = train(args, logdir)
  wall_s = time.monotonic() - started
  episodes = records.read_training_episodes(logdir)
  if not episodes:
    print(f'no episode finished (learner exit {code}); see {logdir}/logs', file=sys.stderr)
    return 1
  rows = curve(episodes, args.bucket_frames, args.window)
  out = args.out or os.path.join(logdir, 'curve.csv')
  with open(out, 'w', newline='') as f:
    writer = csv.DictWriter(f, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
  name = args.preset or f'{args.gin_file} {args.agent}'
  print(f'# {name}: {episodes[-1].env_frames:,} env frames, {len(episodes)} episodes, '
        f'{wall_s / 60:.1f} min wall, learner exit {code}')
  print(f'| env frames | episodes | mean return | mean of last {args.window} | wall s |')
  print('|---|---|---|---|---|')
  for row in rows:
    values = list(row.values())
    print(f'| {values[0]:,} | {values[1]} | {values[2]:.1f} | {values[3]:.1f} | {values[4]:.0f} |')
  print(f'curve: {out}; run directory: {logdir}')
  return 0 if code == 0 else 1


if __name__ == '__main__':
  sys.exit(main())
