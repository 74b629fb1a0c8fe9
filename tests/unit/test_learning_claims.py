"""docs/learning.md's figures against the data kept beside it (docs/figures/*.csv): every
"first frame where the mean reaches Y" and every table of final returns is recomputed from
the episodes and must read as the page has it.

Each claim below is the page's text with {placeholders} where the data give the number;
the test renders it from the curve and looks for it in the page (whitespace aside). A
sentence that says a run reached a return at some frames must be one of these, or be
listed in NOT_FROM_DATA with why (a published figure, a run whose episodes were not kept,
a section another check holds).

Placeholders ({kind number|format}, `+` first for a sign on positive values):
  {c Y}      env frames (M, 2 decimals) of the first running mean >= Y
  {cK Y}     the same in thousands (K)
  {at F}     the running mean at the last episode ended by F million frames
  {last}     the running mean at the curve's end; {best} its highest
  {end}      the last episode's env frames (M, 2 decimals)
  {e F}      the greedy evaluation at the checkpoint of F M frames: mean ± std (1 decimal);
             {e F/1}, {e F/2}: its first ten episodes (one env), the next ten (ten envs)
  {em F}     its mean alone; {emin F}, {emax F} its lowest and highest episode
  {ec Y}     the frames (M) of the first checkpoint whose greedy evaluation reaches Y
  {cKlo Y}, {cKhi Y}  the lowest and highest {cK Y} over the claim's seeds (those that reach Y)
  {dip Y}    the lowest running mean after it first reached Y; {stays Y} the frames (M) from
             which it stays at Y or above
"""
import csv
import decimal
import functools
import os
import re
from typing import Dict, NamedTuple, Tuple

import numpy as np
import pytest

from tests.processes import REPO

DOCS = os.path.join(REPO, 'docs')
PAGE = os.path.join(DOCS, 'learning.md')


class Claim(NamedTuple):
  figure: str  # the data file in docs/figures/
  label: str  # the curve's label there
  text: str  # the page's text, {placeholders} where the data give the number
  window: int = 20  # episodes in the running mean
  seeds: Tuple[str, ...] = ('0',)  # the curves of the label: {... lo}, {... hi} range them


@functools.lru_cache(maxsize=None)
def _episodes(figure: str, label: str, role: str, seed: str = '0'
              ) -> Tuple[np.ndarray, np.ndarray]:
  with open(os.path.join(DOCS, 'figures', figure), newline='') as f:
    rows = [r for r in csv.DictReader(f)
            if r['label'] == label and r['role'] == role and r['seed'] == seed]
  if not rows:
    raise AssertionError(f'docs/figures/{figure} has no {role} rows labelled {label!r}')
  return (np.array([int(r['env_frames']) for r in rows]),
          np.array([float(r['episode_return']) for r in rows]))


def _running_means(claim: Claim, seed: str = '') -> Tuple[np.ndarray, np.ndarray]:
  frames, returns = _episodes(claim.figure, claim.label, 'run', seed or claim.seeds[0])
  means = np.convolve(returns, np.ones(claim.window) / claim.window, 'valid')
  return frames[claim.window - 1:], means


def _evaluation(claim: Claim, where: str) -> np.ndarray:
  """The evaluation episodes at the checkpoint `where` names: 'F' (M frames), or 'F/1' and
  'F/2' for the first ten episodes there and the rest."""
  millions, _, block = where.partition('/')
  frames, returns = _episodes(claim.figure, claim.label, 'evaluation')
  at = np.abs(frames - float(millions) * 1e6) < 0.005e6
  if not at.any():
    raise AssertionError(f'{claim.label!r} has no evaluation at {millions}M frames')
  returns = returns[at]
  return {'': returns, '1': returns[:10], '2': returns[10:]}[block]


def _number(value: float, fmt: str, sign: bool) -> str:
  # Halves round up, as the page's figures were rounded (11.05 is 11.1, not float's 11.0).
  places = int(fmt[1:-1]) if fmt.startswith('.') and fmt.endswith('f') else None
  if places is not None:
    value = float(decimal.Decimal(repr(round(float(value), 9))).quantize(
        decimal.Decimal(1).scaleb(-places), rounding=decimal.ROUND_HALF_UP))
  text = format(value, fmt)
  if sign and value > 0:
    text = '+' + text
  return text.replace('-', '−')


