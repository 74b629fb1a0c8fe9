"""Every agent's train step gives the numbers it gave before issue 12's refactor (ppo_atari:
before PPO's one-pass train step, 2026-12-06), to 1e-6."""
import json

import pytest

pytest.importorskip('tensorflow')

from tests import train_step_golden  # pylint: disable=g-import-not-at-top


@pytest.fixture(scope='module')
def golden():
  with open(train_step_golden.GOLDEN_PATH) as f:
    return json.load(f)


@pytest.mark.parametrize('name', sorted(train_step_golden.CASES))
def test_train_step_logs_match_the_recorded_ones(name, golden):
  logs = train_step_golden.train_once(name)
  expected = golden[name]
  # Logs added since the recording: none of these finite batches skips an update, and
  # no case resets SAC's or DDPG's networks (issue 17).
  added_since = {'skipped_updates': 0.0}
  if name in ('sac', 'ddpg'):
    added_since['resets'] = 0.0
  if name.startswith('r2d2'):  # The ladder's top rung (issue 36): the config's epsilon_base.
    added_since['top_rung_epsilon'] = pytest.approx(0.4)
  assert {key: logs.pop(key) for key in added_since} == added_since
  # V-trace's priorities (issue 15, for prioritized replay in a mixture) came later.
  for key in [key for key in logs if key.startswith('priority_') and key not in expected]:
    assert name.startswith('vtrace') and logs.pop(key) >= 0.0
  assert sorted(logs) == sorted(expected)
  for key, value in expected.items():
    assert logs[key] == pytest.approx(value, rel=1e-6, abs=1e-6), key
