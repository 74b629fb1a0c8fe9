"""Where the learner listens, TLS, the shared token, and what a failed connection means.

No TensorFlow here: actors import this module. Every file is read and checked
when a process starts, so a bad path or a malformed certificate stops it with
a message naming the file and what is expected, before anything is served.
"""
import hmac
import ipaddress
import os
import socket
import ssl
import string
from typing import List, Mapping, Optional, Tuple

import grpc

from seed import settings

_LOOPBACK_NAMES = {'localhost', 'ip6-localhost'}
# The token may come from the environment instead of a file (never from a flag:
# `ps` would show it).
TOKEN_VARIABLE = settings.PREFIX + 'AUTH_TOKEN'
# What gRPC metadata values may hold (printable ASCII, no spaces in our tokens).
_TOKEN_CHARACTERS = frozenset(string.ascii_letters + string.digits + string.punctuation)

# Both sides ping an idle-looking connection, so a peer that vanished across a
# network (host down, cable cut, no FIN) is noticed within
# keepalive_time + keepalive_timeout = 30 s.
KEEPALIVE_TIME_MS = 20_000
KEEPALIVE_TIMEOUT_MS = 10_000


def is_loopback(address: str) -> bool:
  host = split_host_port(address)[0]
  if host in _LOOPBACK_NAMES:
    return True
  try:
    return ipaddress.ip_address(host).is_loopback
  except ValueError:
    return False


def split_host_port(address: str) -> Tuple[str, str]:
  host, _, port = address.rpartition(':')
  return host.strip('[]'), port


def check_address(address: str, flag: str) -> None:
  """`address` must be host:port; the message names the flag and its variable."""
  host, port = split_host_port(address)
  if not host or not port.isdigit():
    raise ValueError(
        f'{flag}={address!r} (or {settings.variable_name(flag.lstrip("-"))}) is not '
        'host:port; expected e.g. localhost:8686, learner.example.org:8686 or 0.0.0.0:8686')


def check_listen_address(address: str, tls_cert_file: Optional[str],
                         auth_token: Optional[str]) -> None:
  """Listening beyond localhost needs both TLS and a shared token."""
  check_address(address, '--server_address')
  if not is_loopback(address) and not (tls_cert_file and auth_token):
    raise ValueError(
        f'refusing to listen on {address!r} without TLS and a shared token: pass '
        '--tls_cert_file, --tls_key_file and --auth_token_file (or set '
        f'{TOKEN_VARIABLE}), or listen on localhost')


def _read(path: str, flag: str) -> bytes:
  try:
    with open(path, 'rb') as f:
      return f.read()
  except OSError as e:
    raise ValueError(f'{flag}={path!r}: cannot read it ({e.strerror})') from None


def read_token(path: Optional[str],
               environ: Optional[Mapping[str, str]] = None) -> Optional[str]:
  """The shared token from `path`, else from SEED_AUTH_TOKEN; None if neither is set."""
  environ = os.environ if environ is None else environ
  if path:
    token, source = _read(path, '--auth_token_file').decode('utf-8', 'replace').strip(), path
  elif TOKEN_VARIABLE in environ:
    token, source = environ[TOKEN_VARIABLE].strip(), TOKEN_VARIABLE
  else:
    return None
  if not token:
    raise ValueError(f'the auth token in {source!r} is empty; expected a shared secret '
                     'such as `openssl rand -hex 32` writes')
  if not set(token) <= _TOKEN_CHARACTERS:
    raise ValueError(f'the auth token in {source!r} holds spaces or non-ASCII characters, '
                     'which cannot travel in gRPC metadata; expected printable ASCII such '
                     'as `openssl rand -hex 32` writes')
  return token


def authorization_metadata(token: str) -> Tuple[Tuple[str, str], ...]:
  return (('authorization', f'Bearer {token}'),)


def token_matches(metadata: Optional[Mapping[str, str]], token: str) -> bool:
  """Constant-time check of an `authorization: Bearer <token>` header."""
  presented = (metadata or {}).get('authorization', '')
  return hmac.compare_digest(presented.encode(), f'Bearer {token}'.encode())


