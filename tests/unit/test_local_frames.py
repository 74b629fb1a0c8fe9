"""The Unix socket transport's framing (seed.transport.unix_socket): frames of any size, cut
anywhere by the socket, come out whole and in order, without the buffer growing past
what arrived; an actor's Step leaves in one write."""
import asyncio
import socket

import numpy as np
import pytest

from seed.transport import unix_socket as lt


def receive(stream: bytes, chunk_sizes, max_frame_bytes=1 << 24, initial_bytes=64):
  """Feeds `stream` through a _FrameReceiver as a socket would (recv_into its buffer, at
  most the next chunk size at a time); the frames it hands out, copied."""
  frames = []
  receiver = lt._FrameReceiver(max_frame_bytes, b'md', lambda tag, body: frames.append(
      (tag, bytes(body))), initial_bytes=initial_bytes)
  offset, sizes = 0, iter(chunk_sizes)
  while offset < len(stream):
    buffer = receiver.get_buffer()
    n = min(len(buffer), next(sizes), len(stream) - offset)
    buffer[:n] = stream[offset:offset + n]
    receiver.buffer_updated(n)
    offset += n
  return frames, receiver


@pytest.mark.parametrize('seed', range(5))
def test_frames_come_out_whole_however_the_socket_cuts_them(seed):
  rng = np.random.default_rng(seed)
  sent = [(b'd', rng.bytes(int(size))) for size in rng.choice([0, 1, 7, 100, 5000, 300_000],
                                                               size=40)]
  stream = b''.join(lt._frame(tag, body) for tag, body in sent)
  chunks = rng.integers(1, 200_000, size=len(stream))
  frames, receiver = receive(stream, chunks)
  assert frames == sent
  # Grown by doubling while one frame filled it: never beyond twice the longest frame.
  assert len(receiver._buffer) <= 2 * (300_000 + 5)


def test_a_header_alone_does_not_grow_the_buffer():
  receiver = lt._FrameReceiver(1 << 30, b'd', lambda *frame: None, initial_bytes=64)
  buffer = receiver.get_buffer()
  header = lt._HEADER.pack(1 << 29) + b'd'
  buffer[:len(header)] = header
  receiver.buffer_updated(len(header))
  assert len(receiver._buffer) == 64  # Claimed 512 MiB; holds what came.


@pytest.mark.parametrize('stream,error,message', [
    (lt._HEADER.pack(101) + b'd', lt.FrameTooLong, 'larger than max (100 vs. 99 bytes'),
    (lt._HEADER.pack(0), ValueError, 'an empty frame'),
    (lt._HEADER.pack(2) + b'zz', ValueError, "a frame tagged b'z'"),
])
def test_bad_frames_raise_naming_what_they_were(stream, error, message):
  with pytest.raises(error, match=message.replace('(', r'\(')):
    receive(stream, [len(stream)], max_frame_bytes=100)


def test_an_actors_step_is_in_the_socket_when_write_step_returns(tmp_path):
  """Nothing of a Step may wait in the transport's buffer: that tail would go out only
  when the actor's loop next runs, after its other split has stepped its envs, and the
  learner would wait for this Step meanwhile (split streams then stop overlapping)."""
  path = str(tmp_path / 'learner.sock')
  listener = socket.socket(socket.AF_UNIX)  # Never accepts: the Step stays in the kernel.
  listener.bind(path)
  listener.listen(1)

  async def unsent_bytes_after_a_step() -> int:
    async with lt.connect(path, (), max_message_bytes=1 << 24) as call:
      # 8 Pong envs, 226 KB: more than a socket's default send buffer (212,992 bytes), less
      # than what a stock kernel's net.core.wmem_max lets the actor ask for.
      observations = np.ones((8, 84, 84, 4), np.uint8)
      try:  # A Step that does not fit waits for a reader that never comes.
        await asyncio.wait_for(call.write_step(observations, np.zeros(8, np.float32),
                                               np.zeros(8, bool), np.zeros(8, bool)), 10)
      except asyncio.TimeoutError:
        pass
      return call._transport.get_write_buffer_size()

  try:
    assert asyncio.run(unsent_bytes_after_a_step()) == 0
  finally:
    listener.close()
