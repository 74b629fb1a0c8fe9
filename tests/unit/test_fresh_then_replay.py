"""ACER's data schedule (seed.inputs.fresh_then_replay): each fresh batch, then a
Poisson number of replayed ones; warm-up, backpressure, checkpoints and bad input."""
import os
import threading

import numpy as np
import pytest

from seed.inputs.fresh_then_replay import FreshThenReplay, ReplaySchedule
from tests.unit.test_replay import make_unroll


def _unroll(number: int):
  return make_unroll(np.full((3, 2), number, np.float32), env_id=number)


def _numbers(sample):
  return [int(x) for x in sample.data.env_id]


def _input(replay_ratio=4.0, capacity=100, start=4, batch=2, **kwargs):
  return FreshThenReplay(batch, ReplaySchedule(replay_ratio, capacity, start), **kwargs)


def test_each_fresh_batch_is_followed_by_a_poisson_number_of_replayed_ones():
  schedule = _input(replay_ratio=4.0, start=2, batch=2, seed=5)
  fresh_seen, replayed_after = [], []
  number = 0
  for _ in range(400):
    # Keep two fresh unrolls waiting: the FIFO gives them in order, once each.
    while len(schedule.queue) < 2:
      schedule.put(_unroll(number))
      number += 1
    batch = schedule.sample(2)
    if schedule.fresh_batches > len(fresh_seen):
      fresh_seen.append(_numbers(batch))
      replayed_after.append(0)
    else:
      replayed_after[-1] += 1
      assert max(_numbers(batch)) < number  # replayed: something already stored
  flat = [n for batch in fresh_seen for n in batch]
  assert flat == list(range(len(flat)))  # fresh batches: every unroll once, in order
  counts = np.array(replayed_after[:-1])
  # Poisson(4): mean and variance both near 4 (seeded: these are exact for seed 5).
  assert 3.3 < counts.mean() < 4.7 and 2.5 < counts.var() < 6.0
  assert schedule.replayed_batches == sum(replayed_after)


def test_ratio_zero_is_on_policy_only():
  schedule = _input(replay_ratio=0.0, start=2)
  batches = []
  for first in range(0, 6, 2):  # the FIFO holds two batches: one in, one out
    schedule.put(_unroll(first))
    schedule.put(_unroll(first + 1))
    batches.append(_numbers(schedule.sample(2)))
  assert batches == [[0, 1], [2, 3], [4, 5]]
  assert schedule.replayed_batches == 0


def test_replays_due_before_the_replay_is_warm_are_skipped():
  schedule = _input(replay_ratio=50.0, start=6, batch=2, seed=1)
  for number in range(4):
    schedule.put(_unroll(number))
  # Only 2 and then 4 traces stored (< 6): every call takes a fresh batch.
  assert _numbers(schedule.sample(2)) == [0, 1]
  assert _numbers(schedule.sample(2)) == [2, 3]
  assert schedule.replayed_batches == 0
  assert schedule.sample(2, timeout_s=0.05) is None  # no fresh unroll left


def test_the_fifo_blocks_the_inserting_thread_while_full():
  stop = threading.Event()
  schedule = _input(replay_ratio=0.0, start=2, batch=2, stop_event=stop)
  for number in range(4):  # two batches fill it
    assert schedule.put(_unroll(number))
  blocked = threading.Thread(target=schedule.put, args=(_unroll(4),), daemon=True)
  blocked.start()
  blocked.join(0.3)
  assert blocked.is_alive()
  schedule.sample(2)
  blocked.join(2.0)
  assert not blocked.is_alive()
  stop.set()


def test_save_restore_and_prune(tmp_path):
  schedule = _input(start=2)
  for number in range(5):
    schedule.put(_unroll(number))
    if number == 3:
      schedule.sample(2)  # make room: the FIFO holds two batches
  path = str(tmp_path / 'ckpt-2')
  schedule.save(path)
  assert os.listdir(tmp_path) == ['ckpt-2.replay.npz']
  again = _input(start=2)
  assert again.restore(path)
  assert len(again.replay) == 5
  assert not _input().restore(str(tmp_path / 'ckpt-9'))
  FreshThenReplay.prune(str(tmp_path), [str(tmp_path / 'ckpt-3')])
  assert os.listdir(tmp_path) == []


@pytest.mark.parametrize('schedule,message', [
    (ReplaySchedule(-1.0, 10, 2), r'replay_ratio = -1.0; accepted: a number >= 0'),
    (ReplaySchedule(1.0, 3, 2), r'capacity_unrolls = 3; accepted: an int >= the batch \(4\)'),
    (ReplaySchedule(1.0, 10, 20), r'and >= replay_start_unrolls \(20\)'),
])
def test_bad_schedules_are_refused(schedule, message):
  with pytest.raises(ValueError, match=message):
    FreshThenReplay(4, schedule)
