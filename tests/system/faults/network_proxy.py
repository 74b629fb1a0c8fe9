"""A TCP proxy that makes the network between actors and learner misbehave.

Actors dial the proxy; it dials the learner and forwards bytes both ways, with:
  * latency: each chunk is held `delay_s` (± `jitter_s`, uniform) before it is sent on,
    in order (what netem's delay does; this kernel has no sch_netem);
  * a bandwidth cap, per direction and per connection (a token bucket, bytes/s);
  * resets: `reset_some(fraction)` closes that fraction of the open connections with an
    RST (SO_LINGER 0), as a NAT or a load balancer dropping state does;
  * a partition: `partition(seconds)` black-holes every connection (nothing forwarded,
    nothing closed: the peers find out only through their keepalives) and new
    connections hang, until it ends.
The faults change the transport only: TLS and gRPC run end to end through it, so what
arrives is what was sent, or nothing. Standard library only; runs its own event loop
in a thread, so tests and benchmarks drive it from plain code.
"""
import asyncio
import random
import socket
import struct
import threading
import time
from typing import List, Optional, Set

_CHUNK = 64 << 10


class FaultProxy:
  """Listens on (listen_host, port 0: any free one) and forwards to target."""

  def __init__(self, target_host: str, target_port: int, listen_host: str = '127.0.0.1',
               delay_s: float = 0.0, jitter_s: float = 0.0,
               bytes_per_s: Optional[float] = None, seed: int = 0):
    self.target = (target_host, target_port)
    self.listen_host = listen_host
    self.delay_s, self.jitter_s, self.bytes_per_s = delay_s, jitter_s, bytes_per_s
    self._random = random.Random(seed)
    self._loop = asyncio.new_event_loop()
    self._server: Optional[asyncio.AbstractServer] = None
    self._pairs: Set['_Pair'] = set()
    self._partitioned_until = 0.0
    self.connections = 0  # accepted so far
    self.resets = 0
    self.port = 0
    self._thread = threading.Thread(target=self._loop.run_forever, name='fault-proxy',
                                    daemon=True)

  # -- control, from any thread --------------------------------------------------------

  def start(self) -> 'FaultProxy':
    self._thread.start()
    self._server = self._call(asyncio.start_server(self._accept, self.listen_host, 0))
    self.port = self._server.sockets[0].getsockname()[1]
    return self

  def close(self) -> None:
    async def close():
      self._server.close()
      for pair in list(self._pairs):
        pair.close(reset=False)
    if self._thread.is_alive():
      self._call(close())
      self._loop.call_soon_threadsafe(self._loop.stop)
      self._thread.join(timeout=10)

  def set_faults(self, delay_s: float = 0.0, jitter_s: float = 0.0,
                 bytes_per_s: Optional[float] = None) -> None:
    """New latency and cap for what is forwarded from now on."""
    self.delay_s, self.jitter_s, self.bytes_per_s = delay_s, jitter_s, bytes_per_s

  def reset_some(self, fraction: float) -> int:
    """RSTs `fraction` of the open connections (at least one if any is open and
    fraction > 0); returns how many."""
    async def reset():
      pairs = sorted(self._pairs, key=id)
      count = min(len(pairs), max(1 if pairs and fraction > 0 else 0,
                                  round(fraction * len(pairs))))
      for pair in self._random.sample(pairs, count):
        pair.close(reset=True)
      self.resets += count
      return count
    return self._call(reset())

  def partition(self, seconds: float) -> None:
    """Black-holes all traffic for `seconds` from now."""
    self._partitioned_until = time.monotonic() + seconds

  @property
  def open_connections(self) -> int:
    return len(self._pairs)

  def __enter__(self):
    return self.start()

  def __exit__(self, *exc):
    self.close()

  def _call(self, coroutine):
    return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(timeout=30)

  # -- inside the loop -----------------------------------------------------------------

  async def _accept(self, reader, writer) -> None:
    await self._wait_partition()
    try:
      upstream_reader, upstream_writer = await asyncio.open_connection(*self.target)
    except OSError:
      _rst(writer)
      return
    self.connections += 1
    pair = _Pair(self, (reader, writer), (upstream_reader, upstream_writer))
    self._pairs.add(pair)
    await pair.run()
    self._pairs.discard(pair)

  async def _wait_partition(self) -> None:
    while time.monotonic() < self._partitioned_until:
      await asyncio.sleep(0.05)

  def delay(self) -> float:
    if not self.delay_s and not self.jitter_s:
      return 0.0
    return max(0.0, self.delay_s + self._random.uniform(-self.jitter_s, self.jitter_s))


class _Pair:
  """One actor connection and its connection to the learner."""

  def __init__(self, proxy: FaultProxy, client, upstream):
    self.proxy = proxy
    self.client, self.upstream = client, upstream
    self._tasks: List[asyncio.Task] = []

  async def run(self) -> None:
    self._tasks = [asyncio.ensure_future(self._pump(self.client[0], self.upstream[1])),
                   asyncio.ensure_future(self._pump(self.upstream[0], self.client[1]))]
    await asyncio.wait(self._tasks, return_when=asyncio.FIRST_COMPLETED)
    self.close(reset=False)

  async def _pump(self, reader, writer) -> None:
    # Chunks leave in order, each no earlier than its arrival + its delay.
    queue: asyncio.Queue = asyncio.Queue()

    async def send():
      allowance, last = 0.0, time.monotonic()
      while True:
        due, data = await queue.get()
        if data is None:
          break
        wait_s = due - time.monotonic()
        if wait_s > 0:
          await asyncio.sleep(wait_s)
        await self.proxy._wait_partition()  # pylint: disable=protected-access
        rate = self.proxy.bytes_per_s
        if rate:
          now = time.monotonic()
          allowance = min(rate, allowance + (now - last) * rate) - len(data)
          last = now
          if allowance < 0:
            await asyncio.sleep(-allowance / rate)
        writer.write(data)
        await writer.drain()

    sender = asyncio.ensure_future(send())
    try:
      while True:
        data = await reader.read(_CHUNK)
        if not data:
          break
        await self.proxy._wait_partition()  # pylint: disable=protected-access
        queue.put_nowait((time.monotonic() + self.proxy.delay(), data))
    except (ConnectionError, OSError):
      pass
    finally:
      queue.put_nowait((0.0, None))
      try:
        await sender
      except (ConnectionError, OSError):
        pass

  def close(self, reset: bool) -> None:
    for task in self._tasks:
      task.cancel()
    for _, writer in (self.client, self.upstream):
      if reset:
        _rst(writer)
      else:
        writer.close()


def _rst(writer) -> None:
  """Closes with an RST, not a FIN: the peer sees 'connection reset by peer'."""
  sock = writer.get_extra_info('socket')
  if sock is not None:
    try:
      sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack('ii', 1, 0))
    except OSError:
      pass
  writer.close()
