"""Where the learner listens, TLS and the shared token (no TensorFlow here)."""
import ipaddress
from typing import Optional

import grpc

_LOOPBACK_NAMES = {'localhost', 'ip6-localhost'}


def is_loopback(address: str) -> bool:
  host = address.rsplit(':', 1)[0].strip('[]')
  if host in _LOOPBACK_NAMES:
    return True
  try:
    return ipaddress.ip_address(host).is_loopback
  except ValueError:
    return False


def check_listen_address(address: str, tls_cert_file: Optional[str],
                         auth_token_file: Optional[str]) -> None:
  """Listening beyond localhost needs both TLS and a shared token."""
  if ':' not in address:
    raise ValueError(f'server address {address!r} is not host:port (e.g. localhost:8686)')
  if not is_loopback(address) and not (tls_cert_file and auth_token_file):
    raise ValueError(
        f'refusing to listen on {address!r} without TLS and a shared token: pass '
        '--tls_cert_file, --tls_key_file and --auth_token_file, or listen on localhost')


def read_token(path: Optional[str]) -> Optional[str]:
  if not path:
    return None
  with open(path) as f:
    token = f.read().strip()
  if not token:
    raise ValueError(f'auth token file {path!r} is empty')
  return token


def server_credentials(cert_file: Optional[str],
                       key_file: Optional[str]) -> Optional[grpc.ServerCredentials]:
  if not cert_file:
    return None
  if not key_file:
    raise ValueError('--tls_cert_file needs --tls_key_file')
  with open(cert_file, 'rb') as f:
    cert = f.read()
  with open(key_file, 'rb') as f:
    key = f.read()
  return grpc.ssl_server_credentials([(key, cert)])


def channel_credentials(ca_file: Optional[str]) -> Optional[grpc.ChannelCredentials]:
  if not ca_file:
    return None
  with open(ca_file, 'rb') as f:
    return grpc.ssl_channel_credentials(root_certificates=f.read())
