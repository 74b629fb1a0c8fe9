"""The `seed` command, one way in for what users do; `python -m seed ...` is the same.

  seed train ENV AGENT NUM_ACTORS ENVS_PER_ACTOR [flags]   (seed.process.local_run)
  seed eval --logdir=RUN ...                              (seed.evaluate)
  seed diagnose RUN                                       (seed.evaluation.diagnose)
  seed plot RUN ... --output=curve.png                    (seed.experiments.plotting)
  seed experiments --root=DIR --grid=... --seeds=0,1      (seed.experiments)
  seed suite dmc15|classic_control|learning_curve|atari5 ...  (seed.experiments.suites)
  seed submit vertex|slurm ...                            (gcp/submit.py, slurm/submit.sh)

`seed COMMAND --help` lists a command's arguments; train's include every learner and
actor setting (seed.settings).
"""
import os
import subprocess
import sys
from typing import List, Optional

COMMANDS = {
    'train': 'train on this machine: a learner, its actors and TensorBoard (./run_local.sh)',
    'eval': 'play episodes of a checkpoint, a returns table, optionally an MP4',
    'diagnose': 'why a run does not learn: figures of its checkpoint, with warnings',
    'plot': 'learning curves from TensorBoard event files, as a PNG',
    'experiments': 'several runs in sequence: a grid of gin bindings times seeds',
    'suite': 'a learning suite: seed suite dmc15|classic_control|learning_curve|atari5 ARGS',
    'submit': 'submit a training run to a cluster: seed submit vertex|slurm ARGS',
}
SUITES = ('dmc15', 'classic_control', 'learning_curve', 'atari5')
# Where `seed submit` finds each platform's submitter, in the repository.
SUBMITTERS = {'vertex': ['gcp', 'submit.py'], 'slurm': ['slurm', 'submit.sh']}


def _usage() -> str:
  known = '\n'.join(f'  seed {name:<11} {what}' for name, what in COMMANDS.items())
  return f'usage: seed COMMAND [ARGS]\n{known}\n(seed COMMAND --help for its arguments)'


def _submit(argv: List[str]) -> int:
  """Runs the repository's submitter for the platform argv[0] names."""
  if not argv or argv[0] not in SUBMITTERS:
    given = repr(argv[0]) if argv else 'none'
    print(f'seed submit: platform {given}; accepted: {", ".join(SUBMITTERS)}', file=sys.stderr)
    return 2
  repository = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
  submitter = os.path.join(repository, *SUBMITTERS[argv[0]])
  if not os.path.exists(submitter):
    print(f'seed submit {argv[0]}: needs the repository\'s {"/".join(SUBMITTERS[argv[0]])} '
          f'(not in an installed wheel): run it from a clone of the repository',
          file=sys.stderr)
    return 2
  runner = [sys.executable] if submitter.endswith('.py') else ['bash']
  return subprocess.call(runner + [submitter] + argv[1:])


def main(argv: Optional[List[str]] = None) -> int:
  argv = list(sys.argv[1:] if argv is None else argv)
  if not argv or argv[0] in ('-h', '--help'):
    print(_usage())
    return 0
  command, rest = argv[0], argv[1:]
  # pylint: disable=g-import-not-at-top,import-outside-toplevel
  if command == 'train':
    from seed.process import local_run
    return local_run.main(rest)
  if command == 'eval':
    from seed import evaluate
    return evaluate.main(rest)
  if command == 'diagnose':
    from seed.evaluation import diagnose
    return diagnose.main(rest)
  if command == 'plot':
    from seed.experiments import plotting
    return plotting.main(rest)
  if command == 'experiments':
    from seed.experiments import __main__ as experiments
    return experiments.main(rest)
  if command == 'suite':
    if not rest or rest[0] not in SUITES:
      given = repr(rest[0]) if rest else 'none'
      print(f'seed suite: {given}; accepted: {", ".join(SUITES)}', file=sys.stderr)
      return 2
    import importlib
    return importlib.import_module(f'seed.experiments.suites.{rest[0]}').main(rest[1:])
  if command == 'submit':
    return _submit(rest)
  print(f'seed: unknown command {command!r}; accepted: {", ".join(COMMANDS)}\n{_usage()}',
        file=sys.stderr)
  return 2


def run() -> None:
  sys.exit(main())
