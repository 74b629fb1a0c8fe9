"""The figures that say why a run does not learn, from one checkpoint: each with what it
means and when it is a warning. Pure NumPy; `seed diagnose` (seed/evaluation/diagnose.py)
gathers what they read.

The thresholds come from the runs docs/learning.md tells: V-trace on Pong whose network
stopped telling states apart, R2D2 on Pong whose heads Adam's epsilon held still, Reactor
on Pong whose LSTM gates saturated. A warning is a finding to look at, not an error: an
untrained network warns as well.
"""
import math
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np

# A layer whose units are silent in this share of the states or more passes little on
# (V-trace on Pong, not learning: 89% of its first layer; learning runs: 49-77%).
NEVER_ACTIVE_WARNING = 0.8
# Below this mean standard deviation across states a layer's output is about the same in
# every state (V-trace on Pong's torso features: 0.0012-0.0032 stuck, PPO's 0.009-0.025).
LAYER_STD_WARNING = 0.005
# |x| beyond which sigmoid'(x) < 0.0067: a gate's input there passes almost no gradient.
SATURATED_INPUT = 5.0
# A share of saturated input or output gates at least this stops the LSTM learning (Reactor
# on Pong: 85-99% saturated runs, 0-1% the run that learnt).
GATES_SATURATED_WARNING = 0.5
# Logits varying less than this across states do not follow the game (V-trace on Pong: 0.0126
# stuck; PPO 0.16 learning).
LOGITS_STD_WARNING = 0.02
# Entropy above this share of a uniform policy's: the policy is near uniform.
ENTROPY_WARNING = 0.97
# Action values whose best and worst differ by less than this (the agent's units) do not
# tell the actions apart (R2D2 on Pong: 0.024-0.032 stuck, 0.055 once Adam's epsilon was fixed).
Q_SPREAD_WARNING = 0.05
# Action values varying less than this across states do not follow the game (R2D2 on Pong:
# 0.03 stuck; 0.21 with four times the updates).
Q_STD_WARNING = 0.1
# One greedy action in this share of the states or more: the policy ignores the state
# (R2D2 on Pong, stuck at -21: 'up' in 98%).
GREEDY_SHARE_WARNING = 0.9
# Adam's median step below this share of the learning rate: epsilon throttles the variable
# (R2D2 on Pong with epsilon 1e-3: 0.000-0.011 between frames and advantages; 0.93-1 at 1e-8).
ADAM_STEP_WARNING = 0.1
# An RMS gradient below this is a parameter no example reached.
NO_GRADIENT = 1e-10
# Half the parameters of a variable or more without a gradient: units that never fire.
NO_GRADIENT_WARNING = 0.5


class Figure(NamedTuple):
  """One measured figure of a checkpoint."""
  name: str
  value: float
  shown: str  # the value as printed
  meaning: str  # what it measures and what a healthy value looks like
  warning: Optional[str] = None  # why this value is a warning; None when it is not


def _figure(name: str, value: float, shown: str, meaning: str, warn: bool,
            warning: str) -> Figure:
  return Figure(name, float(value), shown, meaning, warning if warn else None)


def layer_figures(name: str, outputs: np.ndarray, relu: bool = True) -> List[Figure]:
  """A layer's outputs [N states, ...units]: the share of units never active (ReLU layers:
  0 in every state; a conv unit is one channel at one position) and their spread across
  states (mean over units of the standard deviation)."""
  units = np.asarray(outputs, np.float64).reshape(len(outputs), -1)
  figures = []
  if relu:
    silent = float(np.mean(np.all(units <= 0.0, axis=0)))
    figures.append(_figure(
        f'{name}: units never active', silent, f'{silent:.0%}',
        'units that are 0 in every state pass nothing on and get no gradient',
        silent >= NEVER_ACTIVE_WARNING,
        f'{NEVER_ACTIVE_WARNING:.0%} or more silent: the layer has died; a torso '
        'initialised for linear layers (Glorot) or too large steps do this'))
  spread = float(units.std(axis=0).mean())
  figures.append(_figure(
      f'{name}: std across states', spread, f'{spread:.4f}',
      'how much the layer\'s output differs between states (mean over units)',
      spread < LAYER_STD_WARNING,
      f'below {LAYER_STD_WARNING:g}: the layer gives about the same output in every state, '
      'so nothing above it can tell the states apart'))
  return figures


