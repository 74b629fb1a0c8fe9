"""The learner's gRPC server: one bidirectional stream per actor."""
import logging
import uuid
from typing import Optional

import grpc
from grpc import aio

from seed import protocol
from seed import security
from seed.envs.spec import EnvSpec
from seed.inference.batcher import Batcher
from seed.inference.env_state import EnvTable
from seed.inference.step_processor import StepRequest
from seed.proto import actor_learner_pb2 as pb
from seed.protocol import ProtocolError

_log = logging.getLogger(__name__)


class InferenceService:
  """Serves Learner.Act: hello, then one Step -> one Actions, until the actor leaves.

  Anything wrong with one actor's messages ends that actor's stream with a
  status naming the bad value; the other streams are not touched.
  """

  def __init__(self, env_name: str, env_spec: EnvSpec, env_table: EnvTable, batcher: Batcher,
               max_envs_per_actor: int, auth_token: Optional[str] = None):
    self._env_name = env_name
    self._spec = env_spec
    self._table = env_table
    self._batcher = batcher
    self._max_envs_per_actor = max_envs_per_actor
    self._auth_token = auth_token
    self.learner_id = uuid.uuid4().hex

  def rpc_handler(self) -> grpc.GenericRpcHandler:
    # Requests arrive as raw bytes so that undecodable ones get our own clear
    # INVALID_ARGUMENT instead of gRPC's generic deserialization failure.
    return grpc.method_handlers_generic_handler(protocol.SERVICE_NAME, {
        'Act': grpc.stream_stream_rpc_method_handler(
            self.act, request_deserializer=None,
            response_serializer=pb.LearnerMessage.SerializeToString)})

  async def act(self, request_iterator, context: aio.ServicerContext) -> None:
    del request_iterator  # We read with context.read(): lockstep request/response.
    hello = None
    try:
      first = await context.read()
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
      protocol.check_hello(hello, self._spec, self._env_name, self._max_envs_per_actor)
      slots = self._table.connect(hello.actor_id, hello.run_id, hello.num_envs,
                                  hello.split_index, hello.evaluation)
      _log.info('actor %d split %d connected (run %s, %d envs, peer %s)', hello.actor_id,
                hello.split_index, hello.run_id[:8], hello.num_envs, context.peer())
      try:
        await context.write(pb.LearnerMessage(welcome=pb.Welcome(
            protocol_version=protocol.PROTOCOL_VERSION, learner_id=self.learner_id)))
        await self._serve_steps(context, slots, hello.num_envs)
      finally:
        self._table.disconnect(hello.actor_id, hello.run_id, hello.split_index)
        _log.info('actor %d split %d disconnected (run %s)', hello.actor_id,
                  hello.split_index, hello.run_id[:8])
    except ProtocolError as e:
      who = f'actor {hello.actor_id}' if hello is not None else f'peer {context.peer()}'
      _log.warning('refused %s: %s', who, e)
      await context.abort(e.code, str(e))

  async def _serve_steps(self, context, slots, num_envs: int) -> None:
    while True:
      data = await context.read()
      if data is aio.EOF:
        return
      message = protocol.parse_actor_message(data)
      if message.WhichOneof('kind') != 'step':
        raise ProtocolError(grpc.StatusCode.FAILED_PRECONDITION,
                            f'got a {message.WhichOneof("kind") or "empty message"} '
                            'after the hello; expected a step')
      observations, rewards, terminated, truncated = protocol.decode_step(
          message.step, self._spec, num_envs)
      # A cancellation (the server stopping) propagates as it is: swallowing it
      # and awaiting an abort could keep server.stop() waiting for this handler.
      actions = await self._batcher.submit(
          StepRequest(slots, observations, rewards, terminated, truncated))
      # The learner checks what it sends: a policy bug must not reach the envs.
      protocol.check_actions(actions, self._spec, num_envs)
      await context.write(pb.LearnerMessage(actions=pb.Actions(
          actions=protocol.encode_tensor(actions))))

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
