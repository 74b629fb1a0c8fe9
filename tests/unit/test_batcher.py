"""The batcher on its own: cancelled requests never stall the ones behind them; with
several lanes (inference devices) batches run at once, one a lane."""
import asyncio
import threading
import types

import numpy as np
import pytest

from seed.inference.batcher import Batcher


def request(num_envs):
  return types.SimpleNamespace(num_envs=num_envs)


def test_a_cancelled_request_filling_a_batch_does_not_stall_the_next():
  served = []

  def process(requests, lane):
    assert lane == 0
    served.append([r.num_envs for r in requests])
    return [np.zeros(r.num_envs) for r in requests]

  async def scenario():
    batcher = Batcher(process, max_batch_envs=4, max_wait_ms=10_000,
                      num_connected_envs=lambda: 8)
    batcher.start()
    doomed = asyncio.ensure_future(batcher.submit(request(4)))
    survivor = asyncio.ensure_future(batcher.submit(request(4)))
    await asyncio.sleep(0)  # both queued; the first alone fills a batch ...
    doomed.cancel()         # ... but its stream ends before the batcher wakes
    result = await asyncio.wait_for(survivor, timeout=5)
    await batcher.stop()
    return result

  result = asyncio.run(scenario())
  assert result.shape == (4,) and served == [[4]]


def _two_lane_scenario(num_lanes):
  """Three batches of 4 envs each submitted at once; the process blocks until released.

  Returns ({lane: number of batches}, the most batches in flight at once)."""
  lanes, in_flight, most = {}, [0], [0]
  lock, release = threading.Lock(), threading.Event()

  def process(requests, lane):
    with lock:
      lanes[lane] = lanes.get(lane, 0) + 1
      in_flight[0] += 1
      most[0] = max(most[0], in_flight[0])
    release.wait(timeout=5)
    with lock:
      in_flight[0] -= 1
    return [np.full(r.num_envs, lane) for r in requests]

  async def scenario():
    batcher = Batcher(process, max_batch_envs=4, max_wait_ms=10_000,
                      num_connected_envs=lambda: 12, num_lanes=num_lanes)
    batcher.start()
    futures = [asyncio.ensure_future(batcher.submit(request(4))) for _ in range(3)]
    await asyncio.sleep(0.3)  # as many batches start as there are lanes
    release.set()
    results = await asyncio.wait_for(asyncio.gather(*futures), timeout=5)
    await batcher.stop()
    return results

  results = asyncio.run(scenario())
  assert all(r.shape == (4,) for r in results)
  return lanes, most[0]


def test_one_lane_runs_one_batch_at_a_time():
  lanes, most = _two_lane_scenario(1)
  assert lanes == {0: 3} and most == 1


def test_two_lanes_run_two_batches_at_once_one_on_each():
  lanes, most = _two_lane_scenario(2)
  assert most == 2 and set(lanes) == {0, 1} and sum(lanes.values()) == 3


def test_a_batcher_without_lanes_is_refused():
  with pytest.raises(ValueError, match='at least one inference lane'):
    Batcher(lambda requests, lane: [], 4, 1.0, lambda: 1, num_lanes=0)