def gate_figures(gate_inputs: np.ndarray) -> List[Figure]:
  """The LSTM's gate inputs W x + b [N, 4 * units] in Keras' order (input, forget, cell,
  output), without the recurrent part: the share of input and output gates saturated."""
  input_gate, _, _, output_gate = np.split(np.asarray(gate_inputs), 4, axis=-1)
  figures = []
  for gate, values in (('input', input_gate), ('output', output_gate)):
    share = float(np.mean(np.abs(values) > SATURATED_INPUT))
    figures.append(_figure(
        f'LSTM {gate} gates: inputs beyond ±{SATURATED_INPUT:g}', share, f'{share:.0%}',
        'where sigmoid is flat: the gate passes almost no gradient to the layers below',
        share >= GATES_SATURATED_WARNING,
        f'{GATES_SATURATED_WARNING:.0%} or more saturated: nothing below the LSTM learns; '
        'its input grew too large (Reactor on Pong: layer-normalise it)'))
  return figures


def logit_figures(logits: np.ndarray) -> List[Figure]:
  """The policy's logits [N states, A]: the spread between actions, the entropy against a
  uniform policy's, and how much they differ between states."""
  logits = np.asarray(logits, np.float64)
  spread = float((logits.max(-1) - logits.min(-1)).mean())
  shifted = logits - logits.max(-1, keepdims=True)
  log_probs = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
  entropy = float(-(np.exp(log_probs) * log_probs).sum(-1).mean())
  uniform = math.log(logits.shape[-1])
  ratio = entropy / uniform if uniform > 0 else 0.0
  std = float(logits.std(axis=0).mean())
  return [
      _figure('logits: spread between actions', spread, f'{spread:.4f}',
              'max - min over actions, mean over states: how strongly the policy prefers',
              False, ''),
      _figure(f'entropy / uniform (log {logits.shape[-1]})', ratio, f'{ratio:.3f}',
              '1 is a uniform policy, 0 a certain one',
              ratio > ENTROPY_WARNING,
              f'above {ENTROPY_WARNING:g}: the policy is near uniform: it has learnt little, '
              'or the entropy bonus outweighs the advantages'),
      _figure('logits: std across states', std, f'{std:.4f}',
              'how much the policy differs between states (mean over actions)',
              std < LOGITS_STD_WARNING,
              f'below {LOGITS_STD_WARNING:g}: the policy barely tells states apart, so its '
              'gradient has no consistent direction (V-trace on Pong: 0.0126)'),
  ]


def q_figures(q_values: np.ndarray) -> List[Figure]:
  """Action values [N states, A] (the agent's units; R2D2's are rescaled): their spread
  between actions and how much they differ between states."""
  q_values = np.asarray(q_values, np.float64)
  spread = float((q_values.max(-1) - q_values.min(-1)).mean())
  std = float(q_values.std(axis=0).mean())
  return [
      _figure('Q: spread between actions', spread, f'{spread:.4f}',
              'max - min over actions, mean over states: whether the values tell actions '
              'apart', spread < Q_SPREAD_WARNING,
              f'below {Q_SPREAD_WARNING:g}: the values barely tell the actions apart; the '
              'heads that would may not be learning (see the optimizer figures)'),
      _figure('Q: std across states', std, f'{std:.4f}',
              'how much the values differ between states (mean over actions)',
              std < Q_STD_WARNING,
              f'below {Q_STD_WARNING:g}: the network has not learnt what its states are worth, '
              'whatever the returns show'),
  ]


def greedy_figure(greedy_actions: Sequence[int], num_actions: int) -> Figure:
  """The share of states whose greedy action is the most common one."""
  counts = np.bincount(np.asarray(greedy_actions, np.int64), minlength=num_actions)
  share = float(counts.max() / max(counts.sum(), 1))
  return _figure(
      'greedy action: the most common one\'s share', share,
      f'{share:.0%} (action {int(counts.argmax())})',
      'a policy that follows the game picks different actions in different states',
      share >= GREEDY_SHARE_WARNING,
      f'{GREEDY_SHARE_WARNING:.0%} or more: one action whatever the state (R2D2 on Pong, '
      'stuck at -21: 98%)')


