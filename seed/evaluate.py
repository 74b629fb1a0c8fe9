"""Test mode: play N episodes with a run's checkpoint in this process, and report them.

  python -m seed.evaluate --logdir=runs/toy_vtrace
  python -m seed.evaluate --logdir=runs/toy_vtrace --episodes=20 --policy=sample --seed=1
  python -m seed.evaluate --logdir=runs/toy_vtrace --video=runs/toy_vtrace/episode.mp4

By default the run's saved config (operative_config.gin; the agent from flags.txt)
and its latest checkpoint; --gin_file/--gin_bindings/--agent/--env and --checkpoint
(a prefix like RUN/ckpt/ckpt-7, or a run directory) say otherwise, as for the learner.
No server and no actors: the envs step here, through the agent's batched policy, with
the recurrent state carried across steps and reset at each episode's end.

--policy=greedy acts as the agent's evaluation actors do (ActingParams.evaluation:
R2D2 epsilon-greedy with its eval_epsilon, PPO the mean or most probable action, SAC
tanh of the mean, DDPG no noise, V-trace its most probable action). --policy=sample acts as training envs do (R2D2: the epsilon ladder's rungs of
envs 0..num_envs-1). Env i is seeded with --seed + i.

Prints a table of returns and lengths (mean, std, min, max) and writes it to
RUN/evaluation/<checkpoint>_<policy>_seed<seed>.csv and .json (with every episode).
Exit codes: 0, or 2 for bad settings (a checkpoint that does not match the network,
an unknown policy or agent, no video extra) said in one line.
"""
import argparse
import logging
import os
import sys
import types
from typing import List, Optional

from seed.evaluation import restore, video
from seed.process import exit_codes
from seed.run_dir.layout import RunDir

POLICIES = ('greedy', 'sample')


