"""The learner's second transport, for actors on its own host: the same Act stream (the
same protobuf messages, hello first, then one Step -> one Actions) over a Unix socket.

Why: gRPC's asyncio server costs the learner about 0.18 ms of CPU per message
(docs/performance.md), a large part of what one learner spends per actor step once its
model runs on an accelerator; asyncio on a Unix socket moves the same bytes for about
0.012 ms (an echo of one 4-env Pong step). Across hosts gRPC stays (TLS, tokens, proxies).

Frames, both ways: a 4-byte little-endian length, then that many bytes: one tag byte
and the body.

  actor -> learner   b'm' metadata (JSON object of strings: the authorization
                          header gRPC would carry), first and only once
                     b'd' an ActorMessage
                     b'o' a step with its observations beside the message: a 4-byte
                          little-endian length, that many bytes of ActorMessage whose
                          step's observations name only dtype and shape, then the
                          observations' bytes (C order). The actor's steps travel so:
                          building and serializing a protobuf copy of a 16-env Pong
                          step cost the actor about 0.75 ms (four copies of 450 KB,
                          each into fresh pages); this frame costs it a few µs
                     b'e' no more messages (gRPC's done_writing)
  learner -> actor   b'd' a LearnerMessage
                     b's' the stream's status (JSON: code name, details), then the
                          learner closes the connection, as gRPC's trailers end a call

The learner's side offers the stream as the small part of gRPC's ServicerContext the
InferenceService uses (read, write, abort, peer, done, invocation_metadata), so one
handler serves both transports and a bad message gets the same status either way.
The actor's side offers what Actor uses of a gRPC call (write, read, code, details,
done_writing) and raises grpc.aio.AioRpcError as a gRPC call does. No TLS: the socket
file is the owner's only (mode 0600), and the learner's token is still checked.
"""
import asyncio
import collections
import contextlib
import json
import logging
import os
import socket
import stat
import struct
from typing import Awaitable, Callable, Optional, Sequence, Tuple, Union

import grpc
from grpc import aio
import numpy as np

from seed import protocol
from seed.transport import refusal_log
from seed.proto import actor_learner_pb2 as pb
from seed.transport.unix_address import SCHEME, check_path

_log = logging.getLogger(__name__)

_HEADER = struct.Struct('<I')
METADATA, DATA, RAW_STEP, END, STATUS = b'm', b'd', b'o', b'e', b's'
# Frames read ahead of the handler before the socket stops being read: the protocol is
# lockstep, so an actor that sends more than this is not waiting for our actions.
_MAX_QUEUED_FRAMES = 4
# The metadata frame's largest body: gRPC's default limit on a call's metadata
# (grpc.max_metadata_size). An authorization header needs a few hundred bytes.
MAX_METADATA_BYTES = 8192


def _frame(tag: bytes, body: bytes = b'') -> bytes:
  return _HEADER.pack(len(body) + 1) + tag + body


def _status_body(code: grpc.StatusCode, details: str) -> bytes:
  return json.dumps({'code': code.name, 'details': details}).encode()


class FrameTooLong(ValueError):
  """A frame's length is over the limit (gRPC's RESOURCE_EXHAUSTED)."""


class _FrameReader:
  """Splits a byte stream into (tag, body) frames; a frame longer than the limit raises
  FrameTooLong, an empty one or a tag outside `tags` ValueError, naming what it was.
  For the actor's side, whose frames (actions) are small."""

  def __init__(self, max_frame_bytes: int, tags: bytes):
    self._buffer = bytearray()
    self._max_frame_bytes = max_frame_bytes
    self._tags = tags

  def feed(self, data: bytes):
    self._buffer += data
    frames = []
    while len(self._buffer) >= _HEADER.size:
      (length,) = _HEADER.unpack_from(self._buffer)
      _check_frame_length(length, self._max_frame_bytes)
      end = _HEADER.size + length
      if len(self._buffer) < end:
        break
      tag = bytes(self._buffer[_HEADER.size:_HEADER.size + 1])
      if tag not in self._tags:
        raise ValueError(_bad_tag(tag, self._tags))
      frames.append((tag, bytes(self._buffer[_HEADER.size + 1:end])))
      del self._buffer[:end]
    return frames


