"""Replay mixtures (seed.inputs.mixture_spec, mixture, prefetch): specs, shares, what a
batch is made of, priorities, ranking, checkpoints, backpressure and prefetching."""
import json
import os
import threading
import time

import numpy as np
import pytest

from seed import types
from seed.inputs import mixture_spec
from seed.inputs.mixture import ID_SHIFT, ReplayMixture
from seed.inputs.prefetch import PrefetchingInput
from tests.unit.test_replay import make_unroll

NUM_ACTIONS = 3


def _unroll(number: int, steps: int = 3) -> types.Unroll:
  """Unroll `number`: its observations and env id say which it is; its stored logits
  are `number` on action 0 (the 'feature vectors' the ranking tests compare)."""
  logits = np.zeros((steps, NUM_ACTIONS), np.float32)
  logits[:, 0] = number
  return make_unroll(np.full((steps, 2), number, np.float32),
                     policy_outputs={'logits': logits}, env_id=number)


def _stored_logits(unrolls: types.Unroll) -> np.ndarray:
  """A 'current network' that has not moved: every distance is 0."""
  return unrolls.steps.policy_outputs['logits']


def _numbers(sample: types.Sample):
  return [int(x) for x in sample.data.env_id]


def _specs(*items):
  return mixture_spec.parse_specs(list(items))


QUEUE = {'kind': 'queue', 'capacity': 2, 'sample_ratio': 0.5}
UNIFORM = {'kind': 'uniform', 'capacity': 50, 'sample_ratio': 0.5}


# ---- specs and shares ----

@pytest.mark.parametrize('batch, ratios, shares', [
    (32, (0.5, 0.5), (16, 16)),
    (3, (0.5, 0.5), (2, 1)),            # 1.5 / 1.5: the tie's unit goes to the first.
    (10, (1 / 3, 1 / 3, 1 / 3), (4, 3, 3)),
    (7, (0.2, 0.8), (1, 6)),            # 1.4 / 5.6: the larger remainder wins.
    (5, (1.0,), (5,)),
])
def test_batch_shares_by_hand(batch, ratios, shares):
  specs = _specs(*({'kind': 'uniform', 'capacity': 100, 'sample_ratio': r} for r in ratios))
  assert mixture_spec.batch_shares(specs, batch) == shares


@pytest.mark.parametrize('items, match', [
    ([QUEUE, dict(UNIFORM, sample_ratio=0.4)],
     r'sample_ratios 0.5 \+ 0.4 sum to 0.9; accepted: a sum of 1 within 1e-06'),
    ([dict(QUEUE, kind='lifo')], "replay 0 .lifo.: kind = 'lifo'; accepted: one of 'queue', "
     "'uniform', 'prioritized', 'elite', 'attentive'"),
    ([dict(QUEUE, colour='red', sample_ratio=1.0)],
     "replay 0 .queue.: unknown key 'colour'; accepted for queue: kind, capacity, sample_ratio"),
    ([QUEUE, dict(UNIFORM, distance='ln_norm')], "unknown key 'distance'; accepted for uniform"),
    ([QUEUE, dict(QUEUE)], r'replays \[0, 1\] are all queues'),
    ([dict(QUEUE, capacity=0, sample_ratio=1.0)],
     r'replay 0 .queue.: capacity = 0; accepted: an int >= 1'),
    ([dict(QUEUE, capacity=2.5, sample_ratio=1.0)], 'capacity = 2.5; accepted: an int'),
    ([{'kind': 'uniform', 'sample_ratio': 1.0}], 'replay 0 .uniform.: capacity is missing'),
    ([QUEUE, {'kind': 'elite', 'capacity': 10, 'sample_ratio': 0.5, 'distance': 'l3'}],
     "replay 1 .elite.: distance = 'l3'; accepted: one of 'ln_norm', 'cosine', 'kl'"),
    ([QUEUE, {'kind': 'elite', 'capacity': 10, 'sample_ratio': 0.5, 'strategy': 5}],
     'replay 1 .elite.: strategy = 5; accepted'),
    ([QUEUE, {'kind': 'elite', 'capacity': 10, 'sample_ratio': 0.5,
              'lambda_batch_multiplier': 0.5}], 'lambda_batch_multiplier = 0.5; accepted'),
    ([], 'expected a non-empty list of replays'),
    ({'kind': 'queue'}, 'expected a non-empty list of replays'),
])
def test_bad_specs_are_refused_naming_the_value(items, match):
  with pytest.raises(ValueError, match=match):
    mixture_spec.parse_specs(items)


