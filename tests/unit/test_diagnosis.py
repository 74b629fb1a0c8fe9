"""seed diagnose's figures (seed/evaluation/diagnosis.py) on numbers worked by hand, and
where each turns into a warning."""
import math

import numpy as np
import pytest

from seed.evaluation import diagnosis


def _by_name(figures):
  return {f.name: f for f in figures}


def test_a_layer_s_silent_units_and_spread_across_states():
  # Two states of a 3-unit layer: unit 0 never fires, unit 1 fires once (0 and 2), unit 2
  # is 1 in both: one silent unit of three; std across states 0, 1, 0.
  figures = _by_name(diagnosis.layer_figures('conv_0', np.array([[0., 0., 1.], [0., 2., 1.]])))
  assert figures['conv_0: units never active'].value == pytest.approx(1 / 3)
  assert figures['conv_0: std across states'].value == pytest.approx(1 / 3)
  assert not any(f.warning for f in figures.values())
  # Four of five units silent, and the fifth the same in every state: both warn.
  dead = np.array([[0., 0., 0., 0., 0.7], [0., 0., 0., 0., 0.7]])
  figures = _by_name(diagnosis.layer_figures('fc', dead))
  assert figures['fc: units never active'].warning and figures['fc: std across states'].warning
  # Not a ReLU layer (a layer-normalised LSTM input): no silent-unit figure.
  assert [f.name for f in diagnosis.layer_figures('lstm_input', dead, relu=False)] == [
      'lstm_input: std across states']


def test_saturated_gates_are_counted_in_the_input_and_output_gates_alone():
  # Gates of 2 units each in Keras' order i, f, c, o: one of the input gate's 4 entries and
  # all 4 of the output gate's beyond |5|; the forget and cell gates do not count.
  row = [6., 0., 9., 9., 9., 9., -7., 8.]
  figures = diagnosis.gate_figures(np.array([row, [0.] * 6 + [6., -6.]]))
  assert [f.value for f in figures] == [0.25, 1.0]
  assert [bool(f.warning) for f in figures] == [False, True]


def test_logits_spread_entropy_and_std_across_states():
  # Two states that prefer opposite actions by 2: p = e^2 / (e^2 + 1) for the preferred one.
  figures = _by_name(diagnosis.logit_figures(np.array([[2., 0.], [0., 2.]])))
  p = math.exp(2) / (math.exp(2) + 1)
  entropy = -(p * math.log(p) + (1 - p) * math.log(1 - p))
  assert figures['logits: spread between actions'].value == pytest.approx(2.0)
  assert figures['entropy / uniform (log 2)'].value == pytest.approx(entropy / math.log(2))
  assert figures['logits: std across states'].value == pytest.approx(1.0)
  assert not any(f.warning for f in figures.values())
  # The same logits in every state, nearly uniform: the policy does not follow the game.
  flat = _by_name(diagnosis.logit_figures(np.array([[0.01, 0., 0.], [0.01, 0., 0.]])))
  assert flat['entropy / uniform (log 3)'].warning
  assert flat['logits: std across states'].value == 0.0
  assert flat['logits: std across states'].warning


def test_action_values_that_tell_neither_states_nor_actions_apart_warn():
  figures = _by_name(diagnosis.q_figures(np.array([[1.0, 1.02], [1.0, 1.02]])))
  assert figures['Q: spread between actions'].value == pytest.approx(0.02)
  assert figures['Q: spread between actions'].warning and figures['Q: std across states'].warning
  figures = _by_name(diagnosis.q_figures(np.array([[0.0, 1.0], [2.0, 0.5]])))
  assert figures['Q: spread between actions'].value == pytest.approx(1.25)
  assert figures['Q: std across states'].value == pytest.approx((1.0 + 0.25) / 2)
  assert not any(f.warning for f in figures.values())


def test_one_greedy_action_in_most_states():
  figure = diagnosis.greedy_figure([1, 1, 1, 0], num_actions=3)
  assert (figure.value, figure.shown, figure.warning) == (0.75, '75% (action 1)', None)
  assert diagnosis.greedy_figure([2] * 49 + [0], num_actions=3).warning


def test_adam_steps_against_epsilon():
  # Past many steps the bias correction is 1: v = g^2. g equal to epsilon halves the step,
  # g a thousandth of it all but stops it; a zero g is a parameter no example reached.
  second_moment = np.array([1e-6, 1e-12, 0.0, 1e-6])
  figures = diagnosis.adam_figures('fc/kernel', second_moment, steps=10**6, beta_2=0.999,
                                   epsilon=1e-3)
  factors = diagnosis.adam_step_factors(np.sqrt(second_moment), 1e-3)
  assert factors[0] == 0.5 and factors[2] == 0.0
  median_rms, step, no_gradient = figures
  assert median_rms.value == pytest.approx(np.median(np.sqrt(second_moment)))
  assert step.value == pytest.approx(np.median(factors)) and not step.warning
  assert no_gradient.value == 0.25 and not no_gradient.warning
  # Every gradient small next to epsilon (R2D2's heads at epsilon 1e-3): throttled.
  throttled = diagnosis.adam_figures('head', np.full(4, 1e-12), steps=10**6, beta_2=0.999,
                                     epsilon=1e-3)
  assert throttled[1].warning and not throttled[2].warning


def test_the_report_marks_each_warning_and_lists_them_with_why():
  figures = diagnosis.q_figures(np.array([[1.0, 1.02], [1.0, 1.02]]))
  table = diagnosis.table('Acting', figures)
  assert table.splitlines()[2] == '| figure | value | what it says |'
  assert '| Q: spread between actions | **0.0200** (warning) |' in table
  listed = diagnosis.warnings_text(figures).splitlines()
  assert listed[0] == 'Warnings (2):'
  assert listed[1].startswith('- spread between actions: Q 0.0200. Below 0.05: ')
  assert diagnosis.warnings_text([]).startswith('No warnings')


def test_layers_share_a_table_one_row_a_layer_and_warnings_one_line_a_kind():
  silent = np.zeros((2, 3))
  figures = (diagnosis.layer_figures('conv_0', silent) + diagnosis.layer_figures('fc', silent)
             + diagnosis.layer_figures('lstm_input', silent, relu=False))
  lines = diagnosis.table('Layers', figures).splitlines()
  assert lines[2:4] == ['| | units never active | std across states |', '|---|---:|---:|']
  assert lines[4] == '| conv_0 | **100%** (warning) | **0.0000** (warning) |'
  assert lines[6] == '| lstm_input | — | **0.0000** (warning) |'
  listed = diagnosis.warnings_text(figures).splitlines()
  assert listed[0] == 'Warnings (5):' and len(listed) == 3
  assert listed[1].startswith('- units never active: conv_0 100%, fc 100%. 80% or more silent')