class _FrameReceiver:
  """Frames received straight into one buffer (asyncio.BufferedProtocol's get_buffer and
  buffer_updated), each handed to `on_frame(tag, body)` as a view on that buffer, valid
  until on_frame returns: between the socket and the protobuf parser a frame is never
  copied. (Copies of the observations were most of the learner's CPU per message here:
  a 4-env Pong step is 113 KB, arriving cold in cache.) The buffer doubles while one
  frame fills it, up to the frame limit."""

  def __init__(self, max_frame_bytes: int, tags: bytes,
               on_frame: Callable[[bytes, memoryview], None], initial_bytes: int = 1 << 18):
    self._max_frame_bytes = max_frame_bytes
    self._tags = tags
    self._on_frame = on_frame
    self._buffer = bytearray(initial_bytes)
    self._view = memoryview(self._buffer)
    self._start = 0  # the first byte not yet handed out
    self._end = 0    # the first byte not yet received

  def get_buffer(self) -> memoryview:
    if self._end == len(self._buffer):
      # Full of one partial frame: grow, as the bytes arrive (never to a size a header
      # merely claims); else move the partial frame to the front.
      size = (min(2 * len(self._buffer), _HEADER.size + self._max_frame_bytes)
              if self._start == 0 else len(self._buffer))
      unread = bytes(self._view[self._start:self._end])
      if size != len(self._buffer):
        self._view.release()
        self._buffer = bytearray(size)
        self._view = memoryview(self._buffer)
      self._buffer[:len(unread)] = unread
      self._start, self._end = 0, len(unread)
    return self._view[self._end:]

  def buffer_updated(self, nbytes: int) -> None:
    """Hands out the frames now complete; raises FrameTooLong or ValueError on a bad one."""
    self._end += nbytes
    while self._end - self._start >= _HEADER.size:
      (length,) = _HEADER.unpack_from(self._buffer, self._start)
      _check_frame_length(length, self._max_frame_bytes)
      body_start = self._start + _HEADER.size
      if body_start + length <= self._end:
        tag = bytes(self._view[body_start:body_start + 1])
        if tag not in self._tags:
          raise ValueError(_bad_tag(tag, self._tags))
        self._start = body_start + length
        self._on_frame(tag, self._view[body_start + 1:self._start])
      else:
        break  # The rest of this frame is on its way.
    if self._start == self._end:
      self._start = self._end = 0


def _check_frame_length(length: int, max_frame_bytes: int) -> None:
  if length > max_frame_bytes:
    # Worded as gRPC words it, so that either transport's refusal reads the same.
    raise FrameTooLong(f'received message larger than max ({length - 1} vs. '
                       f'{max_frame_bytes - 1} bytes; --max_message_mb)')
  if length == 0:
    raise ValueError('an empty frame; expected a tag byte and a message')


def _bad_tag(tag: bytes, tags: bytes) -> str:
  return (f'a frame tagged {tag!r}; expected one of '
          f'{", ".join(repr(bytes([t])) for t in tags)}')


class _Writable(asyncio.BaseProtocol):
  """Flow control for writes: `drained()` waits while the socket's buffer is full."""

  def __init__(self):
    self._transport: Optional[asyncio.Transport] = None
    self._paused = False
    self._drain_waiter: Optional[asyncio.Future] = None
    self._lost = False

  def pause_writing(self) -> None:
    self._paused = True

  def resume_writing(self) -> None:
    self._paused = False
    self._wake_drain()

  def _wake_drain(self) -> None:
    if self._drain_waiter is not None and not self._drain_waiter.done():
      self._drain_waiter.set_result(None)
    self._drain_waiter = None

  async def drained(self) -> None:
    if self._paused and not self._lost:
      self._drain_waiter = asyncio.get_running_loop().create_future()
      await self._drain_waiter


