"""The learner's gRPC server: one bidirectional stream per actor."""
import asyncio
import dataclasses
import itertools
import logging
import time
import uuid
from typing import Dict, Optional, Tuple

import grpc
from grpc import aio

from seed import protocol, settings
from seed.transport import refusal_log
from seed.transport import security
from seed.envs.spec import EnvSpec
from seed.inference.batcher import Batcher
from seed.inference.env_state import EnvTable
from seed.inference.step_processor import StepRequest
from seed.proto import actor_learner_pb2 as pb
from seed.protocol import ProtocolError

_log = logging.getLogger(__name__)


_DEFAULTS = {s.name: s.default for s in settings.LEARNER}


@dataclasses.dataclass(frozen=True)
class StreamLimits:
  """What one learner accepts from its actors: the learner settings of the same names
  (seed.settings.LEARNER: their meaning, defaults and checks)."""
  max_envs_per_actor: int = _DEFAULTS['inference_batch_size']  # one step fits a batch
  max_actor_streams: int = _DEFAULTS['max_actor_streams']
  hello_timeout_s: float = _DEFAULTS['hello_timeout_s']
  stream_idle_timeout_s: float = _DEFAULTS['stream_idle_timeout_s']
  max_abs_input: float = _DEFAULTS['max_abs_input']

  @classmethod
  def of(cls, flags) -> 'StreamLimits':
    """The limits a learner's checked flag values give; ValueError where one actor's
    envs could not fit one inference batch."""
    envs = flags.max_envs_per_actor or flags.inference_batch_size
    if envs > flags.inference_batch_size:
      raise ValueError(f'--max_envs_per_actor={flags.max_envs_per_actor}; expected 1 to '
                       f'--inference_batch_size={flags.inference_batch_size} (one actor\'s '
                       'step must fit one inference batch)')
    return cls(max_envs_per_actor=envs, max_actor_streams=flags.max_actor_streams,
               hello_timeout_s=flags.hello_timeout_s,
               stream_idle_timeout_s=flags.stream_idle_timeout_s,
               max_abs_input=flags.max_abs_input)


# A stream whose last step is older than this is not waited for by the batcher:
# an actor that stalled (or a client that says hello and then nothing) must not
# add --max_wait_ms to every batch of the others. An actor slower than this per
# step joins the next batch instead of being waited for.
ACTIVE_WINDOW_S = 0.1
# How long a stream refused past --max_actor_streams may take to send its hello.
REFUSED_HELLO_WAIT_S = 1.0
# What gRPC raises on a stream whose peer left or whose server is stopping.
_PEER_GONE = frozenset({'ExecuteBatchError', '_ServerStoppedError', 'UsageError'})


