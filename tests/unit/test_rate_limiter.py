"""Tests for seed.inputs.rate_limiter."""
import threading
import time

import pytest

from seed.inputs.rate_limiter import SampleToInsertRatio
from seed.inputs.replay_input import ReplayInput

_SHORT_S = 0.02  # A wait that must time out.
_LONG_S = 5.0  # A wait that must be released long before this.


def _in_thread(fn):
  """Starts fn() in a thread; returns (thread, result dict filled when it ends)."""
  result = {}

  def run():
    start = time.monotonic()
    result['value'] = fn()
    result['elapsed_s'] = time.monotonic() - start

  thread = threading.Thread(target=run, daemon=True)
  thread.start()
  return thread, result


def _assert_blocked(thread):
  time.sleep(0.05)
  assert thread.is_alive()


def test_band_from_error_buffer():
  limiter = SampleToInsertRatio(samples_per_insert=4, min_size_to_sample=10, error_buffer=8)
  assert (limiter.min_diff, limiter.max_diff) == (32.0, 48.0)  # offset 40 +- 8.
  limiter = SampleToInsertRatio(2, 1, error_buffer=(-3, 7))
  assert (limiter.min_diff, limiter.max_diff) == (-3.0, 7.0)


def test_sampling_waits_for_min_size():
  limiter = SampleToInsertRatio(samples_per_insert=2, min_size_to_sample=3, error_buffer=4)
  for _ in range(2):
    assert limiter.await_insert(_SHORT_S)
    assert not limiter.await_sample(_SHORT_S)
  assert limiter.await_insert(_SHORT_S)
  assert limiter.await_sample(_SHORT_S)
  assert (limiter.inserts, limiter.samples) == (3, 1)


def test_filling_up_never_blocks_inserts():
  # Band [9, 11] around offset 10, but the first 10 inserts may always go ahead.
  limiter = SampleToInsertRatio(samples_per_insert=1, min_size_to_sample=10, error_buffer=1)
  for _ in range(11):  # The 11th: diff 11 <= max_diff 11.
    assert limiter.await_insert(_SHORT_S)
  assert not limiter.await_insert(_SHORT_S)  # diff would be 12.


def test_fast_sampler_waits_for_inserts():
  # offset 1, band [-1, 3].
  limiter = SampleToInsertRatio(samples_per_insert=1, min_size_to_sample=1, error_buffer=2)
  assert limiter.await_insert(_SHORT_S)
  assert limiter.await_sample(_SHORT_S) and limiter.await_sample(_SHORT_S)  # diff 1 -> -1.
  assert not limiter.await_sample(_SHORT_S)  # diff would be -2.
  thread, result = _in_thread(lambda: limiter.await_sample(_LONG_S))
  _assert_blocked(thread)
  assert limiter.await_insert(_SHORT_S)
  thread.join(_LONG_S)
  assert result['value'] and result['elapsed_s'] < 1.0
  assert limiter.diff == -1.0


def test_fast_inserter_waits_for_samples():
  limiter = SampleToInsertRatio(samples_per_insert=2, min_size_to_sample=2, error_buffer=3)
  # offset 4, band [1, 7]: inserts 1, 2 (fill), 3 -> diff 6; a 4th would make 8.
  for _ in range(3):
    assert limiter.await_insert(_SHORT_S)
  assert not limiter.await_insert(_SHORT_S)
  thread, result = _in_thread(lambda: limiter.await_insert(_LONG_S))
  _assert_blocked(thread)
  assert limiter.await_sample(_SHORT_S)  # diff 6 -> 5: an insert fits again (7).
  thread.join(_LONG_S)
  assert result['value'] and result['elapsed_s'] < 1.0
  assert (limiter.inserts, limiter.samples, limiter.diff) == (4, 1, 7.0)


def test_batched_samples_count_each_item():
  limiter = SampleToInsertRatio(samples_per_insert=1, min_size_to_sample=4, error_buffer=4)
  for _ in range(4):
    limiter.await_insert(_SHORT_S)
  assert limiter.await_sample(_SHORT_S, num_samples=4)  # diff 4 - 4 = 0 >= min_diff 0.
  assert not limiter.await_sample(_SHORT_S, num_samples=1)
  assert limiter.samples == 4


def test_stop_releases_every_waiter():
  sampler_side = SampleToInsertRatio(1, min_size_to_sample=5, error_buffer=2)
  inserter_side = SampleToInsertRatio(1, min_size_to_sample=1, error_buffer=2)
  while inserter_side.await_insert(0.0):
    pass
  waiters = [_in_thread(lambda: sampler_side.await_sample(None)),
             _in_thread(lambda: inserter_side.await_insert(None))]
  for thread, _ in waiters:
    _assert_blocked(thread)
  sampler_side.stop()
  inserter_side.stop()
  for thread, result in waiters:
    thread.join(_LONG_S)
    assert result['value'] is False and result['elapsed_s'] < 1.0
  # Once stopped, even an allowed operation is refused (and not counted).
  assert not sampler_side.await_insert(0.0) and sampler_side.inserts == 0


