"""unix:PATH addresses: where a learner of this host serves its actors over a Unix socket
(seed.transport.unix_socket), checked before anything starts. Plain strings, no imports of
seed's: the launcher, the actor and the learner all read them."""
import os
from typing import Optional

SCHEME = 'unix:'
# sockaddr_un's sun_path holds 108 bytes with the terminating NUL.
MAX_PATH_BYTES = 107


def is_local_address(address: str) -> bool:
  return address.startswith(SCHEME)


def socket_path(address: str) -> str:
  return address[len(SCHEME):]


def fits(path: str) -> bool:
  """Whether `path` is short enough for a Unix socket."""
  return len(os.fsencode(path)) <= MAX_PATH_BYTES


def check_path(path: str, flag: str) -> None:
  """A socket path must be absolute and fit sockaddr_un; the message names the flag."""
  if not path or not os.path.isabs(path):
    raise ValueError(f'{flag}={path!r}: expected an absolute path for the Unix socket, '
                     'e.g. /tmp/seed-learner.sock')
  if not fits(path):
    raise ValueError(f'{flag}={path!r} is {len(os.fsencode(path))} bytes long; a Unix '
                     f'socket path holds at most {MAX_PATH_BYTES}: choose a shorter one')


def check_actor_address(address: str, tls_ca_file: Optional[str]) -> None:
  """An actor's unix:PATH --server_address: a path that fits, and no TLS asked for."""
  check_path(socket_path(address), f'--server_address={SCHEME}')
  if tls_ca_file:
    raise ValueError(f'--server_address={address!r} is a Unix socket of this host, which '
                     'has no TLS: drop --tls_ca_file, or connect to the learner\'s host:port')