# --- the learner's side -----------------------------------------------------------


class LocalStreamContext(_Writable, asyncio.BufferedProtocol):
  """One actor's connection, as the learner's handler sees a gRPC stream. Its messages
  are parsed where they land (_FrameReceiver): read() returns an ActorMessage, where
  gRPC's returns bytes (protocol.parse_actor_message takes either)."""

  def __init__(self, start_handler: Callable[['LocalStreamContext'], Awaitable[None]],
               max_message_bytes: int, on_close: Callable[['LocalStreamContext'], None]):
    super().__init__()
    self._start_handler = start_handler
    self._on_close = on_close
    self._receiver = _FrameReceiver(max_message_bytes + 1, METADATA + DATA + RAW_STEP + END,
                                    self._take)
    self._frames: collections.deque = collections.deque()  # ActorMessage or ProtocolError
    self._read_waiter: Optional[asyncio.Future] = None
    self._metadata: Optional[Tuple[Tuple[str, str], ...]] = None
    self._ended = False  # the actor sent END or left: reads return EOF once drained
    self._closed = False
    self._reading_paused = False
    self._peer = 'unix:?'
    self.handler: Optional[asyncio.Task] = None

  # asyncio.Protocol

  def connection_made(self, transport: asyncio.Transport) -> None:
    self._transport = transport
    sock = transport.get_extra_info('socket')
    try:
      pid, uid, _ = struct.unpack('3i', sock.getsockopt(
          socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize('3i')))
      self._peer = f'unix:pid {pid} uid {uid}'
    except (OSError, AttributeError):
      pass

  def get_buffer(self, sizehint: int) -> memoryview:
    del sizehint
    return self._receiver.get_buffer()

  def buffer_updated(self, nbytes: int) -> None:
    if self._closed:
      return
    try:
      self._receiver.buffer_updated(nbytes)
    except FrameTooLong as e:
      self._refuse(grpc.StatusCode.RESOURCE_EXHAUSTED, str(e))
      return
    except ValueError as e:
      self._refuse(grpc.StatusCode.INVALID_ARGUMENT, f'bad frame: {e}')
      return
    if len(self._frames) > _MAX_QUEUED_FRAMES and not self._reading_paused:
      self._reading_paused = True
      self._transport.pause_reading()
    self._wake_reader()

  def eof_received(self) -> bool:
    self._ended = True
    self._wake_reader()
    return True  # Keep our side open: the handler may still write its status.

  def connection_lost(self, exc: Optional[Exception]) -> None:
    self._lost = True
    self._ended = True
    self._closed = True
    self._wake_reader()
    self._wake_drain()
    self._on_close(self)

  def _take(self, tag: bytes, body: memoryview) -> None:
    """One frame, a view valid during this call only."""
    if self._metadata is None:
      if tag != METADATA:
        raise ValueError(f'a frame tagged {tag!r} first; expected the metadata frame {METADATA!r}')
      if len(body) > MAX_METADATA_BYTES:
        raise FrameTooLong(f'a metadata frame of {len(body)} bytes; expected at most '
                           f'{MAX_METADATA_BYTES} (gRPC\'s limit on a call\'s metadata)')
      try:
        pairs = json.loads(bytes(body))
        if not (isinstance(pairs, dict) and
                all(isinstance(k, str) and isinstance(v, str) for k, v in pairs.items())):
          raise ValueError
      except (ValueError, RecursionError):  # RecursionError: arrays nested thousands deep
        raise ValueError('a metadata frame that is not a JSON object of strings') from None
      self._metadata = tuple(pairs.items())
      self.handler = asyncio.get_running_loop().create_task(self._start_handler(self))
    elif tag == METADATA:
      raise ValueError(f'a second metadata frame tagged {METADATA!r}; it comes once, first')
    elif tag == END:
      self._ended = True
    else:
      try:
        self._frames.append(protocol.parse_actor_message(body) if tag == DATA else
                            _parse_raw_step(body))
      except protocol.ProtocolError as e:
        self._frames.append(e)  # Raised by read(): the handler refuses it as gRPC's bytes.

  def _refuse(self, code: grpc.StatusCode, details: str) -> None:
    refusal_log.REFUSALS.refused(self._peer, details)
    self.send_status(code, details)

  def _wake_reader(self) -> None:
    if self._read_waiter is not None and not self._read_waiter.done():
      self._read_waiter.set_result(None)
    self._read_waiter = None

  def send_status(self, code: grpc.StatusCode, details: str) -> None:
    if not self._closed:
      self._closed = True
      self._transport.write(_frame(STATUS, _status_body(code, details)))
      self._transport.close()

  # What InferenceService uses of grpc.aio.ServicerContext.

  async def read(self) -> pb.ActorMessage:
    """The next ActorMessage; aio.EOF once the actor is done or gone; ProtocolError for
    one that did not parse."""
    while not self._frames:
      if self._ended or self._closed:
        return aio.EOF
      self._read_waiter = asyncio.get_running_loop().create_future()
      await self._read_waiter
    if self._reading_paused and len(self._frames) <= 1:
      self._reading_paused = False
      self._transport.resume_reading()
    message = self._frames.popleft()
    if isinstance(message, protocol.ProtocolError):
      raise message
    return message

  async def write(self, message: pb.LearnerMessage) -> None:
    if self._closed:
      raise ConnectionResetError(f'{self._peer} has closed the connection')
    self._transport.write(_frame(DATA, message.SerializeToString()))
    await self.drained()

  async def abort(self, code: grpc.StatusCode, details: str = ''):
    self.send_status(code, details)
    raise aio.AbortError(details)

  def end(self) -> None:
    """The handler returned: OK, as a gRPC call's trailers say."""
    self.send_status(grpc.StatusCode.OK, '')

  def peer(self) -> str:
    return self._peer

  def done(self) -> bool:
    return self._closed

  def invocation_metadata(self) -> Tuple[Tuple[str, str], ...]:
    return self._metadata or ()


