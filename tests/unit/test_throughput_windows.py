"""bench.throughput's rate per window from the learner's progress rows."""
import pytest

from bench.throughput import _windows_rate


def test_a_window_takes_the_rows_inside_it():
  samples = [(t / 2, 100 * t) for t in range(0, 21)]  # a row every 0.5 s, 200 frames/s
  assert _windows_rate(samples, 1.0, 2.0, 3) == pytest.approx([200.0] * 3)


def test_a_window_with_one_row_inside_takes_the_rows_around_it():
  # The row due at 10.5 s came late, at 11.2: one row inside [10, 11].
  samples = [(9.0, 0), (9.5, 100), (10.2, 240), (11.2, 440), (12.0, 600)]
  assert _windows_rate(samples, 10.0, 1.0, 1) == pytest.approx([(440 - 100) / (11.2 - 9.5)])


def test_a_window_past_the_last_row_has_no_rate():
  assert _windows_rate([(0.0, 0), (1.0, 100)], 0.5, 1.0, 1) == []
