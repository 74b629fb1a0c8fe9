"""Gathers env steps from all actor streams into batched policy calls."""
import asyncio
import concurrent.futures
import time
from typing import Callable, List, Sequence

from seed.inference.step_processor import StepRequest


class Batcher:
  """Runs inference once `max_batch_envs` envs wait, or `max_wait_ms` after the first.

  It also flushes as soon as every connected env is waiting: nobody else can
  arrive, so waiting longer would only add latency. Inference runs in one
  dedicated thread (TensorFlow releases the GIL while it computes), so the
  event loop keeps reading from streams while a batch is in flight.
  """

  def __init__(self, process: Callable[[Sequence[StepRequest]], List[object]],
               max_batch_envs: int, max_wait_ms: float,
               num_connected_envs: Callable[[], int]):
    self._process = process
    self._max_batch_envs = max_batch_envs
    self._max_wait_s = max_wait_ms / 1000.0
    self._num_connected_envs = num_connected_envs
    self._pending: List[tuple] = []  # (request, future, arrival time)
    self._pending_envs = 0
    self._wakeup = asyncio.Event()
    self._executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix='inference')
    self._task = None

  def start(self) -> None:
    self._task = asyncio.get_running_loop().create_task(self._run(), name='batcher')

  async def stop(self) -> None:
    if self._task is not None:
      self._task.cancel()
      try:
        await self._task
      except asyncio.CancelledError:
        pass
    for _, future, _ in self._pending:
      if not future.done():
        future.cancel()
    self._executor.shutdown(wait=True, cancel_futures=True)

  async def submit(self, request: StepRequest):
    """Waits for this request's slice of a batch's output."""
    future = asyncio.get_running_loop().create_future()
    self._pending.append((request, future, time.monotonic()))
    self._pending_envs += request.num_envs
    self._wakeup.set()
    return await future

  def _batch_ready(self) -> bool:
    return (self._pending_envs >= self._max_batch_envs or
            self._pending_envs >= self._num_connected_envs())

  async def _run(self) -> None:
    loop = asyncio.get_running_loop()
    while True:
      await self._wakeup.wait()
      self._wakeup.clear()
      if not self._pending:
        continue
      deadline = self._pending[0][2] + self._max_wait_s
      while not self._batch_ready():
        remaining = deadline - time.monotonic()
        if remaining <= 0:
          break
        try:
          await asyncio.wait_for(self._wakeup.wait(), remaining)
        except asyncio.TimeoutError:
          break
        self._wakeup.clear()
      batch = self._take_batch()
      if not batch:  # All were cancelled (their streams ended); serve whoever is left.
        if self._pending:
          self._wakeup.set()
        continue
      try:
        results = await loop.run_in_executor(self._executor, self._process,
                                             [r for r, _, _ in batch])
      except Exception as e:  # A failed batch fails its requests, not the server.
        for _, future, _ in batch:
          if not future.done():
            future.set_exception(e)
      else:
        for (_, future, _), result in zip(batch, results):
          if not future.done():
            future.set_result(result)
      if self._pending:
        self._wakeup.set()

  def _take_batch(self) -> List[tuple]:
    batch, envs = [], 0
    while self._pending:
      request = self._pending[0][0]
      if batch and envs + request.num_envs > self._max_batch_envs:
        break
      batch.append(self._pending.pop(0))
      envs += request.num_envs
    # Requests cancelled while waiting (their stream ended) are dropped here.
    live = [item for item in batch if not item[1].cancelled()]
    self._pending_envs -= envs
    return live