def parse_args(argv: Optional[List[str]]) -> argparse.Namespace:
  parser = argparse.ArgumentParser(prog='python -m seed.evaluate', description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument('--logdir', required=True, help='run directory: config, checkpoint, '
                      'and where the results go')
  parser.add_argument('--checkpoint', help='checkpoint prefix (RUN/ckpt/ckpt-7) or run '
                      'directory (its latest); default: the latest of --logdir')
  parser.add_argument('--episodes', type=int, default=10, help='episodes to play')
  parser.add_argument('--policy', default='greedy',
                      help=f'{" or ".join(POLICIES)} (default greedy)')
  parser.add_argument('--num_envs', type=int, default=1, help='envs stepped as one batch')
  parser.add_argument('--seed', type=int, default=0, help='env i is seeded with seed + i')
  parser.add_argument('--video', help='write env 0\'s first --video_episodes episodes to '
                      'this MP4 file (needs the video extra)')
  parser.add_argument('--video_episodes', type=int, default=1)
  parser.add_argument('--tensorboard', action='store_true',
                      help='also log the returns (and the video, as a GIF) to TensorBoard, '
                      "in RUN/evaluation/tb at the checkpoint's env frames")
  parser.add_argument('--agent', help='default: the run\'s (flags.txt)')
  parser.add_argument('--env', help='binds EnvConfig.name over the gin config')
  parser.add_argument('--gin_file', action='append', default=[],
                      help='default: RUN/operative_config.gin')
  parser.add_argument('--gin_bindings', action='append', default=[])
  return parser.parse_args(argv)


def check_args(args: argparse.Namespace) -> restore.RunConfig:
  """The run's agent and config (its saved ones where the flags give none); ValueError
  naming the first bad argument and what is accepted."""
  if args.policy not in POLICIES:
    raise ValueError(f'unknown --policy {args.policy!r}; accepted: {", ".join(POLICIES)}')
  for name in ('episodes', 'num_envs', 'video_episodes'):
    if getattr(args, name) < 1:
      raise ValueError(f'--{name}={getattr(args, name)}; expected at least 1')
  if args.seed < 0:
    raise ValueError(f'--seed={args.seed}; expected an integer >= 0')
  run_config = restore.saved_config(args.logdir, args.agent, args.gin_file, args.gin_bindings,
                                    args.env)
  if args.video:
    video.check_available()
  return run_config


def evaluate(args: argparse.Namespace, run_config: restore.RunConfig) -> int:
  """Loads, plays and reports (imports TensorFlow); raises ValueError or VideoUnavailable."""
  from seed.envs import EnvConfig, env_spec  # pylint: disable=g-import-not-at-top
  from seed.evaluation import report  # pylint: disable=g-import-not-at-top
  restore.parse_config(run_config)
  env_config = EnvConfig()
  num_envs = min(args.num_envs, args.episodes)
  envs = [_make_video_env(env_config, args.seed) if args.video and i == 0
          else env_config.make(args.seed + i) for i in range(num_envs)]
  try:
    agent, prefix, counters = restore.restore_agent(
        run_config.agent, env_spec(envs[0]), num_envs, args.checkpoint or args.logdir,
        '--checkpoint' if args.checkpoint else '--logdir')
    recorder = (video.EpisodeRecorder(envs[0], args.video, args.video_episodes)
                if args.video else None)
    played = _play(agent, envs, args, recorder)
  finally:
    for env in envs:
      env.close()
  stats = report.summary(played)
  print(f'{run_config.agent} on {env_config.name}, checkpoint {prefix} (env frames '
        f'{counters.env_frames:,}, learner steps {counters.learner_steps:,}); policy '
        f'{args.policy}; env seeds {args.seed}..{args.seed + num_envs - 1}')
  print(report.table(stats, len(played)))
  paths = report.write(
      RunDir(args.logdir).evaluation,
      report.file_stem(prefix, args.policy, args.seed, num_envs), stats, played,
      about={'checkpoint': prefix, 'agent': run_config.agent, 'env': env_config.name,
             'policy': args.policy, 'seed': args.seed, 'num_envs': num_envs,
             'counters': counters._asdict()})
  written = recorder.close() if recorder is not None else None
  if recorder is not None:
    paths.append(f'{written} ({recorder.frames} frames)' if written else 'no video frames')
  if args.tensorboard:
    from seed.evaluation import tensorboard  # pylint: disable=g-import-not-at-top
    paths.append(tensorboard.write(args.logdir, counters.env_frames, stats, written))
  print('written: ' + ', '.join(paths))
  return 0


def _play(agent, envs, args: argparse.Namespace, recorder):
  from seed import types  # pylint: disable=g-import-not-at-top
  from seed.evaluation import episodes  # pylint: disable=g-import-not-at-top
  acting = types.stack_acting_params([agent.acting_params(i, args.policy == 'greedy')
                                      for i in range(len(envs))])
  return episodes.run_episodes(
      agent.batched_policy(len(envs)), agent.initial_core_state, envs, args.episodes, acting,
      on_frame=recorder.on_frame if recorder else None)


def _make_video_env(env_config, seed: int):
  """Env 0, rendering rgb_array frames; VideoUnavailable where its factory cannot."""
  # pygame (classic control's renderer) needs no display for rgb_array frames.
  os.environ.setdefault('SDL_VIDEODRIVER', 'dummy')
  from seed.envs import make_env  # pylint: disable=g-import-not-at-top
  try:
    return make_env(env_config.name, seed, **dict(env_config.options, render_mode='rgb_array'))
  except (ValueError, TypeError) as e:
    raise video.VideoUnavailable(f'--video: env {env_config.name} cannot render frames ({e})')


def main(argv: Optional[List[str]] = None) -> int:
  logging.basicConfig(level=logging.WARNING, format='%(levelname)s %(name)s: %(message)s')
  args = parse_args(argv)
  try:
    return evaluate(args, check_args(args))
  except (ValueError, SyntaxError, FileNotFoundError, video.VideoUnavailable) as e:
    # Gin raises SyntaxError for a malformed binding; ValueError for an unknown one.
    print(f'seed.evaluate: {e}', file=sys.stderr)
    return exit_codes.BAD_SETTINGS


class _CallableModule(types.ModuleType):
  """`seed.evaluate(logdir, ...)` is the Python API's evaluate (seed.api.evaluate),
  while this module stays what `python -m seed.evaluate` runs."""

  def __call__(self, *args, **kwargs):
    from seed import api  # pylint: disable=g-import-not-at-top,import-outside-toplevel
    return api.evaluate(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule

if __name__ == '__main__':
  sys.exit(main())