def _parse_raw_step(body: memoryview) -> protocol.RawObservationsStep:
  """A RAW_STEP frame's message and observations (copied out of the receive buffer, which
  the next frame reuses); ProtocolError naming what is wrong with it."""
  if len(body) < _HEADER.size:
    raise protocol.ProtocolError(
        grpc.StatusCode.INVALID_ARGUMENT,
        f'a raw step frame of {len(body)} bytes; expected a 4-byte length, a Step message '
        "and the observations' bytes")
  (message_bytes,) = _HEADER.unpack_from(body)
  if message_bytes > len(body) - _HEADER.size:
    raise protocol.ProtocolError(
        grpc.StatusCode.INVALID_ARGUMENT,
        f'a raw step frame declares a message of {message_bytes} bytes; only '
        f'{len(body) - _HEADER.size} follow')
  end = _HEADER.size + message_bytes
  message = protocol.parse_actor_message(body[_HEADER.size:end])
  if message.WhichOneof('kind') != 'step':
    raise protocol.ProtocolError(
        grpc.StatusCode.INVALID_ARGUMENT,
        f'a raw step frame holds a {message.WhichOneof("kind") or "empty message"}; it '
        f'carries steps only (other messages travel in {DATA!r} frames)')
  return protocol.RawObservationsStep(message, bytes(body[end:]))