def _value(claim: Claim, kind: str, arg: str) -> Tuple[float, str]:
  """(the value a placeholder names, its default format)."""
  if kind == 'ec':
    frames, returns = _episodes(claim.figure, claim.label, 'evaluation')
    checkpoints = sorted(set(frames))
    reached = [f for f in checkpoints if returns[frames == f].mean() >= float(arg)]
    return reached[0] / 1e6, '.2f'
  if kind in ('cKlo', 'cKhi'):
    reached = []
    for seed in claim.seeds:
      frames, means = _running_means(claim, seed)
      above = np.nonzero(means >= float(arg.replace('−', '-')))[0]
      reached += [frames[above[0]] / 1e3] if len(above) else []
    return (min(reached) if kind == 'cKlo' else max(reached)), '.0f'
  frames, means = _running_means(claim)
  if kind in ('c', 'cK'):
    reached = np.nonzero(means >= float(arg.replace('−', '-')))[0]
    if not len(reached):
      raise AssertionError(f'{claim.label!r}: its mean of {claim.window} never reaches {arg}')
    first = frames[reached[0]]
    return (first / 1e6, '.2f') if kind == 'c' else (first / 1e3, '.0f')
  if kind == 'at':
    ended = np.nonzero(frames <= float(arg) * 1e6)[0]
    return means[ended[-1]], '.2f'
  if kind in ('dip', 'stays'):
    level = float(arg)
    first = np.nonzero(means >= level)[0][0]
    below = np.nonzero(means < level)[0]
    below = below[below > first]
    if kind == 'dip':
      return means[first:].min() if not len(below) else means[first:below[-1] + 1].min(), '.1f'
    return frames[below[-1] + 1 if len(below) else first] / 1e6, '.2f'
  if kind == 'last':
    return means[-1], '.2f'
  if kind == 'best':
    return means.max(), '.2f'
  if kind == 'end':
    return frames[-1] / 1e6, '.2f'
  if kind in ('firstK', 'lastK'):  # the mean of the first or last N episodes
    returns = _episodes(claim.figure, claim.label, 'run', claim.seeds[0])[1]
    count = int(arg)
    return (returns[:count] if kind == 'firstK' else returns[-count:]).mean(), '.2f'
  returns = _evaluation(claim, arg)
  if kind == 'em':
    return returns.mean(), '.1f'
  if kind == 'emin':
    return returns.min(), '.0f'
  if kind == 'emax':
    return returns.max(), '.0f'
  raise AssertionError(f'unknown placeholder {kind!r}')


_PLACEHOLDER = re.compile(r'\{(\+?)([a-zK]+)(?: ([−\-+\d./]+))?(?:\|([^}]+))?\}')


def render(claim: Claim) -> str:
  def fill(match):
    sign, kind, arg, fmt = match.groups()
    if kind == 'e':
      returns = _evaluation(claim, arg)
      return (f'{_number(returns.mean(), fmt or ".1f", bool(sign))} ± '
              f'{_number(returns.std(), fmt or ".1f", False)}')
    value, default = _value(claim, kind, arg or '')
    return _number(value, fmt or default, bool(sign))
  return _PLACEHOLDER.sub(fill, claim.text)


def _flat(text: str) -> str:
  return ' '.join(text.split())


PONG = 'learning_pong.csv'
PONG_SEED0 = 'V-trace, 16 updates per batch (shipped), seed 0'
PONG_SEED1 = 'V-trace, 16 updates per batch (shipped), seed 1'
PONG_SEED1_AGAIN = 'V-trace, 16 updates per batch (shipped), seed 1, second run (to 15M)'
PONG_ANNEALED_1 = 'V-trace, shipped, --anneal_learning_rate, seed 1 (to 15M)'
PONG_ANNEALED_0 = 'V-trace, shipped, --anneal_learning_rate, seed 0 (to 15M)'
PONG_BEFORE = 'V-trace, 1 update per batch (before 2026-11-27)'
R2D2 = 'learning_pong_r2d2.csv'
R2D2_FIXED = 'R2D2 CPU config (batch 8, Adam eps 1e-8, lr 5e-4)'
R2D2_DECAYING = ('R2D2 CPU config, epsilon ladder decaying 0.4 to 0.05 over 8M (shipped since '
                 '2026-12-05)')