def server_credentials(cert_file: Optional[str],
                       key_file: Optional[str]) -> Optional[grpc.ServerCredentials]:
  """TLS credentials from PEM files, checked to be a certificate and its key."""
  if not cert_file and not key_file:
    return None
  if not cert_file or not key_file:
    raise ValueError('TLS needs both --tls_cert_file and --tls_key_file; got only '
                     + ('--tls_cert_file' if cert_file else '--tls_key_file'))
  cert, key = _read(cert_file, '--tls_cert_file'), _read(key_file, '--tls_key_file')
  try:  # gRPC would only fail later, at bind, with a generic message.
    ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(cert_file, key_file)
  except (ssl.SSLError, ValueError) as e:
    raise ValueError(f'--tls_cert_file={cert_file!r} and --tls_key_file={key_file!r} are not '
                     f'a PEM certificate and its private key ({e})') from None
  return grpc.ssl_server_credentials([(key, cert)])


def channel_credentials(ca_file: Optional[str]) -> Optional[grpc.ChannelCredentials]:
  if not ca_file:
    return None
  ca = _read(ca_file, '--tls_ca_file')
  try:
    ssl.create_default_context(cadata=ca.decode('ascii', 'replace'))
  except (ssl.SSLError, ValueError) as e:
    raise ValueError(f'--tls_ca_file={ca_file!r} holds no PEM CA certificate ({e})') from None
  return grpc.ssl_channel_credentials(root_certificates=ca)


def channel_options(max_message_bytes: int) -> List[Tuple[str, int]]:
  """Actor-side channel options: message limits and keepalive."""
  return [('grpc.max_send_message_length', max_message_bytes),
          ('grpc.max_receive_message_length', max_message_bytes),
          ('grpc.keepalive_time_ms', KEEPALIVE_TIME_MS),
          ('grpc.keepalive_timeout_ms', KEEPALIVE_TIMEOUT_MS),
          ('grpc.http2.max_pings_without_data', 0)]


def server_options(max_message_bytes: int) -> List[Tuple[str, int]]:
  """Learner-side server options: message limits, keepalive, and the actors' pings."""
  return [('grpc.max_receive_message_length', max_message_bytes),
          ('grpc.max_send_message_length', max_message_bytes),
          ('grpc.so_reuseport', 0),
          ('grpc.keepalive_time_ms', KEEPALIVE_TIME_MS),
          ('grpc.keepalive_timeout_ms', KEEPALIVE_TIMEOUT_MS),
          # Accept the actors' pings (every KEEPALIVE_TIME_MS) without calling them abuse.
          ('grpc.http2.min_ping_interval_without_data_ms', KEEPALIVE_TIME_MS // 4),
          # Connections that never finish their handshake, or carry no call for
          # this long, are closed (an actor always has its stream open).
          ('grpc.server_handshake_timeout_ms', 30_000),
          ('grpc.max_connection_idle_ms', 300_000)]


def diagnose_connect_failure(address: str, details: str, tls: bool) -> Optional[str]:
  """What a failed connection says about our configuration, if anything.

  Returns a message for a mistake retrying cannot mend (TLS on one side only,
  a certificate from another CA or for another name); None for what may pass
  (a learner that is restarting refuses connections meanwhile).
  """
  if tls:
    if 'WRONG_VERSION_NUMBER' in details:
      return (f'the learner at {address} does not speak TLS (the TLS handshake got a '
              'plaintext answer): start it with --tls_cert_file/--tls_key_file, or connect '
              'without --tls_ca_file')
    if 'CERTIFICATE_VERIFY_FAILED' in details:
      return (f'the certificate of the learner at {address} is not signed by the CA in '
              '--tls_ca_file: pass the CA that signed the learner\'s --tls_cert_file')
    if 'Hostname Verification' in details or 'not in peer certificate' in details:
      return (f'the certificate of the learner at {address} is not valid for the name '
              f'{split_host_port(address)[0]!r}: dial a name the certificate lists (its '
              'subjectAltName), or make the certificate for this name')
    return None
  if 'Connection refused' in details or 'DNS resolution failed' in details:
    return None
  if _speaks_tls(address):
    return (f'the learner at {address} seems to speak TLS (it completed a TLS handshake) '
            'and this actor connects in plaintext: pass the learner\'s CA certificate with '
            '--tls_ca_file (and its token with --auth_token_file)')
  return None


def _speaks_tls(address: str, timeout_s: float = 3.0) -> bool:
  """Whether a TLS handshake with `address` succeeds (certificate not verified)."""
  host, port = split_host_port(address)
  context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
  context.check_hostname = False
  context.verify_mode = ssl.CERT_NONE
  context.set_alpn_protocols(['h2'])
  try:
    with socket.create_connection((host, int(port)), timeout=timeout_s) as raw:
      with context.wrap_socket(raw, server_hostname=host or None):
        return True
  except (OSError, ValueError):
    return False
