"""Hostile input against a real learner and actor (bench/faults/hostile_input.py, CI count)."""
import pytest

from bench.faults import hostile_input

pytestmark = pytest.mark.timeout(300)


def test_hostile_input(tmp_path):
  outcome = hostile_input.run(hostile_input.CI_COUNT, str(tmp_path))
  assert outcome.passed, '\n'.join(outcome.failures + [
      f'{name}: {value}' for name, value in outcome.figures.items()])
