"""A real inference server in a background thread, for tests (no TensorFlow)."""
import asyncio
import json
import os
import queue
import shutil
import socket
import tempfile
import threading

import grpc
import numpy as np

from seed.transport import unix_socket
from seed.transport import unix_address
from seed import protocol
from seed import types
from seed.learner.counters import Counters
from seed.envs.spec import EnvSpec
from seed.inference.batcher import Batcher
from seed.inference.env_state import EnvTable
from seed.inference.server import InferenceService, StreamLimits, start_server
from seed.inference.step_processor import StepProcessor
from seed.transport.unix_socket import LocalServer
from seed.proto import actor_learner_pb2 as pb
from seed.replay.fifo import UnrollFifo

CATCH_SPEC = EnvSpec((10, 5), 'float32', num_actions=3)


class CountingAgent:
  """A NumPy stand-in: its recurrent state counts steps since the episode start."""
  input_kind = 'fifo'
  unroll_length = 3
  unroll_overlap = 0
  batch_unrolls = 2
  trained_outputs = ('count',)  # 'square' is an output nobody trains on.

  def __init__(self, num_actions=3):
    self.num_actions = num_actions
    self.batch_shapes = []

  def initial_core_state(self, n):
    return (np.zeros((n,), np.int64),)

  def acting_params(self, env_ordinal, evaluation):
    del env_ordinal
    return types.ActingParams(epsilon=np.float32(0.0), evaluation=np.bool_(evaluation))

  def inference(self, observation, reward, done, core_state, acting):
    del acting
    self.batch_shapes.append(observation.shape[0])
    count = np.where(done, 0, core_state[0]) + 1
    action = (count % self.num_actions).astype(np.int32)
    return action, {'count': count.copy(), 'square': count * count}, (count,)

  def warm_up(self, batch_sizes):
    del batch_sizes

  def batched_policy(self, batch_size, device=None):
    del batch_size, device
    return self.inference


class BoxAgent(CountingAgent):
  """Continuous actions: `action_value` in every dimension (out of bounds if asked)."""

  def __init__(self, action_shape, action_value):
    super().__init__()
    self.action_shape, self.action_value = tuple(action_shape), action_value

  def inference(self, observation, reward, done, core_state, acting):
    _, outputs, state = super().inference(observation, reward, done, core_state, acting)
    action = np.full((observation.shape[0],) + self.action_shape, self.action_value, np.float32)
    return action, outputs, state


class ServerHarness:
  """Starts the service on 127.0.0.1:<free port> in its own event loop thread."""

  def __init__(self, spec=CATCH_SPEC, env_name='Catch', max_batch_envs=8, max_wait_ms=2.0,
               fifo_capacity=1000, max_message_bytes=1 << 20, auth_token=None, port=0,
               agent=None, credentials=None, extra_services=(), limits=None,
               transport='grpc'):
    self.agent = agent or CountingAgent(spec.num_actions or 1)
    self.counters = Counters()
    self.stop_event = threading.Event()
    self.fifo = UnrollFifo(fifo_capacity, stop_event=self.stop_event)
    self.episodes = []
    self.eval_episodes = []
    self.table = EnvTable(self.agent.initial_core_state, self.agent.acting_params,
                          self.agent.unroll_length)
    self.processor = StepProcessor(self.agent, max_batch_envs, 1, self.fifo.put,
                                   lambda r, n, evaluation, seed_index=0: (
                                       self.eval_episodes if evaluation else self.episodes
                                   ).append((r, n)),
                                   lambda stats: None, self.counters)
    self._spec, self._env_name = spec, env_name
    self._max_batch_envs, self._max_wait_ms = max_batch_envs, max_wait_ms
    self._max_message_bytes, self._auth_token = max_message_bytes, auth_token
    self._port = port
    self._credentials, self._extra_services = credentials, extra_services
    self._limits = limits or StreamLimits(max_envs_per_actor=max_batch_envs)
    if transport not in ('grpc', 'unix'):
      raise ValueError(f'transport {transport!r}; expected grpc or unix')
    self._transport = transport
    self._socket_dir = None
    self._loop = asyncio.new_event_loop()
    self._ready = threading.Event()
    self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

  def __enter__(self):
    self._thread.start()
    asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(timeout=10)
    return self

  async def _start(self):
    self.batcher = Batcher(self.processor, self._max_batch_envs, self._max_wait_ms,
                           lambda: self.service.active_envs())
    self.service = service = InferenceService(self._env_name, self._spec, self.table,
                                              self.batcher, self._limits,
                                              auth_token=self._auth_token)
    self.batcher.start()
    self.server, port = await start_server(service, f'127.0.0.1:{self._port}',
                                            self._max_message_bytes, self._credentials,
                                            self._extra_services)
    self.address = f'127.0.0.1:{port}'
    self.local_server = None
    if self._transport == 'unix':  # gRPC listens too; address names the Unix socket
      self._socket_dir = tempfile.mkdtemp(prefix='seed-sock-')
      self.local_server = LocalServer(service.act, self._max_message_bytes)
      await self.local_server.start(os.path.join(self._socket_dir, 'learner.sock'))
      self.address = unix_address.SCHEME + self.local_server.path

  def call(self, function):
    """Runs `function()` on the server's event loop (where the service lives); its result."""
    async def run():
      return function()
    return asyncio.run_coroutine_threadsafe(run(), self._loop).result(timeout=10)

  def __exit__(self, *exc):
    self.stop_event.set()

    async def stop():
      await self.server.stop(grace=0.5)
      if self.local_server is not None:
        await self.local_server.stop(grace=0.5)
      await self.batcher.stop()
    asyncio.run_coroutine_threadsafe(stop(), self._loop).result(timeout=10)
    self._loop.call_soon_threadsafe(self._loop.stop)
    self._thread.join(timeout=10)
    if self._socket_dir is not None:
      shutil.rmtree(self._socket_dir, ignore_errors=True)


