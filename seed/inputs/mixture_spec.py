"""What a replay mixture is made of: one ReplaySpec per replay, checked, and each one's
share of a batch.

A mixture is a list of replays, each with a kind, a capacity and a `sample_ratio`;
the ratios sum to 1 and every batch takes round(batch x ratio) unrolls from each
(../shared/SPEC.md §2). The same list comes from gin (`ReplayMixtureConfig.replays`)
or, as JSON, from the learner's `--replay_parameters` flag, e.g.

  [{"kind": "queue", "capacity": 1, "sample_ratio": 0.5},
   {"kind": "elite", "capacity": 10000, "sample_ratio": 0.5, "distance": "ln_norm",
    "strategy": 3, "lambda_batch_multiplier": 6, "alfa_annealing_factor": 2.0}]

Kinds:
  queue: FIFO, each unroll trained on once, in arrival order. Its capacity counts
    batches of its own share: 1 is pure IMPALA (the trainer takes each share as soon
    as it is there), 2 (the default mixture) lets the actors run one share ahead.
  uniform: a ring of `capacity` unrolls, sampled uniformly with replacement.
  prioritized: a ring sampled with P(i) ~ p_i^priority_exponent and importance
    weights (N P_i)^-importance_exponent normalised by their max.
  elite: a uniform ring whose candidates are ranked by how far the current
    network's feature vectors have moved from the stored ones (seed.replay.elite).
  attentive: a uniform ring whose candidates are ranked by how close their states
    are to the states the actors see now (Sun et al. 2020).
Capacities of all kinds but the queue count unrolls, and must hold the replay's share.

Pure Python: no TensorFlow, no NumPy arrays of data.
"""
import dataclasses
import json
import math
from typing import Any, Mapping, Sequence, Tuple

import gin

from seed.replay import elite

KINDS = ('queue', 'uniform', 'prioritized', 'elite', 'attentive')
# How far the ratios' sum may be from 1.
RATIO_TOLERANCE = 1e-6

_COMMON_KEYS = ('kind', 'capacity', 'sample_ratio')
_RANKING_KEYS = ('distance', 'p', 'strategy', 'lambda_batch_multiplier',
                 'alfa_annealing_factor', 'lambda_annealing_steps')
KEYS_BY_KIND = {
    'queue': _COMMON_KEYS,
    'uniform': _COMMON_KEYS,
    'prioritized': _COMMON_KEYS + ('priority_exponent', 'importance_exponent'),
    'elite': _COMMON_KEYS + _RANKING_KEYS,
    'attentive': _COMMON_KEYS + _RANKING_KEYS + ('reference_unrolls',),
}


@dataclasses.dataclass(frozen=True)
class ReplaySpec:
  """One replay of a mixture; fields a kind does not read keep their defaults."""
  kind: str
  capacity: int
  """queue: batches of its share it holds; every other kind: unrolls."""
  sample_ratio: float
  """Its fraction of every batch, in (0, 1]."""
  priority_exponent: float = 0.9
  """prioritized: alpha, >= 0."""
  importance_exponent: float = 0.6
  """prioritized: beta, >= 0."""
  distance: str = 'ln_norm'
  """elite, attentive: 'ln_norm' (the p-norm), 'cosine' (1 - cosine similarity) or
  'kl' (the feature vectors read as logits)."""
  p: float = 2.0
  """elite, attentive: the norm of 'ln_norm', >= 1."""
  strategy: int = 3
  """elite, attentive: 1 the lowest distances; 2 the lowest of each of n strides of
  the sorted candidates; 3 the lowest among the least-sampled; 4 the least-sampled
  of each stride."""
  lambda_batch_multiplier: float = 1.0
  """elite, attentive: lambda_0 >= 1, candidates per unroll taken at the start (1:
  plain uniform sampling)."""
  alfa_annealing_factor: float = 1.0
  """elite, attentive: lambda reaches 1 after alfa x lambda_annealing_steps train steps."""
  lambda_annealing_steps: int = 10_000
  """elite, attentive: train steps of the annealing at alfa 1 (the original platform
  used the run's learning-rate schedule length)."""
  reference_unrolls: int = 8
  """attentive: the latest unrolls whose last states stand for 'what the actors see now'."""


def _fail(index: int, kind: Any, message: str):
  raise ValueError(f'replay {index} ({kind}): {message}')


def _number(index, kind, name, value, low, high=math.inf, low_open=False, integer=False):
  ok_type = (isinstance(value, int) if integer else isinstance(value, (int, float)))
  if isinstance(value, bool) or not ok_type:
    _fail(index, kind, f'{name} = {value!r}; accepted: {"an int" if integer else "a number"}')
  above = value > low if low_open else value >= low
  if not (above and value <= high):
    bound = f'> {low}' if low_open else f'>= {low}'
    if high != math.inf:
      bound = f'in ({low}, {high}]' if low_open else f'in [{low}, {high}]'
    _fail(index, kind, f'{name} = {value!r}; accepted: {"an int" if integer else "a number"} '
          f'{bound}')


