"""Gathers env steps from all actor streams into batched policy calls."""
import asyncio
import concurrent.futures
import time
from typing import Callable, List, Sequence, Set

from seed.inference.step_processor import StepRequest


class Batcher:
  """Runs inference once `max_batch_envs` envs wait, or `max_wait_ms` after the first.

  It also flushes as soon as every connected env is waiting: nobody else can
  arrive, so waiting longer would only add latency. Inference runs in threads of
  its own (TensorFlow releases the GIL while it computes), so the event loop keeps
  reading from streams while batches are in flight: one batch at a time on each of
  `num_lanes` lanes (one per inference device), called as `process(requests, lane)`.
  With one lane, what arrives while a batch is in flight makes the next batch.
  """

  def __init__(self, process: Callable[[Sequence[StepRequest], int], List[object]],
               max_batch_envs: int, max_wait_ms: float,
               num_connected_envs: Callable[[], int], num_lanes: int = 1):
    if num_lanes < 1:
      raise ValueError(f'the batcher needs at least one inference lane, got {num_lanes}')
    self._process = process
    self._max_batch_envs = max_batch_envs
    self._max_wait_s = max_wait_ms / 1000.0
    self._num_connected_envs = num_connected_envs
    self._num_lanes = num_lanes
    self._pending: List[tuple] = []  # (request, future, arrival time)
    self._pending_envs = 0
    self._wakeup = asyncio.Event()
    self._free_lanes: asyncio.Queue = asyncio.Queue()
    self._in_flight: Set[asyncio.Task] = set()
    self._executor = concurrent.futures.ThreadPoolExecutor(num_lanes,
                                                           thread_name_prefix='inference')
    self._task = None

  def start(self) -> None:
    for lane in range(self._num_lanes):
      self._free_lanes.put_nowait(lane)
    self._task = asyncio.get_running_loop().create_task(self._run(), name='batcher')

  async def stop(self) -> None:
    tasks = ([self._task] if self._task is not None else []) + list(self._in_flight)
    for task in tasks:
      task.cancel()
    for task in tasks:
      try:
        await task
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
      # With every lane busy, what arrives meanwhile joins this batch.
      lane = await self._free_lanes.get()
      batch = self._take_batch()
      if not batch:  # All were cancelled (their streams ended); serve whoever is left.
        self._free_lanes.put_nowait(lane)
        if self._pending:
          self._wakeup.set()
        continue
      task = loop.create_task(self._infer(batch, lane), name=f'inference lane {lane}')
      self._in_flight.add(task)
      task.add_done_callback(self._in_flight.discard)
      if self._pending:
        self._wakeup.set()

  async def _infer(self, batch: List[tuple], lane: int) -> None:
    try:
      results = await asyncio.get_running_loop().run_in_executor(
          self._executor, self._process, [r for r, _, _ in batch], lane)
    except Exception as e:  # A failed batch fails its requests, not the server.
      for _, future, _ in batch:
        if not future.done():
          future.set_exception(e)
    else:
      for (_, future, _), result in zip(batch, results):
        if not future.done():
          future.set_result(result)
    finally:
      self._free_lanes.put_nowait(lane)

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