class LocalServer:
  """Serves `handler(request_iterator, context)` (InferenceService.act) on a Unix socket."""

  def __init__(self, handler, max_message_bytes: int):
    self._handler = handler
    self._max_message_bytes = max_message_bytes
    self._server: Optional[asyncio.AbstractServer] = None
    self._streams = set()
    self.path = ''

  async def start(self, path: str) -> None:
    check_path(path, '--local_socket')
    remove_stale_socket(path)
    old_mask = os.umask(0o177)  # the socket file is born 0600: this user's actors only
    try:
      self._server = await asyncio.get_running_loop().create_unix_server(
          self._new_stream, path)
    finally:
      os.umask(old_mask)
    self.path = path
    _log.info('learner listening on %s%s (actors of this host)', SCHEME, path)

  def _new_stream(self) -> LocalStreamContext:
    stream = LocalStreamContext(self._serve, self._max_message_bytes, self._streams.discard)
    self._streams.add(stream)
    return stream

  async def _serve(self, stream: LocalStreamContext) -> None:
    try:
      await self._handler(None, stream)
      stream.end()
    except aio.AbortError:
      pass  # Its status is sent.
    except asyncio.CancelledError:
      stream.send_status(grpc.StatusCode.UNAVAILABLE, 'the learner is stopping')
      raise
    except Exception as e:  # pylint: disable=broad-except
      _log.exception('internal error serving %s', stream.peer())
      stream.send_status(grpc.StatusCode.INTERNAL, f'{type(e).__name__}: {e}')

  async def stop(self, grace: Optional[float] = None) -> None:
    """Stops listening; streams still open after `grace` seconds are cancelled."""
    if self._server is None:
      return
    self._server.close()
    handlers = [s.handler for s in list(self._streams) if s.handler is not None]
    if handlers and grace:
      await asyncio.wait(handlers, timeout=grace)
    for task in handlers:
      task.cancel()
    for task in handlers:
      try:
        await task
      except BaseException:  # pylint: disable=broad-except
        pass
    await self._server.wait_closed()
    try:
      os.unlink(self.path)
    except FileNotFoundError:
      pass


def remove_stale_socket(path: str) -> None:
  """Takes away a socket file a dead learner left; refuses one a live learner holds, and
  anything that is not a socket."""
  try:
    mode = os.lstat(path).st_mode
  except FileNotFoundError:
    return
  if not stat.S_ISSOCK(mode):
    raise ValueError(f'--local_socket={path!r} exists and is not a socket; choose another '
                     'path')
  probe = socket.socket(socket.AF_UNIX)
  try:
    probe.connect(path)
  except (ConnectionRefusedError, FileNotFoundError):
    os.unlink(path)  # Nobody listens: left by a learner that died.
    return
  finally:
    probe.close()
  raise ValueError(f'--local_socket={path!r}: another process listens on it (another '
                   'learner?); choose another path or stop it')


# --- the actor's side --------------------------------------------------------------