def spec_from_mapping(index: int, item: Mapping[str, Any]) -> ReplaySpec:
  """One replay's settings (a JSON object or gin dict) -> ReplaySpec; ValueError names
  the replay, the key and what is accepted."""
  if not isinstance(item, Mapping):
    raise ValueError(f'replay {index}: {item!r} is no mapping; each replay is an object '
                     'like {"kind": "uniform", "capacity": 1000, "sample_ratio": 0.5}')
  kind = item.get('kind')
  if kind not in KINDS:
    _fail(index, kind, f'kind = {kind!r}; accepted: one of {", ".join(map(repr, KINDS))}')
  accepted = KEYS_BY_KIND[kind]
  for key in item:
    if key not in accepted:
      _fail(index, kind, f'unknown key {key!r}; accepted for {kind}: {", ".join(accepted)}')
  for key in ('capacity', 'sample_ratio'):
    if key not in item:
      _fail(index, kind, f'{key} is missing')
  spec = ReplaySpec(**item)
  _number(index, kind, 'capacity', spec.capacity, 1, integer=True)
  _number(index, kind, 'sample_ratio', spec.sample_ratio, 0.0, 1.0, low_open=True)
  _number(index, kind, 'priority_exponent', spec.priority_exponent, 0.0)
  _number(index, kind, 'importance_exponent', spec.importance_exponent, 0.0)
  _number(index, kind, 'p', spec.p, 1.0)
  _number(index, kind, 'lambda_batch_multiplier', spec.lambda_batch_multiplier, 1.0)
  _number(index, kind, 'alfa_annealing_factor', spec.alfa_annealing_factor, 0.0,
          low_open=True)
  _number(index, kind, 'lambda_annealing_steps', spec.lambda_annealing_steps, 1, integer=True)
  _number(index, kind, 'reference_unrolls', spec.reference_unrolls, 1, integer=True)
  try:
    elite.check_distance(spec.distance)
    elite.check_strategy(spec.strategy)
  except ValueError as e:
    _fail(index, kind, str(e))
  return spec


def parse_specs(items: Sequence[Mapping[str, Any]]) -> Tuple[ReplaySpec, ...]:
  """A mixture's replays, checked one by one and together (ratios sum to 1, at most
  one queue)."""
  if isinstance(items, (str, bytes, Mapping)) or not isinstance(items, Sequence) or not items:
    raise ValueError(f'replay parameters {items!r}: expected a non-empty list of replays, '
                     'e.g. [{"kind": "queue", "capacity": 2, "sample_ratio": 1.0}]')
  specs = tuple(spec_from_mapping(i, item) for i, item in enumerate(items))
  total = sum(spec.sample_ratio for spec in specs)
  if abs(total - 1.0) > RATIO_TOLERANCE:
    ratios = ' + '.join(f'{spec.sample_ratio:g}' for spec in specs)
    raise ValueError(f'replay sample_ratios {ratios} sum to {total:.9g}; accepted: a sum of '
                     f'1 within {RATIO_TOLERANCE:g}')
  queues = [i for i, spec in enumerate(specs) if spec.kind == 'queue']
  if len(queues) > 1:
    raise ValueError(f'replays {queues} are all queues; accepted: at most one queue (each '
                     'would get every unroll and train on it once more)')
  return specs


def parse_json(text: str) -> Tuple[ReplaySpec, ...]:
  """--replay_parameters: the list as JSON."""
  try:
    items = json.loads(text)
  except json.JSONDecodeError as e:
    raise ValueError(f'--replay_parameters={text!r} is not valid JSON ({e.msg} at character '
                     f'{e.pos}); expected a list like [{{"kind": "queue", "capacity": 2, '
                     '"sample_ratio": 1.0}]') from None
  return parse_specs(items)


def batch_shares(specs: Sequence[ReplaySpec], batch_unrolls: int) -> Tuple[int, ...]:
  """Unrolls each replay gives a batch of `batch_unrolls`: floor(batch x ratio) each,
  then the units left over to the largest remainders, ties to the earlier replay, so
  every share is within one of batch x ratio and they sum to the batch.

  Raises ValueError when a share would be 0 or a replay cannot hold its share.
  """
  exact = [batch_unrolls * spec.sample_ratio for spec in specs]
  shares = [math.floor(x + 1e-9) for x in exact]
  left = batch_unrolls - sum(shares)
  by_remainder = sorted(range(len(specs)), key=lambda i: (-(exact[i] - shares[i]), i))
  for i in by_remainder[:max(left, 0)]:
    shares[i] += 1
  for i, (spec, share) in enumerate(zip(specs, shares)):
    if share < 1:
      _fail(i, spec.kind, f'sample_ratio {spec.sample_ratio:g} of a batch of {batch_unrolls} '
            'unrolls gives it no unroll; accepted: a ratio of at least 1/batch')
    if spec.kind != 'queue' and spec.capacity < share:
      _fail(i, spec.kind, f'capacity {spec.capacity} is below its share of every batch, '
            f'{share} unrolls (sample_ratio {spec.sample_ratio:g} of {batch_unrolls}); '
            f'accepted: a capacity >= {share}')
  return tuple(shares)


@gin.configurable
@dataclasses.dataclass(frozen=True)
class ReplayMixtureConfig:
  """Where an on-policy agent's (V-trace's, PPO's) batches come from; see the module doc."""
  replays: Sequence[Mapping[str, Any]] = (
      {'kind': 'queue', 'capacity': 2, 'sample_ratio': 1.0},)
  """The replays, as a list of dicts (the keys of ReplaySpec)."""
  samples_per_insert: float = 1.0
  """Without a queue: unrolls sampled per unroll inserted (actors or trainer wait to keep
  it). With a queue the queue sets the pace: each inserted unroll is trained on once
  from the queue and (1 - queue ratio) / queue ratio times from the replays on average."""
  min_fill_unrolls: int = 0
  """Sampling waits until every replay holds this many unrolls (and at least its share)."""
  prefetch_batches: int = 0
  """Batches a background thread prepares ahead of the trainer (0: none, sampled on
  demand); elite and attentive batches are then ranked by a network up to that many
  steps old."""