class InferenceService:
  """Serves Learner.Act: hello, then one Step -> one Actions, until the actor leaves.

  `act` serves one stream of either transport: gRPC's, or the Unix socket's for actors
  of this host (seed.transport.unix_socket), whose context offers what this class uses.

  Anything wrong with one actor's messages ends that actor's stream with a
  status naming the bad value; the other streams are not touched. A stream
  that sends no hello within `hello_timeout_s`, or no step within
  `stream_idle_timeout_s` of our last actions, is ended, so half-open and
  stalled clients do not hold slots forever. Once `finish` is called (the run
  reached its budget or target), every hello and every next step is answered with
  Finished and its stream ends: the actors stop instead of reconnecting.
  """

  def __init__(self, env_name: str, env_spec: EnvSpec, env_table: EnvTable, batcher: Batcher,
               limits: StreamLimits, auth_token: Optional[str] = None):
    self._env_name = env_name
    self._spec = env_spec
    self._table = env_table
    self._batcher = batcher
    self._limits = limits
    self._auth_token = auth_token
    self.learner_id = uuid.uuid4().hex
    # Touched from the event loop only (handlers and the batcher's checks).
    self._finished_reason: Optional[str] = None
    self._open_streams = 0
    self._stream_ids = itertools.count()
    self._last_step_s: Dict[int, Tuple[int, float]] = {}  # stream -> (num envs, monotonic s)

  @property
  def open_streams(self) -> int:
    return self._open_streams

  def finish(self, reason: str) -> None:
    """From now on, answer hellos and steps with Finished(reason); call on the loop."""
    self._finished_reason = reason

  async def _tell_finished(self, context) -> None:
    await self._write(context, pb.LearnerMessage(
        finished=pb.Finished(reason=self._finished_reason)))

  def active_envs(self) -> int:
    """Envs of streams that stepped within ACTIVE_WINDOW_S (what a batch may wait for)."""
    since = time.monotonic() - ACTIVE_WINDOW_S
    return sum(n for n, last in self._last_step_s.values() if last >= since)

  def rpc_handler(self) -> grpc.GenericRpcHandler:
    # Requests arrive as raw bytes so that undecodable ones get our own clear
    # INVALID_ARGUMENT instead of gRPC's generic deserialization failure.
    return grpc.method_handlers_generic_handler(protocol.SERVICE_NAME, {
        'Act': grpc.stream_stream_rpc_method_handler(
            self.act, request_deserializer=None,
            response_serializer=pb.LearnerMessage.SerializeToString)})

  async def act(self, request_iterator, context: aio.ServicerContext) -> None:
    del request_iterator  # We read with context.read(): lockstep request/response.
    if self._open_streams >= self._limits.max_actor_streams:
      refusal_log.REFUSALS.refused(context.peer(), f'{self._open_streams} streams are open '
                                   '(--max_actor_streams)')
      # Take its hello first (briefly): a status that crosses the client's first
      # write reaches it as INTERNAL 'Internal error from Core', losing ours.
      try:
        await asyncio.wait_for(context.read(), REFUSED_HELLO_WAIT_S)
      except Exception:  # pylint: disable=broad-except
        pass  # No hello, or the peer left: refused all the same.
      # UNAVAILABLE: an actor retries (with backoff) until a place is free.
      await context.abort(
          grpc.StatusCode.UNAVAILABLE,
          f'this learner already serves {self._open_streams} actor streams, its limit '
          '(--max_actor_streams); start the learner with a higher limit or fewer actors')
    self._open_streams += 1
    stream = next(self._stream_ids)
    try:
      await self._serve_stream(stream, context)
    finally:
      self._open_streams -= 1
      self._last_step_s.pop(stream, None)

  async def _serve_stream(self, stream: int, context: aio.ServicerContext) -> None:
    hello = None
    try:
      first = await self._read(context, self._limits.hello_timeout_s,
                               'no hello within {} s of opening the stream')
      if first is aio.EOF:
        return
      # After the first read, not before: an abort racing the actor's first write
      # reaches it as INTERNAL instead of this status.
      self._check_token(context)
      message = protocol.parse_actor_message(first)
      if message.WhichOneof('kind') != 'hello':
        raise ProtocolError(
            grpc.StatusCode.FAILED_PRECONDITION,
            f'first message is a {message.WhichOneof("kind") or "empty message"}; '
            'expected a hello (protocol version, actor id, run id, env name, specs)')
      hello = message.hello
      protocol.check_hello(hello, self._spec, self._env_name, self._limits.max_envs_per_actor)
      if self._finished_reason is not None:
        await self._tell_finished(context)
        return
      slots = self._table.connect(hello.actor_id, hello.run_id, hello.num_envs,
                                  hello.split_index, hello.evaluation)
      _log.info('actor %d split %d connected (run %s, %d envs, peer %s)', hello.actor_id,
                hello.split_index, hello.run_id[:8], hello.num_envs, context.peer())
      try:
        self._last_step_s[stream] = (hello.num_envs, time.monotonic())
        await self._write(context, pb.LearnerMessage(welcome=pb.Welcome(
            protocol_version=protocol.PROTOCOL_VERSION, learner_id=self.learner_id)))
        await self._serve_steps(stream, context, slots, hello.num_envs)
      finally:
        self._table.disconnect(hello.actor_id, hello.run_id, hello.split_index)
        _log.info('actor %d split %d disconnected (run %s)', hello.actor_id,
                  hello.split_index, hello.run_id[:8])
    except ProtocolError as e:
      who = f'actor {hello.actor_id}: ' if hello is not None else ''
      refusal_log.REFUSALS.refused(context.peer(), f'{who}{e}')  # at a bounded rate a peer
      await context.abort(e.code, str(e))
    except (asyncio.CancelledError, aio.AbortError):
      raise  # The server stopping, or an abort already under way.
    except Exception as e:  # pylint: disable=broad-except
      if context.done() or type(e).__name__ in _PEER_GONE:
        _log.info('stream of %s ended (%s)', context.peer(), type(e).__name__)
        return
      # A bug of ours met by one stream's input: that stream ends with what it
      # was, the learner and the other streams go on.
      _log.exception('internal error serving %s', context.peer())
      await context.abort(grpc.StatusCode.INTERNAL,
                          f'the learner failed on this stream\'s input: {type(e).__name__}: '
                          f'{protocol.shorten(str(e))}')

  async def _serve_steps(self, stream: int, context, slots, num_envs: int) -> None:
    while True:
      data = await self._read(context, self._limits.stream_idle_timeout_s,
                              'no step within {} s of the last actions')
      if data is aio.EOF:
        return
      if self._finished_reason is not None:
        await self._tell_finished(context)
        return
      self._last_step_s[stream] = (num_envs, time.monotonic())
      message = protocol.parse_actor_message(data)
      if message.WhichOneof('kind') != 'step':
        raise ProtocolError(grpc.StatusCode.FAILED_PRECONDITION,
                            f'got a {message.WhichOneof("kind") or "empty message"} '
                            'after the hello; expected a step')
      observations, rewards, terminated, truncated, life_lost = protocol.decode_step(
          message.step, self._spec, num_envs, self._limits.max_abs_input,
          data.observation_bytes if isinstance(data, protocol.RawObservationsStep) else None)
      # A cancellation (the server stopping) propagates as it is: swallowing it
      # and awaiting an abort could keep server.stop() waiting for this handler.
      actions = await self._batcher.submit(
          StepRequest(slots, observations, rewards, terminated, truncated, life_lost))
      # The learner checks what it sends: a policy bug must not reach the envs.
      protocol.check_actions(actions, self._spec, num_envs)
      await self._write(context, pb.LearnerMessage(actions=pb.Actions(
          actions=protocol.encode_tensor(actions))))

  async def _write(self, context, message: pb.LearnerMessage) -> None:
    """Sends `message`; a peer that does not take it within the idle timeout is ended."""
    timeout_s = self._limits.stream_idle_timeout_s
    try:
      # asyncio.timeout, not wait_for: wait_for makes a task per call, 15 µs a message.
      async with asyncio.timeout(timeout_s):
        await context.write(message)
    except TimeoutError:
      raise ProtocolError(grpc.StatusCode.DEADLINE_EXCEEDED,
                          f'our reply was not taken within {timeout_s:g} s: ending the '
                          'stream') from None

  @staticmethod
  async def _read(context, timeout_s: float, problem: str):
    """The next request's bytes (or aio.EOF); DEADLINE_EXCEEDED after `timeout_s`."""
    try:
      async with asyncio.timeout(timeout_s):
        return await context.read()
    except TimeoutError:
      raise ProtocolError(grpc.StatusCode.DEADLINE_EXCEEDED,
                          problem.format(f'{timeout_s:g}') + ': ending the stream') from None

  def _check_token(self, context) -> None:
    if self._auth_token is None:
      return
    if not security.token_matches(dict(context.invocation_metadata() or ()), self._auth_token):
      raise ProtocolError(grpc.StatusCode.UNAUTHENTICATED,
                          'the auth token is missing or wrong; pass the learner\'s shared '
                          'token with --auth_token_file (or SEED_AUTH_TOKEN)')


async def start_server(service: InferenceService, address: str, max_message_bytes: int,
                       credentials: Optional[grpc.ServerCredentials] = None,
                       extra_services=()):
  """Starts a grpc.aio server on `address` (host:port); returns (server, bound port).

  `extra_services`: objects with add_to(server), e.g. the health service.
  """
  server = aio.server(options=security.server_options(max_message_bytes))
  server.add_generic_rpc_handlers((service.rpc_handler(),))
  for extra in extra_services:
    extra.add_to(server)
  if credentials is None:
    port = server.add_insecure_port(address)
  else:
    port = server.add_secure_port(address, credentials)
  if port == 0:
    raise RuntimeError(f'could not listen on {address}')
  await server.start()
  _log.info('learner listening on %s (port %d%s)', address, port,
            ', TLS' if credentials is not None else '')
  return server, port