class LocalCall(_Writable, asyncio.Protocol):
  """An Act stream to a learner on this host, as Actor uses a grpc.aio call."""

  def __init__(self, max_message_bytes: int):
    super().__init__()
    self._reader = _FrameReader(max_message_bytes + 1, DATA + STATUS)
    self._replies: collections.deque = collections.deque()
    self._read_waiter: Optional[asyncio.Future] = None
    self._status: Optional[Tuple[grpc.StatusCode, str]] = None
    self._warned_unsent = False

  def connection_made(self, transport: asyncio.Transport) -> None:
    self._transport = transport

  def data_received(self, data: bytes) -> None:
    try:
      for tag, body in self._reader.feed(data):
        if self._status is not None:
          break
        if tag == STATUS:
          self._status = _parse_status(body)
        else:
          self._replies.append(body)
    except ValueError as e:
      self._status = (grpc.StatusCode.INTERNAL, f'the learner sent a bad frame: {e}')
      self._transport.close()
    self._wake()

  def connection_lost(self, exc: Optional[Exception]) -> None:
    self._lost = True
    if self._status is None:
      self._status = (grpc.StatusCode.UNAVAILABLE,
                      'the learner closed the connection' + (f' ({exc})' if exc else ''))
    self._wake()
    self._wake_drain()

  def _wake(self) -> None:
    if self._read_waiter is not None and not self._read_waiter.done():
      self._read_waiter.set_result(None)
    self._read_waiter = None

  def _error(self) -> aio.AioRpcError:
    code, details = self._status
    return aio.AioRpcError(code, None, None, details=details)

  async def write(self, message: Union[bytes, pb.ActorMessage]) -> None:
    """Sends an ActorMessage (or its bytes, serialized once by a bench)."""
    if self._status is not None or self._lost:
      raise self._error() if self._status else asyncio.InvalidStateError('stream closed')
    body = message if isinstance(message, bytes) else message.SerializeToString()
    self._transport.write(_frame(DATA, body))
    await self.drained()

  async def write_step(self, observations: np.ndarray, rewards, terminated,
                       truncated, life_lost=()) -> None:
    """Sends a Step as a RAW_STEP frame: its observations' bytes beside the message, as they
    lie in `observations` (no protobuf copy of them)."""
    if self._status is not None or self._lost:
      raise self._error() if self._status else asyncio.InvalidStateError('stream closed')
    observations = np.ascontiguousarray(observations)
    message = protocol.make_step_header(observations, rewards, terminated,
                                        truncated, life_lost).SerializeToString()
    self._transport.writelines([
        _HEADER.pack(1 + _HEADER.size + len(message) + observations.nbytes) + RAW_STEP
        + _HEADER.pack(len(message)) + message,
        memoryview(observations.reshape(-1)).cast('B')])
    if not self._warned_unsent and self._transport.get_write_buffer_size():
      self._warned_unsent = True
      sock = self._transport.get_extra_info('socket')
      _log.warning(
          'a Step of %d bytes did not fit in the socket (its send buffer: %d bytes): the '
          'rest waits for this actor\'s loop, and its splits overlap less. Raise '
          'net.core.wmem_max (sysctl) above the Step, or use fewer envs a split.',
          observations.nbytes, sock.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF))
    await self.drained()

  async def read(self, raw: bool = False):
    """The next LearnerMessage (its bytes if `raw`); aio.EOF once the stream has ended."""
    while not self._replies:
      if self._status is not None:
        return aio.EOF
      self._read_waiter = asyncio.get_running_loop().create_future()
      await self._read_waiter
    body = self._replies.popleft()
    return body if raw else pb.LearnerMessage.FromString(body)

  async def code(self) -> grpc.StatusCode:
    return self._status[0] if self._status else grpc.StatusCode.UNKNOWN

  async def details(self) -> str:
    return self._status[1] if self._status else ''

  async def done_writing(self) -> None:
    if self._status is None and not self._lost:
      self._transport.write(_frame(END))



def _parse_status(body: bytes) -> Tuple[grpc.StatusCode, str]:
  try:
    status = json.loads(body)
    return grpc.StatusCode[status['code']], str(status['details'])
  except (ValueError, KeyError, TypeError):
    return grpc.StatusCode.INTERNAL, f'the learner sent a bad status: {body[:100]!r}'


@contextlib.asynccontextmanager
async def connect(path: str, metadata: Optional[Sequence[Tuple[str, str]]],
                  max_message_bytes: int):
  """`async with connect(...) as call:` an Act stream to the learner listening on the
  Unix socket `path`; grpc.aio.AioRpcError(UNAVAILABLE) when none does."""
  try:
    transport, call = await asyncio.get_running_loop().create_unix_connection(
        lambda: LocalCall(max_message_bytes), path)
  except OSError as e:
    raise aio.AioRpcError(grpc.StatusCode.UNAVAILABLE, None, None,
                          details=f'cannot connect to {SCHEME}{path}: '
                                  f'{e.strerror or e}') from None
  # A Step's bytes should fit in the socket at once: a tail left in the transport's buffer
  # is written only when the loop next runs, after the actor's other split has stepped its
  # envs, and the learner waits for this split's Step all that time (gRPC's own thread
  # sends the tail meanwhile). The kernel caps the size at net.core.wmem_max.
  transport.get_extra_info('socket').setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF,
                                                max_message_bytes)
  try:
    transport.write(_frame(METADATA, json.dumps(dict(metadata or ())).encode()))
    yield call
  finally:
    transport.close()
