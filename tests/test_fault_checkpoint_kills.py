"""Crash during checkpoint at the CI count: SIGKILLs inside saves, every restart checked.

The scenario is bench/faults/checkpoint_kills.py (the full count: python -m
bench.faults checkpoint_kills). Its run() kills the zygote's process group, with
any life still running, also when it fails; a zygote left by a killed pytest
exits at the end of its stdin.
"""
import pytest

from bench.faults import checkpoint_kills

pytestmark = pytest.mark.timeout(300)


def test_kills_inside_saves_leave_readable_checkpoints_and_exact_resumes(tmp_path):
  outcome = checkpoint_kills.run(checkpoint_kills.CI_COUNT, str(tmp_path))
  assert outcome.passed, '\n'.join(outcome.failures + [f'figures: {outcome.figures}'])
  assert outcome.figures['kills_in_save'] == str(checkpoint_kills.CI_COUNT)
