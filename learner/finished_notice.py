"""A learner started on a run that has already reached its goal: it tells actors so.

An actor stops only when a learner tells it the run finished (a Finished message). When
the run ended, the actors connected then were told; one that missed it (a pod
re-created by `kubectl apply`, one in back-off, a Slurm actor step started late) would
retry a learner that exits at once for ever. So a learner whose run directory's
finished.json covers its goal serves no model: for --finished_notice_s it listens where
a training learner would (the gRPC port with its TLS and token, the Unix socket, the
health port, SERVING so a Kubernetes Service routes to it), answers every actor's first
message with Finished, and then exits 0. TensorFlow is never loaded.
"""
import asyncio
import logging
import signal
from typing import Optional

import grpc
from grpc import aio

from seed import protocol
from seed.process import event_loop
from seed.transport import refusal_log, security
from seed.inference.health import Health, start_health_server
from seed.inference.server import start_server
from seed.transport.unix_socket import LocalServer
from seed.proto import actor_learner_pb2 as pb
from seed.run_dir.layout import RunDir

_log = logging.getLogger(__name__)


def reason(record: dict) -> str:
  """What a Finished message says, from finished.json's record."""
  goal = (f'mean return {record["mean_return"]:.2f} reached target_return='
          f'{record["target_return"]:g}' if record.get('target_return') is not None else
          f'max_env_frames={record["max_env_frames"]} reached')
  return f'the run had finished: {goal} at {record["env_frames"]} frames (finished.json)'


class FinishedNotice:
  """Answers Learner.Act on either transport with Finished(reason), after the token check."""

  def __init__(self, reason_text: str, auth_token: Optional[str], hello_timeout_s: float):
    self._reason = reason_text
    self._auth_token = auth_token
    self._hello_timeout_s = hello_timeout_s
    self.told = 0  # actors answered

  def rpc_handler(self) -> grpc.GenericRpcHandler:
    return grpc.method_handlers_generic_handler(protocol.SERVICE_NAME, {
        'Act': grpc.stream_stream_rpc_method_handler(
            self.act, request_deserializer=None,
            response_serializer=pb.LearnerMessage.SerializeToString)})

  async def act(self, request_iterator, context) -> None:
    del request_iterator  # Read with context.read(), as InferenceService does.
    try:
      async with asyncio.timeout(self._hello_timeout_s):
        first = await context.read()
    except (TimeoutError, protocol.ProtocolError):
      return  # Nothing to tell a stream that says nothing readable.
    if first is aio.EOF:
      return
    if self._auth_token is not None and not security.token_matches(
        dict(context.invocation_metadata() or ()), self._auth_token):
      refusal_log.REFUSALS.refused(context.peer(), 'the auth token is missing or wrong')
      await context.abort(grpc.StatusCode.UNAUTHENTICATED,
                          'the auth token is missing or wrong; pass the learner\'s shared '
                          'token with --auth_token_file (or SEED_AUTH_TOKEN)')
    await context.write(pb.LearnerMessage(finished=pb.Finished(reason=self._reason)))
    self.told += 1


def serve(options, record: dict, auth_token: Optional[str],
          credentials: Optional[grpc.ServerCredentials]) -> int:
  """Tells actors the run is over for options.finished_notice_s (a signal ends it
  sooner); returns the process exit code, 0: the run is finished."""
  if options.finished_notice_s <= 0:
    return 0
  notice = FinishedNotice(reason(record), auth_token, options.hello_timeout_s)
  event_loop.run(_serve(notice, options, credentials), options.event_loop)
  _log.info('told %d actor streams that the run had finished; exiting', notice.told)
  return 0


async def _serve(notice: FinishedNotice, options, credentials) -> None:
  loop = asyncio.get_running_loop()
  stop = asyncio.Event()
  for signum in (signal.SIGINT, signal.SIGTERM):
    loop.add_signal_handler(signum, stop.set)
  health = Health()
  server, port = await start_server(notice, options.server_address,
                                    options.max_message_mb << 20, credentials,
                                    extra_services=(health,))
  servers = [server]
  if options.local_socket:
    local_server = LocalServer(notice.act, options.max_message_mb << 20)
    await local_server.start(options.local_socket)
    servers.append(local_server)
  if options.health_port:
    host = security.split_host_port(options.server_address)[0]
    servers.append(await start_health_server(health, host, options.health_port))
  await health.serving()
  RunDir(options.logdir).write_port(port)
  _log.info('answering actors that the run had finished, for %.0f s (--finished_notice_s)',
            options.finished_notice_s)
  try:
    await asyncio.wait_for(stop.wait(), options.finished_notice_s)
  except asyncio.TimeoutError:
    pass
  await health.stopping()
  for stopping in [s.stop(grace=1.0) for s in servers]:
    await stopping