def test_external_stop_event_releases_waiters():
  stop = threading.Event()
  limiter = SampleToInsertRatio(1, min_size_to_sample=5, error_buffer=2, stop_event=stop)
  thread, result = _in_thread(lambda: limiter.await_sample(None))
  _assert_blocked(thread)
  stop.set()  # Not via stop(): noticed at the next poll.
  thread.join(_LONG_S)
  assert result['value'] is False and result['elapsed_s'] < 1.0


def test_racing_threads_keep_the_ratio_in_band():
  spi, batch = 4.0, 4
  limiter = SampleToInsertRatio(samples_per_insert=spi, min_size_to_sample=10, error_buffer=20)
  diffs = []

  def inserter():
    for _ in range(200):
      assert limiter.await_insert(_LONG_S)
      diffs.append((limiter.samples, limiter.diff))

  def sampler():
    while limiter.await_sample(0.2, num_samples=batch):
      diffs.append((limiter.samples, limiter.diff))

  threads = [threading.Thread(target=inserter), threading.Thread(target=sampler)]
  for thread in threads:
    thread.start()
  for thread in threads:
    thread.join(_LONG_S * 2)
  # Filling up climbs from 0 to offset 40; once sampling starts diff stays in [20, 60].
  assert max(diff for _, diff in diffs) <= limiter.max_diff
  assert min(diff for samples, diff in diffs if samples) >= limiter.min_diff
  # The sampler drained until one more batch would leave the band.
  assert limiter.min_diff <= limiter.diff < limiter.min_diff + batch
  assert limiter.samples == pytest.approx(200 * spi - limiter.diff)


def test_state_round_trip():
  limiter = SampleToInsertRatio(1, min_size_to_sample=2, error_buffer=2)
  for _ in range(3):
    limiter.await_insert(_SHORT_S)
  limiter.await_sample(_SHORT_S)
  resumed = SampleToInsertRatio(1, min_size_to_sample=2, error_buffer=2)
  resumed.load_state_dict(limiter.state_dict())
  assert (resumed.inserts, resumed.samples) == (3, 1)
  assert resumed.await_sample(_SHORT_S)  # No need to refill to min size after a resume.


@pytest.mark.parametrize('kwargs,pattern', [
    (dict(samples_per_insert=0, min_size_to_sample=1, error_buffer=2),
     r'samples_per_insert must be > 0, got 0'),
    (dict(samples_per_insert=1, min_size_to_sample=0, error_buffer=2),
     r'min_size_to_sample must be an int >= 1, got 0'),
    (dict(samples_per_insert=4, min_size_to_sample=1, error_buffer=2),
     r'error_buffer 2 gives a band \[2.0, 6.0\] narrower than samples_per_insert \+ 1'),
    (dict(samples_per_insert=1, min_size_to_sample=1, error_buffer=(1, 2, 3)),
     r'error_buffer must be a number or \(min_diff, max_diff\)'),
])
def test_bad_arguments_raise(kwargs, pattern):
  with pytest.raises(ValueError, match=pattern):
    SampleToInsertRatio(**kwargs)


def test_batch_too_big_for_band_raises():
  limiter = SampleToInsertRatio(samples_per_insert=1, min_size_to_sample=1, error_buffer=8)
  assert limiter.await_insert(_SHORT_S)
  with pytest.raises(ValueError, match=r'num_samples 16 does not fit the band'):
    limiter.await_sample(_SHORT_S, num_samples=16)
  with pytest.raises(ValueError, match=r'num_inserts must be >= 1, got 0'):
    limiter.await_insert(_SHORT_S, num_inserts=0)


@pytest.mark.parametrize('batch_size, samples_per_insert, inserts_ahead', [
    (64, 1.0, 128),      # R2D2 on Atari: unchanged, two batches.
    (32, 2.0, 64),       # R2D2 toy: unchanged.
    (256, 256.0, 512),   # SAC, one update per env step: 2 * 256 = 512 inserts.
    (5120, 5120.0, 514),  # SAC at updates_per_step 20: capped near 512, not 10,240.
])
def test_replay_input_slack_is_two_batches_capped_near_512_inserts(batch_size, samples_per_insert,
                                                                   inserts_ahead):
  replay = ReplayInput(batch_size, capacity_unrolls=2 * batch_size, min_fill_unrolls=batch_size,
                       samples_per_insert=samples_per_insert)
  limiter = replay.limiter
  offset = samples_per_insert * batch_size
  assert (limiter.max_diff - offset) / samples_per_insert == pytest.approx(inserts_ahead)
  # The band still admits a whole batch and an insert.
  assert limiter.max_diff - limiter.min_diff >= samples_per_insert + batch_size


def test_min_fill_below_the_batch_names_what_the_batch_is():
  with pytest.raises(ValueError, match=r'below the batch size 1024 .*updates_per_step \* '
                     r'minibatch_transitions'):
    ReplayInput(1024, min_fill_unrolls=1000)