def test_shares_that_do_not_fit_are_refused():
  with pytest.raises(ValueError, match=r'replay 1 .uniform.: capacity 8 is below its share of '
                     r'every batch, 16 unrolls .sample_ratio 0.5 of 32.; accepted: a capacity '
                     r'>= 16'):
    mixture_spec.batch_shares(_specs(QUEUE, dict(UNIFORM, capacity=8)), 32)
  with pytest.raises(ValueError, match=r'sample_ratio 0.01 of a batch of 32 unrolls gives it '
                     'no unroll'):
    mixture_spec.batch_shares(_specs(dict(QUEUE, sample_ratio=0.99),
                                     dict(UNIFORM, sample_ratio=0.01)), 32)


def test_json_flag_takes_the_same_list_and_says_what_is_wrong():
  text = json.dumps([QUEUE, UNIFORM])
  assert mixture_spec.parse_json(text) == _specs(QUEUE, UNIFORM)
  with pytest.raises(ValueError, match=r'--replay_parameters=.* is not valid JSON'):
    mixture_spec.parse_json('[{"kind": "queue",}]')


def test_an_agent_is_refused_the_kinds_it_cannot_train_from():
  specs = _specs(QUEUE, {'kind': 'prioritized', 'capacity': 10, 'sample_ratio': 0.5})
  with pytest.raises(ValueError, match=r'replay 1 \(prioritized\): ppo cannot train from it '
                     r'.*; accepted for ppo: queue, uniform'):
    ReplayMixture(specs, 4, agent_name='ppo', accepted_kinds=('queue', 'uniform'))


def test_ranked_replays_need_an_agent_with_feature_vectors():
  specs = _specs(QUEUE, {'kind': 'elite', 'capacity': 10, 'sample_ratio': 0.5})
  with pytest.raises(ValueError, match=r'replay 1 \(elite\) ranks unrolls by the feature '
                     'vectors .* and ppo keeps none'):
    ReplayMixture(specs, 4, agent_name='ppo')


# ---- what batches are made of ----

def test_queue_alone_is_the_fifo_each_unroll_once_in_order():
  mixture = ReplayMixture(_specs(dict(QUEUE, sample_ratio=1.0)), 2)
  for number in range(4):
    assert mixture.put(_unroll(number))
  assert _numbers(mixture.sample(2)) == [0, 1]
  assert _numbers(mixture.sample(2)) == [2, 3]
  assert mixture.sample(2, timeout_s=0.05) is None
  assert not mixture.saves_anything


def test_queue_blocks_the_inserting_thread_while_full():
  mixture = ReplayMixture(_specs(dict(QUEUE, capacity=1, sample_ratio=1.0)), 2)
  mixture.put(_unroll(0))
  mixture.put(_unroll(1))
  third = threading.Thread(target=mixture.put, args=(_unroll(2),), daemon=True)
  third.start()
  third.join(0.3)
  assert third.is_alive()  # Capacity 1 batch of 2: the third waits for the trainer.
  assert _numbers(mixture.sample(2)) == [0, 1]
  third.join(2.0)
  assert not third.is_alive()


def test_queue_and_uniform_halves_with_ids_that_say_where_each_came_from():
  mixture = ReplayMixture(_specs(QUEUE, UNIFORM), 4)
  # Until the uniform replay holds its share (2), nothing enters the queue.
  mixture.put(_unroll(0))
  assert len(mixture.queue) == 0 and mixture.sample(4, timeout_s=0.05) is None
  for number in range(1, 5):
    mixture.put(_unroll(number))
  sample = mixture.sample(4)
  # The queue's share first (unrolls 1 and 2: the first to arrive after warm-up),
  # then two drawn uniformly from the five in the replay.
  assert _numbers(sample)[:2] == [1, 2]
  assert set(_numbers(sample)[2:]) <= {0, 1, 2, 3, 4}
  assert list(sample.ids[:2] >> ID_SHIFT) == [0, 0]
  assert list(sample.ids[2:] >> ID_SHIFT) == [1, 1]
  np.testing.assert_array_equal(sample.weights, np.ones(4, np.float32))
  # Behaviour outputs travel with each unroll: a replayed one keeps the logits it
  # was acted with.
  for number, logits in zip(_numbers(sample), sample.data.steps.policy_outputs['logits']):
    assert np.all(logits[:, 0] == number)