BREAKOUT = 'learning_breakout.csv'
BREAKOUT_VTRACE = 'V-trace, gin/atari/vtrace.gin'
BREAKOUT_PPO = 'PPO, gin/atari/ppo.gin'
BREAKOUT_DIAGNOSIS = 'learning_breakout_diagnosis.csv'
BREAKOUT_BEFORE = 'V-trace as shipped before, 2 x 4 (from the 20M run)'
BREAKOUT_LIFE_5M = '+ episodic_life (2 x 4)'
BREAKOUT_2X16 = '2 x 16 envs (stopped at 3.4M)'
BREAKOUT_LIFE = 'learning_breakout_episodic_life.csv'
PONG_LIFE = 'learning_pong_episodic_life.csv'
PONG_LIFE_LABEL = 'V-trace, vtrace.gin with episodic_life, annealed over 10M, seed 0'
BREAKOUT_LIFE_LABEL = 'V-trace, vtrace.gin with episodic_life, annealed over 20M, seed 0'
PONG_APPO = 'learning_pong_appo.csv'
PONG_APPO_LABEL = ('V-trace, vtrace.gin with policy_clip 0.1 and normalised advantages, '
                   'annealed over 10M, seed 0')
BATTLEZONE_DIAGNOSIS = 'learning_battlezone_diagnosis.csv'
BATTLEZONE_SHIPPED = 'V-trace, shipped vtrace.gin (annealed over 10M; stopped at 6.84M)'
ACROBOT = 'learning_acrobot_vtrace_runs.csv'
ACER_PONG = 'learning_pong_acer.csv'
ACER_PONG_LABEL = 'ACER, gin/atari/acer.gin (Adam 2.5e-4)'
REACTOR_PONG = 'learning_pong_reactor.csv'
REACTOR_PONG_LABEL = ('Reactor, target network every 100 steps, seed 0, from scratch (shipped '
                      'since 2026-12-06)')
FOOTBALL = 'learning_football_empty_goal.csv'
CARTPOLE_MIXTURES = 'learning_cartpole_mixtures.csv'
LUNAR_MIXTURES = 'learning_lunarlander_mixtures.csv'
CARTPOLE_AGENTS = 'learning_cartpole_agents.csv'
PENDULUM = 'learning_acer_pendulum.csv'
ACER_REACTOR_PONG = 'learning_pong_acer_reactor.csv'
ENVPOOL = 'learning_pong_envpool.csv'
CHEETAH = 'learning_halfcheetah.csv'
FOOTBALL_LABEL = 'V-trace, gin/football/vtrace.gin'
# R2D2's fixed-ladder checkpoints: (env frames in M as the table has them, what follows them
# in the cell, learner steps).
R2D2_CHECKPOINTS = [
    ('1.00', '', ''), ('2.17', '', '6,482'), ('3.08', '', '9,336'), ('4.31', '', '13,179'),
    ('5.28', '', '16,201'), ('6.23', '', '19,163'), ('7.24', '', '22,307'),
    ('8.22', ' (4.7 h)', '25,373'), ('8.83', '', '27,291'), ('9.10', '', '28,102'),
    ('9.31', '', '28,771'), ('9.66', ' (5.7 h)', '29,856'), ('9.89', '', '30,572'),
    ('10.55', '', '32,637'), ('11.20', '', '34,690'), ('11.98', '', '37,109'),
    ('12.43', '', '38,491'), ('12.94', '', '40,088'), ('13.32', '', '41,275'),
    ('13.58', '', '42,096'), ('13.79', '', '42,747'), ('14.85', '', '46,059'),
    ('15.77', '', '48,941'), ('16.39', '', '50,848'), ('16.82', '', '52,211'),
    ('17.05', '', '52,926'), ('17.20', '', '53,407'), ('17.69', '', '54,914'),
    ('18.20', '', '56,509'), ('19.08', '', '59,271'),
]

