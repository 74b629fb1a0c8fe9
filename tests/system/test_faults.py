"""The fault scenarios of tests/system/faults at their CI counts (the full counts run by hand and
land in docs/reliability.md). Each scenario stops every process it started, also on failure."""
import importlib

import pytest

from tests.system.faults import outcome as outcome_lib

pytestmark = pytest.mark.timeout(300)


@pytest.mark.parametrize('name', ['actor_deaths', 'learner_restart', 'preemption',
                                  'checkpoint_kills', 'hostile_input', 'bad_numbers',
                                  'full_disk', 'network'])
def test_scenario_at_its_ci_count(name, tmp_path):
  scenario = importlib.import_module(f'tests.system.faults.{name}')
  try:
    outcome = scenario.run(scenario.CI_COUNT, str(tmp_path),
                           **getattr(scenario, 'CI_OPTIONS', {}))
  except outcome_lib.Unavailable as e:
    pytest.skip(str(e))
  print(outcome_lib.table([outcome]))
  assert outcome.passed, '\n'.join(outcome.failures + [
      f'{figure}: {value}' for figure, value in outcome.figures.items()])