def test_priorities_go_to_the_prioritized_replay_and_its_weights_come_back():
  specs = _specs(dict(QUEUE, sample_ratio=0.25, capacity=10),
                 {'kind': 'uniform', 'capacity': 20, 'sample_ratio': 0.25},
                 {'kind': 'prioritized', 'capacity': 20, 'sample_ratio': 0.5,
                  'priority_exponent': 1.0, 'importance_exponent': 1.0})
  mixture = ReplayMixture(specs, 4)
  for number in range(6):
    mixture.put(_unroll(number))
  sample = mixture.sample(4)
  prioritized = mixture._replays[1][1].replay  # pylint: disable=protected-access
  uniform = mixture._replays[0][1].replay  # pylint: disable=protected-access
  # The batch's own ids (queue, uniform, prioritized) and all six of the prioritized
  # replay's: only the prioritized ones change anything.
  everyone = (2 << ID_SHIFT) | np.arange(6, dtype=np.int64)
  mixture.update_priorities(
      np.concatenate([sample.ids[:2], everyone]),
      np.concatenate([[7.0, 7.0], np.where(np.arange(6) == 5, 100.0, 1.0)]))
  np.testing.assert_array_equal(prioritized.priorities(np.arange(6)), [1, 1, 1, 1, 1, 100])
  np.testing.assert_array_equal(uniform.priorities(np.arange(6)), np.ones(6))
  counts = np.zeros(6)
  for _ in range(30):
    mixture.put(_unroll(0))
    batch = mixture.sample(4)
    for item_id, weight in zip(batch.ids[2:], batch.weights[2:]):
      number = int(item_id & ((1 << ID_SHIFT) - 1))
      if number < 6:
        counts[number] += 1
  # Later inserts join at the highest priority (100), like unroll 5.
  assert counts[5] > 4 * counts[:5].max()
  # (N P_i)^-1 normalised by the batch's max: a priority-100 unroll weighs 1/100 of a
  # priority-1 one when both are in the batch.
  weights = {}
  for _ in range(50):
    batch = mixture.sample(4) if len(mixture.queue) >= 1 else None
    mixture.put(_unroll(0))
    if batch is None:
      continue
    for item_id, weight in zip(batch.ids[2:], batch.weights[2:]):
      weights.setdefault(float(prioritized.priorities([item_id & ((1 << ID_SHIFT) - 1)])[0]),
                         set()).add(round(float(weight), 6))
  if 1.0 in weights and 100.0 in weights:
    assert weights[1.0] == {1.0} and weights[100.0] == {0.01}


def _ranked_mixture(kind, strategy=1, **extra):
  """A queue + a ranked replay whose 'network' moved by +10 on action 0 for unrolls
  numbered 10 and up: their distance is 10, everyone else's 0."""
  specs = _specs(dict(QUEUE, sample_ratio=0.5, capacity=100),
                 dict({'kind': kind, 'capacity': 40, 'sample_ratio': 0.5, 'strategy': strategy,
                       'lambda_batch_multiplier': 5, 'lambda_annealing_steps': 4}, **extra))

  def features(unrolls):
    logits = unrolls.steps.policy_outputs['logits'].astype(np.float64).copy()
    logits[unrolls.env_id >= 10, :, 0] += 10.0
    return logits

  return ReplayMixture(specs, 4, features=features, feature_output='logits',
                       agent_name='vtrace')


def test_elite_prefers_the_unrolls_the_policy_moved_least_from_then_anneals_to_uniform():
  mixture = _ranked_mixture('elite')
  ring = mixture._replays[0][1]  # pylint: disable=protected-access
  for number in range(20):  # 0-9 close, 10-19 far.
    mixture.put(_unroll(number))
  picked = []
  for step in range(4):
    assert ring.lambda_now() == pytest.approx(5 - step)  # 5, 4, 3, 2 ... then 1.
    picked += _numbers(mixture.sample(4))[2:]
    mixture.put(_unroll(20 + step))
    mixture.put(_unroll(30 + step))
  # With lambda >= 2 there are >= 4 candidates for 2 places: the close ones win
  # unless fewer than 2 close ones were drawn (rare; seeded).
  assert sum(number < 10 for number in picked) >= 6
  assert ring.lambda_now() == 1.0
  assert mixture.stats()['replay/1_elite/lambda'] == 1.0


def test_elite_strategy_3_spreads_picks_over_the_least_sampled():
  # Elite alone (no queue), all distances 0: only the sampling counts decide.
  specs = _specs({'kind': 'elite', 'capacity': 10, 'sample_ratio': 1.0, 'strategy': 3,
                  'lambda_batch_multiplier': 20, 'lambda_annealing_steps': 10_000})
  mixture = ReplayMixture(specs, 2, samples_per_insert=10.0, min_fill_unrolls=10,
                          features=_stored_logits, feature_output='logits')
  for number in range(10):
    mixture.put(_unroll(number))
  seen = []
  for _ in range(5):
    seen += _numbers(mixture.sample(2))
  # 40 candidates drawn from the 10 each time: the never-sampled come first, so five
  # samples of 2 cover all 10 (ranking by distance alone could repeat any).
  assert sorted(seen) == list(range(10))