CLAIMS = [
    # Acrobot: the six runs of the figure's data (the first episode above −500; the mean of
    # 100 at −150).
    Claim(ACROBOT, 'gin/classic/vtrace.gin', 'they left −500 at {cKlo −499}K–{cKhi −499}K frames',
          window=1, seeds=tuple('012345')),
    Claim(ACROBOT, 'gin/classic/vtrace.gin', 'five reached −150 at {cKlo −150}K–{cKhi −150}K',
          window=100, seeds=tuple('012345')),
    # Pong: the table of crossings, each run's row.
    Claim(PONG, PONG_SEED0, '| 0 | {c −15}M | {c 0}M | {c 10}M | {c 15}M | **{c 18}M** (8.5 h) '
          '| {last} at {end}M (best {best}) |'),
    Claim(PONG, PONG_SEED1, '| 1 | {c −15}M | {c 0}M | {c 10}M | {c 15}M | **{c 18}M** (5.2 h) '
          '| {last} at {end}M (best {best}) |'),
    Claim(PONG, PONG_SEED1_AGAIN, '| 1, again from scratch to 10M (2026-12-05) | {c −15}M | '
          '{c 0}M | {c 10}M | {c 15}M | **{c 18}M** (2.1 h) | {at 10.0} at 10.0M, the end'),
    Claim(PONG, PONG_SEED1_AGAIN, '| 1, that run continued to 15M | | | | | | {last} at 15.0M, the '
          'end (best {best}'),
    Claim(PONG, PONG_ANNEALED_1, '| {c −15}M | {c 0}M | {c 10}M | {c 15}M | **{c 18}M** (0.87 h) '
          '| **{last} at 15.0M**, the end (best {best}; mean of 100: 19.91)'),
    Claim(PONG, PONG_ANNEALED_0, '| {c −15}M | {c 0}M | {c 10}M | {c 15}M | **{c 18}M** (0.97 h) '
          '| **{last} at 15.0M**, the end (best {best}; mean of 100: 19.53)'),
    Claim(PONG, PONG_ANNEALED_1, 'mean of 100: {last}', window=100),
    Claim(PONG, PONG_ANNEALED_0, 'mean of 100: {last}', window=100),
    # Pong: the prose about those runs, and their greedy evaluations.
    Claim(PONG, PONG_SEED1_AGAIN, 'Its training episodes passed +18 at {c 18}M frames'),
    Claim(PONG, PONG_SEED1_AGAIN, 'and ended at {at 10.0}'),
    Claim(PONG, PONG_SEED1_AGAIN, '(mean of 100: {at 10.0})', window=100),
    Claim(PONG, PONG_SEED1_AGAIN, '−21 at 0.66M, {em 4.33} at 4.33M, {em 6.52} at 6.52M, '
          '**{e 7.49} at 7.49M**, and at the final checkpoint (10.0M) **{e 10.0}**'),
    Claim(PONG, PONG_ANNEALED_1, 'episodes passed +18 at **{c 18}M frames** (0.87 h), +19 at '
          '{c 19|.2f}M'),
    Claim(PONG, PONG_ANNEALED_1, 'at the final checkpoint **{e 15.0/1} ({emin 15.0/1} to '
          '{emax 15.0/1})**, **{em 15.0/2} ± 0** over ten envs'),
    Claim(PONG, PONG_ANNEALED_0, 'Its mean of 20 training episodes passed +18 at **{c 18}M '
          'frames**'),
    Claim(PONG, PONG_ANNEALED_0, 'at the final checkpoint **{e 15.0/1} ({emin 15.0/1} to '
          '{emax 15.0/1})**, **{e 15.0/2}** over ten envs'),
    Claim(PONG, PONG_ANNEALED_1, 'item 2: +18 at {c 18}M'),
    Claim(PONG, PONG_ANNEALED_0, 'and {c 18}M frames (aim ≤ 10M'),
    # Pong: the runs before the fix.
    Claim(PONG, PONG_BEFORE, '| 1.6 | 1,560 | {at 2} / {at 4} |'),
    Claim(PONG, PONG_BEFORE, '| 4.00M | 39 min | {last} ({best|.1f}) | — |'),
    Claim(PONG, 'PPO', 'stopped at 3.36M | 3.36M | 119 min | {last|.1f} ({best}) | — |'),
    Claim(PONG, 'PPO', 'its mean of 20 passed −15 at {c −15}M frames'),
    # R2D2 on Pong: the fixed ladder's checkpoints, the decaying ladder's crossing.
    *(Claim(R2D2, R2D2_FIXED, f'| {frames}M{after} | {steps} | {{+at {frames}}}')
      for frames, after, steps in R2D2_CHECKPOINTS),
    *(Claim(R2D2, R2D2_FIXED, f'{{e {frames}}} ({{emin {frames}}} to {{emax {frames}}})')
      for frames, _, _ in R2D2_CHECKPOINTS if frames not in ('1.00', '20.00')),
    Claim(R2D2, R2D2_FIXED, '| 20.00M (the end; `seed eval`) | 62,146 | {+last} | '
          '**{e 20.0} ({emin 20.0} to {emax 20.0})** |'),
    Claim(R2D2, R2D2_FIXED, 'Greedy play reaches +18 at {ec 18}M frames'),
    Claim(R2D2, R2D2_FIXED, 'By it the run passed +18 at {ec 18}M'),
    Claim(R2D2, R2D2_FIXED, '(its best, {+best|.1f}, at 18.08M; {+last} at the end, 20.0M frames'),
    Claim(R2D2, R2D2_FIXED, "the fixed-ladder run's best in 20M was {+best|.1f}"),
    Claim(R2D2, R2D2_DECAYING, '**the mean of 20 training episodes reached +18 at {c 18}M '
          'frames**'),
    Claim(R2D2, R2D2_DECAYING, '{at 2.0} at 2.0M, {at 3.43} at 3.43M, {+at 4.49} at 4.49M, '
          '{+at 5.04} at 5.04M, and **passed +18 at {c 18}M frames**, then {+at 5.41} at '
          '5.41M and {+at 5.52} at 5.52M'),
    Claim(R2D2, R2D2_DECAYING, 'mean of 100 {+at 5.52}', window=100),
    Claim(R2D2, R2D2_FIXED, 'the run on the fixed ladder had {+at 4.31} at 4.31M and '
          '{+at 5.28} at 5.28M'),
    Claim(R2D2, R2D2_DECAYING, '{+at 5.79} at 5.79M, {+at 6.03} at 6.03M, {+at 6.08} at 6.08M '
          '(18,615 train steps), {+at 6.26} at 6.26M'),
    Claim(R2D2, R2D2_DECAYING, 'holds at {c 18}M'),
    Claim(R2D2, R2D2_DECAYING, '{at 7.0} at 7.0M, {at 7.5} at 7.5M and 8.0M (where the decay '
          'ends), {at 8.5} at 8.5M and **{last|.1f} at 8.92M'),
    Claim(R2D2, R2D2_DECAYING, '(mean of 100: {last})**', window=100),
    # Breakout, V-trace and PPO (their Pong configs, to 20M frames).
    Claim(BREAKOUT, BREAKOUT_VTRACE, '| env frames | {c 10}M | {c 25}M | {c 50}M | {c 75}M | '
          '**{c 100}M** (2.79 h) | {c 125}M | {last|.1f} ({best|.1f}) |', window=100),
    Claim(BREAKOUT, BREAKOUT_PPO, '| PPO, env frames | {c 10}M | {c 25}M | {c 50}M | {c 75}M | '
          '**{c 100}M** (2.99 h) | {last|.1f} ({best|.1f}) |', window=100),
    Claim(BREAKOUT, BREAKOUT_VTRACE, '| V-trace, env frames | {c 10}M | {c 25}M | {c 50}M | '
          '{c 75}M | {c 100}M (2.79 h) | {last|.1f} ({best|.1f}) |', window=100),
    Claim(BREAKOUT, BREAKOUT_PPO, "PPO's mean first touched 100 at {c 100}M, fell back, as low "
          'as {dip 100}, for two million frames, and stayed above 100 from {stays 100}M',
          window=100),
    Claim(BREAKOUT, BREAKOUT_VTRACE, 'this run is at {last|.0f} at 20M', window=100),
    Claim(BREAKOUT, BREAKOUT_VTRACE, '({at 17|.1f} at 17M, {at 18|.1f} at 18M, {at 19|.1f} at '
          '19M)', window=100),
    Claim(BREAKOUT, BREAKOUT_VTRACE, '{em 0.95} at 0.95M, {em 5.67} at 5.67M, {em 11.94} at '
          '11.9M; the final checkpoint **{e 20.0}** ({emin 20.0} to {emax 20.0};'),
    # Breakout's diagnostics to 5M frames (its table's "mean of 100 at 5M" cells).
    Claim(BREAKOUT_DIAGNOSIS, BREAKOUT_LIFE_5M, 'seed 0 | **{at 5|.1f}**', window=100),
    Claim(BREAKOUT_DIAGNOSIS, BREAKOUT_BEFORE, '({at 5|.1f} before)', window=100),
    Claim(BREAKOUT_DIAGNOSIS, '+ policy_clip 0.1 + normalize_advantages (2 x 4)',
          '| {at 5|.1f} (48.2 without) |', window=100),
    Claim(BREAKOUT_DIAGNOSIS, '+ policy_clip 0.1 + normalize_advantages (2 x 4)',
          'Breakout keeps its curve to 5M: {at 5|.1f} at 5M against 48.2', window=100),
    Claim(BREAKOUT_DIAGNOSIS, BREAKOUT_2X16, '| 2 × 16 | {last|.1f} at 3.4M', window=100),
    Claim(BREAKOUT_DIAGNOSIS, BREAKOUT_BEFORE, '({at 3.4|.1f} before at 3.4M)', window=100),
    # Breakout with episodic_life to 20M frames: the crossings, the references' frames, greedy.
    Claim(BREAKOUT_LIFE, BREAKOUT_LIFE_LABEL, '| env frames | {c 10}M | {c 25}M | {c 50}M | '
          '{c 100}M | **{c 200}M** (1.59 h) | {c 260}M | {c 300}M | {c 350}M | {last|.1f} '
          '({best|.1f}) |', window=100),
    Claim(BREAKOUT_LIFE, BREAKOUT_LIFE_LABEL, '| **this run** | **{at 5|.1f}** | **{at 10|.1f}** '
          '| **{at 20|.1f}** |', window=100),
    Claim(BREAKOUT_LIFE, BREAKOUT_LIFE_LABEL, 'is met at {c 200}M and the moonshot (RLlib '
          "IMPALA's 260 at 20M) at {c 260}M; at 20M the mean is {last|.1f}", window=100),
    Claim(BREAKOUT_LIFE, BREAKOUT_LIFE_LABEL, 'one env): **{e 20.0}** ({emin 20.0} to '
          '{emax 20.0})'),
    # Pong again with the shipped vtrace.gin (episodic_life), annealed over 10M frames.
    Claim(PONG_LIFE, PONG_LIFE_LABEL, '| seed 0, `episodic_life`, annealed over 10M | {c −15}M | '
          '{c 0}M | {c 10}M | {c 15}M | **{c 18}M** (0.82 h) | {last} ({best}) | **{e 10.0}** '
          '({emin 10.0} to {emax 10.0}) |'),
    # Pong with the APPO settings in vtrace.gin (policy_clip, normalised advantages),
    # stopped at +18 by a watcher; greedy at that checkpoint.
    Claim(PONG_APPO, PONG_APPO_LABEL, '| {c −15}M | {c 0}M | {c 10}M | {c 15}M | **{c 18}M** '
          '(3.42 h: 0.89 h of pauses, an AVX2-only host) | stopped at {end}M: {last} ({best}) | '
          '{e 5.86} ({emin 5.86} to {emax 5.86}), at 5.86M |'),
    Claim(PONG_APPO, PONG_APPO_LABEL, 'passes the check: **+18 at {c 18}M frames**'),
    Claim(PONG_APPO, PONG_APPO_LABEL, 'passed: +18 at {c 18}M frames (the file before: 6.50M)'),
    Claim(BREAKOUT, BREAKOUT_PPO, '{em 2.11} at 2.1M, {em 4.7} at 4.7M, {em 7.85} at 7.8M, '
          '{em 10.9} at 10.9M, {em 13.23} at 13.2M, {em 16.3} at 16.3M, {em 19.43} at 19.4M, '
          'and the final checkpoint **{e 20.0/1}** ({emin 20.0/1} to {emax 20.0/1}), '
          '**{e 20.0/2}** over ten envs'),
    # MinAtar: the mean of the last 100 at given frames.
    Claim('learning_minatar_breakout.csv', 'V-trace', '| V-trace | {at 0.5|.1f} | {at 1|.1f} | '
          '{at 2|.1f} | **{at 3|.1f}** |', window=100),
    Claim('learning_minatar_breakout.csv', 'PPO', '| PPO | {at 0.5|.1f} | {at 1|.1f} | '
          '{at 2|.1f} | **{at 3|.1f}** |', window=100),
    Claim('learning_minatar_spaceinvaders.csv', 'V-trace', '| V-trace | {at 0.5|.1f} | '
          '{at 1|.1f} | {at 2|.1f} | **{at 3|.1f}** |', window=100),
    Claim('learning_minatar_spaceinvaders.csv', 'PPO', '| PPO | {at 0.5|.1f} | {at 1|.1f} | '
          '{at 2|.1f} | **{at 3|.1f}** |', window=100),
    # ACER and Reactor on Pong.
    Claim(ACER_PONG, ACER_PONG_LABEL, '| env frames | {c −15}M | {c 0}M | {c 10}M | {c 15}M | '
          '**{c 18}M** | {last} ({best|.1f}); mean of 100 18.44 | {e 8.53} at 8.53M; '
          '**{e 10.0}** ({emin 10.0} to {emax 10.0}) at 10M |'),
    Claim(ACER_PONG, ACER_PONG_LABEL, 'mean of 100 {last}', window=100),
    Claim(ACER_PONG, ACER_PONG_LABEL, 'The mean of 100 passed +18 at {c 18}M frames', window=100),
    Claim(REACTOR_PONG, REACTOR_PONG_LABEL, '| {c −15}M | {c −5}M | {c 0}M | {c 5}M | {c 10}M | '
          '{c 15}M | **{c 18}M** (1.05 h) | 15.75 to 20.45 | {last|.1f} (mean of 100: 19.26) |'),
    Claim(REACTOR_PONG, REACTOR_PONG_LABEL, '(mean of 100: {last})', window=100),
    Claim(REACTOR_PONG, REACTOR_PONG_LABEL, 'Reactor reaches +18 at {c 18}M frames'),
    Claim(REACTOR_PONG, REACTOR_PONG_LABEL, '**{e 3.83} at 3.83M, {e 5.75} at 5.75M, {e 7.6} at '
          '7.60M, {em 10.0} ± 0 at 10.0M**'),
    # The replay mixtures' repeated runs (CartPole, LunarLander, Pong).
    Claim(CARTPOLE_MIXTURES, 'queue', '| CartPole-v1, again ¹ | 300K | 400 | {last|.1f} ✗ |',
          window=100),
    Claim(CARTPOLE_MIXTURES, 'queue+uniform', '| {last|.1f} ✗ | **', window=100),
    Claim(CARTPOLE_MIXTURES, 'queue+elite', '| **{last|.1f}** ✓ | 147K /', window=100),
    Claim(LUNAR_MIXTURES, 'queue', '| gym:LunarLander-v3, again ² | 2M | 100 | {last|.1f} ✓ |',
          window=100),
    Claim(LUNAR_MIXTURES, 'queue', '{cK 100}K / ', window=100),
    *(Claim(figure, label, text, window=100) for figure, label, text in (
        (CARTPOLE_MIXTURES, 'queue', '| {cK 400}K / '), (CARTPOLE_MIXTURES, 'queue+uniform',
                                                       ' / {cK 400}K / '),
        (CARTPOLE_MIXTURES, 'queue+elite', ' / {cK 400}K | '),
        (LUNAR_MIXTURES, 'queue+uniform', ' / {cK 100}K / '),
        (LUNAR_MIXTURES, 'queue+elite', ' / {cK 100}K | '))),
    Claim(LUNAR_MIXTURES, 'queue+uniform', '| {last|.1f} ✗ | ', window=100),
    Claim(LUNAR_MIXTURES, 'queue+elite', '| {last|.1f} ✓ | ', window=100),
    # ACER and Reactor on CartPole and Pendulum, the repeated runs.
    Claim(CARTPOLE_AGENTS, 'ACER', '| `gin/toy/acer.gin` | 134K; again {cK 400}K | 500.0; again '
          '{last|.1f} |', window=100),
    Claim(CARTPOLE_AGENTS, 'Reactor', '| `gin/toy/reactor.gin` | 56K; again {cK 400}K | 486.9; '
          'again {last|.1f} |', window=100),
    Claim(CARTPOLE_AGENTS, 'V-trace', '| 172K; again {cK 400}K | 230.4 (486.4 in an earlier run); '
          'again {last|.1f} |', window=100),
    Claim(PENDULUM, 'shipped, seed 0', '| 169K; again {cK −300}K | −168; again {last|.0f} |'),
    Claim(PENDULUM, 'shipped, seed 1', '| 171K; again {cK −300}K | −173; again {last|.0f} |'),
    Claim(PENDULUM, 'trust region off', '| never; again never | −1,326; again −1,584 |'),
    *(Claim(ACER_REACTOR_PONG, label, f'| {label} | {first}; again {{at 2}} |', window=100)
      for label, first in (('ACER', '−20.30'), ('Reactor', '−20.25'), ('V-trace', '−20.25'))),
    *(Claim(ACER_REACTOR_PONG, label, f'| {first}; again {{best}} |')
      for label, first in (('ACER', '−19.65'), ('Reactor', '−19.6'), ('V-trace', '−19.5'))),
    # PPO on Pong, ale-py and EnvPool actors.
    Claim(ENVPOOL, 'PPO, ale-py (2026-11-27)', '| ale-py (2026-11-27, the repeat) | {at 1|.1f} | '
          '{at 2|.1f} | {at 2.5|.1f} | {at 3|.1f} | {at 3.34|.1f} | 3.34M | {last|.1f} |'),
    Claim(ENVPOOL, 'PPO, EnvPool (2026-11-28)', '| EnvPool | {at 1|.1f} | {at 2|.1f} | '
          '{at 2.5|.1f} | {at 3|.1f} | {at 3.34|.1f} | 4.00M | **{+last}** |'),
    # HalfCheetah, the repeated runs.
    Claim(CHEETAH, 'PPO', '| 3,528; again {last|,.0f} |', window=32),
    Claim(CHEETAH, 'SAC', '| 7,364; again {last|,.0f} (last 10) |', window=10),
    # BattleZone's diagnostics (Atari-5).
    Claim(BATTLEZONE_DIAGNOSIS, BATTLEZONE_SHIPPED, '| shipped `vtrace.gin` | {at 1|,.0f} | '
          '{at 2|,.0f} | 2.88 | uniform to 6.84M ({at 3|,.0f} at 3M, {at 5|,.0f} at 5M) |',
          window=100),
    Claim(BATTLEZONE_DIAGNOSIS, 'PPO, ppo.gin + episodic_life',
          '| {at 1|,.0f} | **{at 2|,.0f}** | 2.68 at 1.5M |', window=100),
    Claim(BATTLEZONE_DIAGNOSIS, 'V-trace + policy_clip 0.1 + normalize_advantages',
          '| {at 1|,.0f} | **{at 2|,.0f}** | 2.79–2.82 |', window=100),
    # Football.
    Claim(FOOTBALL, FOOTBALL_LABEL, 'The mean of 100 episodes passed 1.9 at {cK 1.9}K frames',
          window=100),
    Claim(FOOTBALL, FOOTBALL_LABEL, '| mean return | {firstK 200} | {lastK 500} |'),
]

