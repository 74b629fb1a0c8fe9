"""The `seed` command: `seed plot ...` (seed.experiments.plotting) and `seed eval ...`
(seed.evaluate); `python -m seed ...` is the same. Training starts with ./run_local.sh,
`python -m seed.learner.main`/`seed.actors.main`, or seed.train from Python."""
import sys
from typing import List, Optional

COMMANDS = {'plot': 'learning curves from TensorBoard event files, as a PNG',
            'eval': 'play episodes of a checkpoint, a returns table, optionally an MP4'}


def main(argv: Optional[List[str]] = None) -> int:
  argv = list(sys.argv[1:] if argv is None else argv)
  if not argv or argv[0] in ('-h', '--help') or argv[0] not in COMMANDS:
    known = '\n'.join(f'  seed {name:<5} {what}' for name, what in COMMANDS.items())
    usage = f'usage: seed COMMAND [ARGS]\n{known}\n(seed COMMAND --help for its arguments)'
    if argv and argv[0] not in ('-h', '--help'):
      print(f'seed: unknown command {argv[0]!r}; accepted: {", ".join(COMMANDS)}\n{usage}',
            file=sys.stderr)
      return 2
    print(usage)
    return 0
  command, rest = argv[0], argv[1:]
  if command == 'plot':
    from seed.experiments import plotting  # pylint: disable=g-import-not-at-top,import-outside-toplevel
    return plotting.main(rest)
  from seed import evaluate  # pylint: disable=g-import-not-at-top,import-outside-toplevel
  return evaluate.main(rest)


def run() -> None:
  sys.exit(main())
