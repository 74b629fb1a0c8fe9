"""The batcher on its own: cancelled requests never stall the ones behind them."""
import asyncio
import types

import numpy as np

from seed.inference.batcher import Batcher


def request(num_envs):
  return types.SimpleNamespace(num_envs=num_envs)


def test_a_cancelled_request_filling_a_batch_does_not_stall_the_next():
  served = []

  def process(requests):
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