def free_port() -> int:
  with socket.socket() as s:
    s.bind(('127.0.0.1', 0))
    return s.getsockname()[1]


def LockstepClient(address, metadata=None):  # pylint: disable=invalid-name
  """A synchronous raw-bytes client of either transport: send one message, read one
  reply; a refusal raises a grpc.RpcError with the status's code() and details()."""
  if unix_address.is_local_address(address):
    return LocalLockstepClient(unix_address.socket_path(address), metadata)
  return GrpcLockstepClient(address, metadata)


class LocalRpcError(grpc.RpcError):
  """The status a learner ended a Unix-socket stream with, as gRPC raises it."""

  def __init__(self, code, details):
    super().__init__(f'{code.name}: {details}')
    self._code, self._details = code, details

  def code(self):
    return self._code

  def details(self):
    return self._details


class _Replies:
  """What both lockstep clients share: replies (or the stream's error) queued by a
  reader thread into self._replies."""

  def recv(self, timeout=10.0):
    """The next reply; raises the stream's error, or queue.Empty after `timeout`."""
    outcome = self._replies.get(timeout=timeout)
    if isinstance(outcome, Exception):
      raise outcome
    return outcome


def raw_step_body(message: pb.ActorMessage, keep_data: bool = False) -> bytes:
  """A RAW_STEP frame's body for a step message: its observations' bytes moved out of the
  message to after it (left in the message too with `keep_data`)."""
  header = pb.ActorMessage()
  header.CopyFrom(message)
  if not keep_data:
    header.step.observations.data = b''
  header_bytes = header.SerializeToString()
  return (unix_socket._HEADER.pack(len(header_bytes)) + header_bytes  # pylint: disable=protected-access
          + message.step.observations.data)


class LocalLockstepClient(_Replies):
  """LockstepClient over the learner's Unix socket (seed.transport.unix_socket's frames)."""

  def __init__(self, path, metadata=None):
    self._socket = socket.socket(socket.AF_UNIX)
    self._socket.connect(path)
    self.send_frame(unix_socket.METADATA, json.dumps(dict(metadata or ())).encode())
    self._replies = queue.Queue()
    threading.Thread(target=self._read_all, daemon=True).start()

  def send_frame(self, tag, body=b''):
    try:
      self._socket.sendall(unix_socket._frame(tag, body))  # pylint: disable=protected-access
    except OSError:
      pass  # The learner has ended the stream: its status is there to read.

  def send(self, message):
    """Bytes as a DATA frame; a step as an actor of this host sends it (raw_step_body)."""
    if isinstance(message, pb.ActorMessage) and message.WhichOneof('kind') == 'step':
      self.send_frame(unix_socket.RAW_STEP, raw_step_body(message))
      return
    self.send_frame(unix_socket.DATA,
                    message if isinstance(message, bytes) else message.SerializeToString())

  def _read_all(self):
    reader = unix_socket._FrameReader(1 << 30, b'ds')  # pylint: disable=protected-access
    while True:
      try:
        data = self._socket.recv(1 << 16)
      except OSError:
        data = b''
      if not data:
        self._replies.put(LocalRpcError(grpc.StatusCode.UNAVAILABLE, 'connection closed'))
        return
      for tag, body in reader.feed(data):
        if tag == unix_socket.STATUS:
          status = json.loads(body)
          self._replies.put(LocalRpcError(grpc.StatusCode[status['code']], status['details']))
          return
        self._replies.put(pb.LearnerMessage.FromString(body))

  def close(self):
    try:
      self._socket.shutdown(socket.SHUT_RDWR)
    except OSError:
      pass
    self._socket.close()


class GrpcLockstepClient(_Replies):
  """A synchronous raw-bytes gRPC client: send one message, read one reply."""

  def __init__(self, address, metadata=None):
    self.channel = grpc.insecure_channel(address, options=[
        ('grpc.max_send_message_length', 64 << 20)])
    self._requests = queue.Queue()
    call = self.channel.stream_stream(protocol.ACT_METHOD, request_serializer=None,
                                      response_deserializer=pb.LearnerMessage.FromString)
    self._responses = call(iter(self._requests.get, None), metadata=metadata)
    self._replies = queue.Queue()
    threading.Thread(target=self._read_all, daemon=True).start()

  def send(self, message):
    self._requests.put(message if isinstance(message, bytes) else message.SerializeToString())

  def _read_all(self):
    try:
      for reply in self._responses:
        self._replies.put(reply)
      self._replies.put(StopIteration())
    except Exception as e:  # pylint: disable=broad-except
      self._replies.put(e)

  def close(self):
    self._requests.put(None)
    self.channel.close()


def hello(spec=CATCH_SPEC, actor_id=0, run_id='run-a', num_envs=2, env_name='Catch', **kw):
  return protocol.make_hello(spec, actor_id=actor_id, run_id=run_id, num_envs=num_envs,
                             env_name=env_name, **kw)


def step(num_envs=2, shape=(10, 5), dtype=np.float32, rewards=None, terminated=None,
         truncated=None, life_lost=()):
  return protocol.make_step(np.zeros((num_envs,) + shape, dtype),
                            rewards if rewards is not None else [0.0] * num_envs,
                            terminated if terminated is not None else [False] * num_envs,
                            truncated if truncated is not None else [False] * num_envs,
                            life_lost)
