"""Runs fault scenarios and prints their table (see tests/system/faults/__init__.py)."""
import argparse
import importlib
import sys
import tempfile

from tests.system.faults import outcome as outcome_lib

# Scenario name -> module under tests.system.faults, in the order of docs/reliability.md.
SCENARIOS = ('actor_deaths', 'learner_restart', 'preemption', 'checkpoint_kills',
             'hostile_input', 'bad_numbers', 'full_disk', 'network', 'soak')


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__)
  parser.add_argument('scenarios', nargs='*', default=None,
                      help=f'which to run (default: all but soak): {", ".join(SCENARIOS)}')
  parser.add_argument('--ci', action='store_true', help='the short counts CI runs')
  parser.add_argument('--count', type=int, default=0, help='override every count')
  parser.add_argument('--workdir', default=None, help='keep run directories here')
  args = parser.parse_args(argv)
  names = args.scenarios or [s for s in SCENARIOS if s != 'soak']
  unknown = sorted(set(names) - set(SCENARIOS))
  if unknown:
    parser.error(f'unknown scenario(s) {unknown}; expected some of {list(SCENARIOS)}')
  outcomes = []
  with tempfile.TemporaryDirectory(prefix='seed-faults-') as scratch:
    for name in names:
      module = importlib.import_module(f'tests.system.faults.{name}')
      count = args.count or (module.CI_COUNT if args.ci else module.FULL_COUNT)
      workdir = f'{args.workdir or scratch}/{name}'
      print(f'== {name}: count {count}, in {workdir}', flush=True)
      options = getattr(module, 'CI_OPTIONS', {}) if args.ci else {}
      try:
        outcome = module.run(count, workdir, **options)
      except outcome_lib.Unavailable as e:
        print(f'skipped: {e}', flush=True)
        continue
      print(outcome_lib.table([outcome]), flush=True)
      outcomes.append(outcome)
  print(f'\nMachine: {outcome_lib.machine()}\n')
  print(outcome_lib.table(outcomes))
  return 0 if all(o.passed for o in outcomes) else 1


if __name__ == '__main__':
  sys.exit(main())