# Sentences that say a run reached a return at some frames, yet are no claim above: why.
NOT_FROM_DATA = {
    'reached −89 at 24K': 'a trial run (rewards x 0.01) whose episodes were not kept',
    'reached 478 at 211K': 'a classic-suite run whose episodes were not kept',
    'reached −150 at 117K': 'six earlier runs; the figure has the six after them',
    'left −500 in 500K': 'a CI run that never did',
    'passes −15 at 1.72M': "the first PPO run's episodes were not kept (the figure has its repeat)",
    'passed −15 by 1.7M': "the first PPO run's episodes were not kept (the figure has its repeat)",
    'reaches +18 within 20M': 'an aim, not a result',
    'reach the aim of 100 within 20M': 'an aim: the runs that met it are in the table above it',
    'reaches +18 at 14M': "RLlib's published figure",
}
# A run reached a return at some frames: the sentences a claim or NOT_FROM_DATA must cover.
_REACHED = re.compile(
    r'(?:pass(?:es|ed)?|reach(?:es|ed)?|cross(?:es|ed)?|first touched|left)\s+'
    r'(?:the aim of\s+)?\**[+−-]?\d+(?:\.\d+)?\**\s+(?:at|by|within|in)\s+\**\d+(?:\.\d+)?[MK]')


def _page() -> str:
  with open(PAGE, encoding='utf-8') as f:
    return f.read()


@pytest.mark.parametrize('claim', CLAIMS, ids=lambda c: f'{c.figure}:{c.text[:40]}')
def test_the_page_reads_as_the_data_give(claim):
  page = _flat(_page())
  expected = _flat(render(claim))
  assert expected in page, (
      f'docs/learning.md should read, from docs/figures/{claim.figure} ({claim.label!r}, mean '
      f'of {claim.window}):\n  {expected}\nbut has no such text: fix the page (or the claim, '
      'if the page changed its words)')


def test_every_return_reached_at_some_frames_is_a_claim_or_says_why_not():
  page = _flat(_page())
  rendered = [_flat(render(claim)) for claim in CLAIMS]
  unchecked = []
  for match in _REACHED.finditer(page):
    said = match.group(0)
    if any(said in text for text in rendered) or any(said.startswith(k) or k in said
                                                     for k in NOT_FROM_DATA):
      continue
    unchecked.append(said)
  assert unchecked == [], ('docs/learning.md says these without a claim that checks them '
                           'against docs/figures (tests/unit/test_learning_claims.py): '
                           + '; '.join(unchecked))
