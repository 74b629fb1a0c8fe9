"""The standard gRPC health service (grpc.health.v1) that Kubernetes probes.

The learner answers it on its main port (TLS, for tools that can verify) and,
with --health_port, on a plaintext port serving nothing else: Kubernetes'
native `grpc:` probes cannot speak TLS. Health needs no token; it tells only
SERVING or NOT_SERVING.
"""
import logging

from grpc import aio
from grpc_health.v1 import health
from grpc_health.v1 import health_pb2
from grpc_health.v1 import health_pb2_grpc

from seed import protocol

_log = logging.getLogger(__name__)
# '' is the whole server, as probes ask by default.
_SERVICES = ('', protocol.SERVICE_NAME)


class Health:
  """SERVING once the learner serves inference, NOT_SERVING from its shutdown on."""

  def __init__(self):
    self.servicer = health.aio.HealthServicer()

  def add_to(self, server: aio.Server) -> None:
    health_pb2_grpc.add_HealthServicer_to_server(self.servicer, server)

  async def serving(self) -> None:
    for service in _SERVICES:
      await self.servicer.set(service, health_pb2.HealthCheckResponse.SERVING)

  async def stopping(self) -> None:
    await self.servicer.enter_graceful_shutdown()


async def start_health_server(health_service: Health, host: str, port: int) -> aio.Server:
  """A plaintext server on host:port with only the health service."""
  server = aio.server()
  health_service.add_to(server)
  address = f'[{host}]:{port}' if ':' in host else f'{host}:{port}'
  if server.add_insecure_port(address) == 0:
    raise RuntimeError(f'could not listen on {address} for the health service')
  await server.start()
  _log.info('health service (plaintext, grpc.health.v1 only) on %s', address)
  return server