def test_attentive_prefers_unrolls_near_what_the_actors_see_now():
  mixture = _ranked_mixture('attentive', reference_unrolls=2, lambda_annealing_steps=10_000)
  for number in range(12):
    mixture.put(_unroll(number))
  # The latest unrolls (10, 11) have features 20 and 21 on action 0: the nearest
  # stored ones are the far-moved 10-19, not the 0-9 (features 0-9).
  for _ in range(4):
    mixture.put(_unroll(15))
    mixture.put(_unroll(16))
  picked = []
  for _ in range(3):
    picked += _numbers(mixture.sample(4))[2:]
    mixture.put(_unroll(15))
    mixture.put(_unroll(16))
  assert all(number >= 10 for number in picked)


# ---- without a queue, checkpoints, prefetching ----

def test_without_a_queue_the_ratio_holds_both_sides_back():
  specs = _specs({'kind': 'uniform', 'capacity': 100, 'sample_ratio': 1.0})
  stop = threading.Event()
  mixture = ReplayMixture(specs, 2, stop, samples_per_insert=1.0, min_fill_unrolls=4)
  for number in range(3):
    mixture.put(_unroll(number))
  assert mixture.sample(2, timeout_s=0.05) is None  # Below the minimum fill.
  mixture.put(_unroll(3))
  assert mixture.sample(2) is not None
  # Samples may run ahead of inserts only by the limiter's slack: it stops them.
  drawn = sum(mixture.sample(2, timeout_s=0.05) is not None for _ in range(20))
  assert drawn < 20
  stop.set()


def test_save_restore_and_prune_keep_every_replay_and_the_elite_counts(tmp_path):
  specs = _specs(dict(QUEUE, sample_ratio=0.5, capacity=10),
                 {'kind': 'uniform', 'capacity': 30, 'sample_ratio': 0.25},
                 {'kind': 'elite', 'capacity': 30, 'sample_ratio': 0.25,
                  'lambda_batch_multiplier': 3})
  features = _stored_logits
  mixture = ReplayMixture(specs, 4, features=features, feature_output='logits')
  for number in range(8):
    mixture.put(_unroll(number))
  mixture.sample(4)
  path = str(tmp_path / 'ckpt-3')
  mixture.save(path)
  assert mixture.saves_anything
  assert sorted(os.listdir(tmp_path)) == ['ckpt-3.replay-1.npz', 'ckpt-3.replay-2.npz',
                                          'ckpt-3.replay-2.ranking.npz']
  again = ReplayMixture(specs, 4, features=features, feature_output='logits')
  assert again.restore(path)
  old_rings, new_rings = mixture._replays, again._replays  # pylint: disable=protected-access
  for (_, old), (_, new) in zip(old_rings, new_rings):
    assert len(new) == len(old) == 8
  np.testing.assert_array_equal(new_rings[1][1]._times_sampled, old_rings[1][1]._times_sampled)  # pylint: disable=protected-access
  assert new_rings[1][1].samples_drawn == 1
  ReplayMixture.prune(str(tmp_path), [str(tmp_path / 'ckpt-4')])
  assert os.listdir(tmp_path) == []


def test_prefetching_hands_over_prepared_batches_and_surfaces_a_failure():
  stop = threading.Event()
  mixture = ReplayMixture(_specs(dict(QUEUE, sample_ratio=1.0, capacity=4)), 2, stop)
  prefetcher = PrefetchingInput(mixture, 2, depth=2, stop_event=stop)
  for number in range(6):
    prefetcher.put(_unroll(number))
  deadline = time.monotonic() + 5
  while prefetcher.stats()['replay/prefetched_batches'] < 2 and time.monotonic() < deadline:
    time.sleep(0.01)
  assert _numbers(prefetcher.sample(2)) == [0, 1]
  assert _numbers(prefetcher.sample(2)) == [2, 3]
  stop.set()

  class Broken:
    def sample(self, batch_unrolls):
      raise OSError('disk gone')

  failing = PrefetchingInput(Broken(), 2, depth=1)
  with pytest.raises(RuntimeError, match='preparing batches failed'):
    for _ in range(20):
      failing.sample(2, timeout_s=0.05)


def test_a_restored_attentive_replay_samples_before_any_new_unroll(tmp_path):
  specs = _specs({'kind': 'attentive', 'capacity': 30, 'sample_ratio': 1.0,
                  'lambda_batch_multiplier': 3, 'reference_unrolls': 2})
  mixture = ReplayMixture(specs, 2, features=_stored_logits, feature_output='logits',
                          min_fill_unrolls=4)
  for number in range(6):
    mixture.put(_unroll(number))
  mixture.save(str(tmp_path / 'ckpt-1'))
  again = ReplayMixture(specs, 2, features=_stored_logits, feature_output='logits',
                        min_fill_unrolls=4)
  assert again.restore(str(tmp_path / 'ckpt-1'))
  # No unroll has arrived since the restore: the candidates are taken as drawn.
  assert len(_numbers(again.sample(2))) == 2
