"""Gathers env steps from all actor streams into batched policy calls."""
import asyncio
import queue
import threading
import time
from typing import Callable, Dict, List, Optional, Sequence

from seed.process import thread_names
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
    # Each lane is a thread of its own that takes batches from its queue and hands the
    # results back with one call_soon_threadsafe: cheaper per batch than an executor's
    # futures, locks and wake-ups (run_in_executor), which the event loop pays.
    self._lane_queues = [queue.SimpleQueue() for _ in range(num_lanes)]
    self._lane_threads = [threading.Thread(target=self._lane_loop, args=(lane,), daemon=True,
                                           name=f'inference_{lane}')
                          for lane in range(num_lanes)]
    self._in_flight: Dict[int, List[tuple]] = {}  # lane -> its batch
    self._loop: Optional[asyncio.AbstractEventLoop] = None
    self._task = None

  def start(self) -> None:
    self._loop = asyncio.get_running_loop()
    for lane in range(self._num_lanes):
      self._free_lanes.put_nowait(lane)
      self._lane_threads[lane].start()
    self._task = self._loop.create_task(self._run(), name='batcher')

  async def stop(self) -> None:
    if self._task is not None:
      self._task.cancel()
      try:
        await self._task
      except asyncio.CancelledError:
        pass
    for lane_queue in self._lane_queues:
      lane_queue.put(None)
    for thread in self._lane_threads:  # A batch in flight finishes first.
      if thread.is_alive():
        await self._loop.run_in_executor(None, thread.join)
    for batch in list(self._in_flight.values()) + [self._pending]:
      for _, future, _ in batch:
        if not future.done():
          future.cancel()

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
      self._in_flight[lane] = batch
      self._lane_queues[lane].put(batch)
      if self._pending:
        self._wakeup.set()

  def _lane_loop(self, lane: int) -> None:
    """A lane's thread: runs each batch it is given until it is given None."""
    thread_names.name_this_thread(f'seed_infer_{lane}')
    while True:
      batch = self._lane_queues[lane].get()
      if batch is None:
        return
      try:
        outcome = (self._process([r for r, _, _ in batch], lane), None)
      except Exception as e:  # pylint: disable=broad-except
        outcome = (None, e)  # A failed batch fails its requests, not the server.
      try:
        self._loop.call_soon_threadsafe(self._deliver, lane, batch, outcome)
      except RuntimeError:
        return  # The loop is closed: nobody waits for these results any more.

  def _deliver(self, lane: int, batch: List[tuple], outcome) -> None:
    """On the loop: a lane's results to their requests; the lane is free again."""
    results, error = outcome
    self._in_flight.pop(lane, None)
    for i, (_, future, _) in enumerate(batch):
      if not future.done():
        if error is not None:
          future.set_exception(error)
        else:
          future.set_result(results[i])
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
