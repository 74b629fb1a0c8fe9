"""`python -m seed.experiments`: see seed/experiments/__init__.py."""
import argparse
import dataclasses
import os
import shlex
import sys
from typing import List, Optional

import seed.experiments
from seed.process import exit_codes, local_processes
from seed.experiments import layers, plan, runner



def parse_args(argv: Optional[List[str]]) -> argparse.Namespace:
  parser = argparse.ArgumentParser(prog='python -m seed.experiments',
                                   description=seed.experiments.__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument('--root', required=True, help='run directories go under it')
  parser.add_argument('--experiments', help='JSON file listing the experiments')
  parser.add_argument('--grid', action='append', default=[],
                      help='Configurable.parameter=v1,v2,... (repeat for more axes)')
  parser.add_argument('--seeds', help='comma-separated seeds, e.g. 0,1,2')
  parser.add_argument('--agent')
  parser.add_argument('--gin_file', action='append', default=[])
  parser.add_argument('--gin_bindings', action='append', default=[])
  parser.add_argument('--learner_flag', action='append', default=[],
                      help='a learner flag for every experiment, e.g. '
                      '--learner_flag=--tf_intra_op_threads=1')
  parser.add_argument('--max_env_frames', type=int)
  parser.add_argument('--num_actors', type=int)
  parser.add_argument('--num_envs', type=int)
  parser.add_argument('--dry_run', action='store_true',
                      help='print each experiment\'s settings and commands; run nothing')
  return parser.parse_args(argv)


def command_line_layer(args: argparse.Namespace) -> layers.Layer:
  flags = dict(_learner_flag(text) for text in args.learner_flag)
  if args.max_env_frames is not None:
    flags['max_env_frames'] = str(args.max_env_frames)
  return layers.Layer(agent=args.agent, gin_files=tuple(_absolute(args.gin_file)),
                      gin_bindings=tuple(args.gin_bindings), learner_flags=flags,
                      num_actors=args.num_actors, num_envs=args.num_envs)


def _learner_flag(text: str):
  """'--name=value' -> (name, value); '--name' -> (name, 'true'); '--noname' -> 'false'."""
  name, equals, value = text.lstrip('-').partition('=')
  if equals:
    return name, value
  if name.startswith('no') and name[2:] in layers.bool_flags():
    return name[2:], 'false'
  return name, 'true'


def _absolute(paths: List[str]) -> List[str]:
  """Gin files as absolute paths (learners run from the repository); must exist."""
  for path in paths:
    if not os.path.exists(path):
      raise ValueError(f'gin file {path!r} does not exist')
  return [os.path.abspath(path) for path in paths]


def experiments_of(args: argparse.Namespace) -> List[plan.Experiment]:
  if args.experiments and (args.grid or args.seeds):
    raise ValueError('--experiments reads the experiments from a file; --grid and --seeds '
                     'describe them here: give one or the other')
  if args.experiments:
    specs = plan.load_file(args.experiments)
    base = os.path.dirname(os.path.abspath(args.experiments))
    # An entry's gin files are relative to the file that names them.
    specs = [dataclasses.replace(spec, overrides=dataclasses.replace(
        spec.overrides, gin_files=tuple(_absolute(
            [os.path.join(base, path) for path in spec.overrides.gin_files]))))
             for spec in specs]
  else:
    specs = [plan.command_line_spec(args.grid, args.seeds)]
  return plan.expand(specs)


def main(argv: Optional[List[str]] = None) -> int:
  args = parse_args(argv)
  try:
    command_line = command_line_layer(args)
    experiments = experiments_of(args)
    resolved = {}
    for experiment in experiments:
      run_dir = os.path.join(args.root, experiment.name)
      resolved[experiment.name] = layers.resolve(layers.DEFAULTS, layers.saved_layer(run_dir),
                                                 experiment.overrides, command_line)
      if resolved[experiment.name].max_env_frames <= 0:
        raise ValueError(f'experiment {experiment.name} has no max_env_frames: give '
                         '--max_env_frames (or learner_flags.max_env_frames in the file); the '
                         'runner runs each experiment until it gets there')
    from seed.experiments import check  # pylint: disable=g-import-not-at-top (TensorFlow)
    for name, settings in resolved.items():
      check.check(name, settings)
  except (ValueError, FileNotFoundError) as e:
    print(f'seed.experiments: {e}', file=sys.stderr)
    return exit_codes.BAD_SETTINGS
  if args.dry_run:
    for name, settings in resolved.items():
      print(f'{name}:\n  learner: {shlex.join(settings.learner_args())}\n  '
            f'{settings.num_actors} actors x {settings.num_envs} envs: '
            f'{shlex.join(settings.actor_args())}')
    return 0
  outcomes = {}
  # SIGTERM as Ctrl-C: the learner checkpoints and every process is stopped.
  with local_processes.sigterm_raises():
    for name, settings in resolved.items():
      outcomes[name] = runner.run(name, os.path.join(args.root, name), settings)
      print(f'seed.experiments: {name}: {outcomes[name].status} ({outcomes[name].detail})',
            flush=True)
  print('| experiment | status | return (last 20 episodes) | |\n|---|---|---|---|')
  for name, outcome in outcomes.items():
    mean_return = runner.recent_return(os.path.join(args.root, name))
    shown = 'none' if mean_return is None else f'{mean_return:.2f}'
    print(f'| {name} | {outcome.status} | {shown} | {outcome.detail} |')
  done = all(o.status in ('finished', 'skipped') for o in outcomes.values())
  return 0 if done else 1


if __name__ == '__main__':
  sys.exit(main())