def adam_step_factors(rms_gradients: np.ndarray, epsilon: float) -> np.ndarray:
  """g / (g + epsilon): Adam's long-run step for RMS gradient g as a share of the learning
  rate (its step is lr * m / (sqrt(v) + epsilon))."""
  return rms_gradients / (rms_gradients + epsilon)


def adam_figures(variable: str, second_moment: np.ndarray, steps: int, beta_2: float,
                 epsilon: float) -> List[Figure]:
  """One variable's Adam second-moment estimate v: sqrt(v / (1 - beta_2^t)) is each
  parameter's RMS gradient g over its last ~1/(1 - beta_2) steps."""
  correction = 1.0 - beta_2 ** max(steps, 1)
  rms = np.sqrt(np.asarray(second_moment, np.float64) / correction)
  factor = float(np.median(adam_step_factors(rms, epsilon)))
  none = float(np.mean(rms < NO_GRADIENT))
  return [
      _figure(f'{variable}: median RMS gradient', float(np.median(rms)),
              f'{np.median(rms):.1e}', 'g, over its last ~1 / (1 - beta_2) steps', False, ''),
      _figure(f'{variable}: median step / learning rate', factor, f'{factor:.3f}',
              f"Adam's step g / (g + epsilon {epsilon:g}): 1 is the full learning rate",
              factor < ADAM_STEP_WARNING,
              f'below {ADAM_STEP_WARNING:g}: epsilon is large next to its gradients and holds '
              'it still; a loss averaged over batch and time wants a small epsilon (1e-8)'),
      _figure(f'{variable}: parameters with no gradient', none, f'{none:.0%}',
              f'RMS gradient below {NO_GRADIENT:g}: no example reached them',
              none >= NO_GRADIENT_WARNING,
              f'{NO_GRADIENT_WARNING:.0%} or more: units that never fire, or inputs that are '
              'always 0'),
  ]


def _subject_and_measure(figure: Figure) -> Tuple[str, str]:
  subject, _, measure = figure.name.rpartition(': ')
  return subject, measure


def _cell(figure: Figure) -> str:
  return f'**{figure.shown}** (warning)' if figure.warning else figure.shown


def table(title: str, figures: Sequence[Figure]) -> str:
  """`figures` under `title` as Markdown, warnings marked: one row a figure with what it
  says; or, where several subjects share measures (layers, variables), one row a subject
  and one column a measure, what each measure says below."""
  pairs = [_subject_and_measure(f) for f in figures]
  measures = list(dict.fromkeys(measure for _, measure in pairs))
  subjects = list(dict.fromkeys(subject for subject, _ in pairs))
  if len(subjects) < 2 or len(measures) == len(figures):
    lines = [title, '', '| figure | value | what it says |', '|---|---:|---|']
    lines += [f'| {f.name} | {_cell(f)} | {f.meaning} |' for f in figures]
    return '\n'.join(lines)
  cells = {pair: _cell(f) for pair, f in zip(pairs, figures)}
  lines = [title, '', '| | ' + ' | '.join(measures) + ' |',
           '|---|' + '---:|' * len(measures)]
  lines += [f'| {subject} | ' + ' | '.join(cells.get((subject, m), '—') for m in measures) + ' |'
            for subject in subjects]
  meanings = dict((measure, f.meaning) for (_, measure), f in zip(pairs, figures))
  return '\n'.join(lines + [''] + [f'{m}: {meanings[m]}' for m in measures])


def warnings_text(figures: Sequence[Figure]) -> str:
  """The warnings, one line a kind (a measure past its threshold) naming where and the
  values, with why it is one; or that there is none."""
  kinds: Dict[Tuple[str, str], List[Figure]] = {}
  for f in figures:
    if f.warning:
      kinds.setdefault((_subject_and_measure(f)[1], f.warning), []).append(f)
  if not kinds:
    return 'No warnings: nothing here says the network cannot learn.'
  lines = [f'Warnings ({sum(len(w) for w in kinds.values())}):']
  for (measure, why), warned in kinds.items():
    where = ', '.join(f'{_subject_and_measure(f)[0] or f.name} {f.shown}' for f in warned)
    lines.append(f'- {measure}: {where}. {why[0].upper()}{why[1:]}.')
  return '\n'.join(lines)
