"""Launches real learner and actor processes for end-to-end tests, on this host or on
"hosts" made of network namespaces (netns_pair), with TLS files from make_certs."""
import contextlib
import dataclasses
import itertools
import os
import signal
import subprocess
import sys
import time
from typing import Iterator, List, Optional, Tuple

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LOG_TAIL_CHARS = 6000  # Of a log, in failure messages.


def _read_log(path: str, tail_chars: Optional[int]) -> str:
  with open(path) as f:
    text = f.read()
  return text if tail_chars is None else text[-tail_chars:]


_tracked: List[Tuple[subprocess.Popen, bool]] = []


def track(process: subprocess.Popen, *, group: bool = False) -> subprocess.Popen:
  """Kills `process` at the end of the current test if it still runs (conftest.py); with
  `group`, for a process started with start_new_session=True (e.g. ./run_local.sh), its
  whole process group: the learner and actors it started, even once it has exited."""
  _tracked.append((process, group))
  return process


def kill_tracked() -> None:
  while _tracked:
    process, group = _tracked.pop()
    if group:
      with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    elif process.poll() is None:
      process.kill()
    process.wait()


def _env():
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2', PYTHONUNBUFFERED='1')
  env['PYTHONPATH'] = REPO + os.pathsep + env.get('PYTHONPATH', '')
  return env


def actor_that_cannot_start(env_name: str) -> subprocess.CompletedProcess:
  """A real actor process for `env_name`, with no learner to reach: what it says when its
  env cannot be built (no TensorFlow, nothing else started)."""
  return subprocess.run(
      [sys.executable, '-m', 'seed.actors.main', f'--env={env_name}',
       '--server_address=localhost:1', '--num_envs=1'],
      capture_output=True, text=True, env=_env(), cwd=REPO, timeout=120)


class Run:
  """A learner on a free port plus its actors, all logging into the run directory.

  host: where the learner listens (port 0: a free one) and the actors dial.
  learner_prefix, actor_prefix: put before each command, e.g. netns_exec('A') to run
  it on another "host". actor_flags: given to every actor (e.g. Certs.actor_flags).
  """

  def __init__(self, logdir: str, gin_file: str, agent: str = 'vtrace',
               gin_bindings: Optional[List[str]] = None, learner_flags: Optional[List[str]] = None,
               host: str = 'localhost', learner_prefix: Optional[List[str]] = None,
               actor_prefix: Optional[List[str]] = None,
               actor_flags: Optional[List[str]] = None):
    self.logdir = str(logdir)
    self.gin_file = os.path.join(REPO, gin_file)
    self.gin_bindings = list(gin_bindings or [])
    self.agent = agent
    self.learner_flags = list(learner_flags or [])
    self.host = host
    self.learner_prefix = list(learner_prefix or [])
    self.actor_prefix = list(actor_prefix or [])
    self.actor_flags = list(actor_flags or [])
    self.learner: Optional[subprocess.Popen] = None
    self.actors: List[subprocess.Popen] = []
    os.makedirs(os.path.join(self.logdir, 'logs'), exist_ok=True)

  def _gin_flags(self):
    return [f'--gin_file={self.gin_file}'] + [f'--gin_bindings={b}' for b in self.gin_bindings]

  def start_learner(self, timeout_s: float = 120, extra_flags: Optional[List[str]] = None) -> int:
    port_file = os.path.join(self.logdir, 'port')
    if os.path.exists(port_file):
      os.remove(port_file)
    log = open(os.path.join(self.logdir, 'logs', 'learner.log'), 'a')
    self.learner = subprocess.Popen(
        self.learner_prefix
        + [sys.executable, '-m', 'seed.learner.main', f'--logdir={self.logdir}',
           f'--agent={self.agent}', f'--server_address={self.host}:0', '--progress_interval_s=2']
        + self._gin_flags() + self.learner_flags + list(extra_flags or []),
        stdout=log, stderr=subprocess.STDOUT, env=_env(), cwd=REPO)
    deadline = time.monotonic() + timeout_s
    while not os.path.exists(port_file):
      if self.learner.poll() is not None:
        raise RuntimeError(f'learner exited with {self.learner.returncode}:\n{self.learner_log()}')
      if time.monotonic() > deadline:
        raise TimeoutError(f'learner did not start within {timeout_s} s:\n{self.learner_log()}')
      time.sleep(0.2)
    with open(port_file) as f:
      self.port = int(f.read())
    return self.port

  def start_actors(self, num_actors: int, num_envs: int, first_id: int = 0,
                   extra_flags: Optional[List[str]] = None,
                   port: Optional[int] = None,
                   python: Optional[str] = None) -> List[subprocess.Popen]:
    """`python`: another interpreter for the actors (a venv of their own: Football)."""
    started = []
    for actor_id in range(first_id, first_id + num_actors):
      log = open(os.path.join(self.logdir, 'logs', f'actor_{actor_id}.log'), 'a')
      started.append(subprocess.Popen(
          self.actor_prefix
          + [python or sys.executable, '-m', 'seed.actors.main', f'--actor_id={actor_id}',
             f'--num_envs={num_envs}', f'--server_address={self.host}:{port or self.port}']
          + self._gin_flags() + self.actor_flags + list(extra_flags or []),
          stdout=log, stderr=subprocess.STDOUT, env=_env(), cwd=REPO))
    self.actors += started
    return started

  def wait_learner(self, timeout_s: float) -> int:
    try:
      return self.learner.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
      self.learner.send_signal(signal.SIGINT)
      self.learner.wait(timeout=60)
      raise

  def stop(self) -> None:
    for process in self.actors + [self.learner]:
      if process is not None and process.poll() is None:
        process.send_signal(signal.SIGTERM)
    for process in self.actors + [self.learner]:
      if process is not None:
        try:
          process.wait(timeout=60)
        except subprocess.TimeoutExpired:
          process.kill()

  def learner_log(self, tail_chars: Optional[int] = LOG_TAIL_CHARS) -> str:
    """The learner's log: its last `tail_chars` characters (enough for a failure message),
    or all of it (None) to look for a line of its start, which a slow run's progress lines
    push out of any tail."""
    return _read_log(os.path.join(self.logdir, 'logs', 'learner.log'), tail_chars)

  def actor_log(self, actor_id: int, tail_chars: Optional[int] = LOG_TAIL_CHARS) -> str:
    """Actor `actor_id`'s log, as learner_log."""
    return _read_log(os.path.join(self.logdir, 'logs', f'actor_{actor_id}.log'), tail_chars)

  def episodes(self):
    """[(env_frames, episode_return)] from episodes.csv."""
    with open(os.path.join(self.logdir, 'episodes.csv')) as f:
      next(f)
      return [(int(row.split(',')[0]), float(row.split(',')[1])) for row in f]

  def __enter__(self):
    return self

  def __exit__(self, *exc):
    self.stop()


@dataclasses.dataclass(frozen=True)
class Certs:
  """What scripts/make_certs.sh writes: a CA, the learner's certificate and a token."""
  directory: str

  def path(self, name: str) -> str:
    return os.path.join(self.directory, name)

  @property
  def learner_flags(self) -> List[str]:
    return [f'--tls_cert_file={self.path("tls.crt")}', f'--tls_key_file={self.path("tls.key")}',
            f'--auth_token_file={self.path("token")}']

  @property
  def actor_flags(self) -> List[str]:
    return [f'--tls_ca_file={self.path("ca.crt")}', f'--auth_token_file={self.path("token")}']


def make_certs(out_dir: str, *names: str) -> Certs:
  """TLS files for a learner reached as any of `names` (host names or IP addresses)."""
  subprocess.run([os.path.join(REPO, 'scripts', 'make_certs.sh'), str(out_dir), *names],
                 check=True, capture_output=True, text=True)
  return Certs(str(out_dir))


class NetnsUnavailable(RuntimeError):
  """This machine does not let us make network namespaces (not root, no iproute2, ...)."""


@dataclasses.dataclass(frozen=True)
class NetnsPair:
  """Two "hosts": network namespaces joined by a veth pair, a.address <-> b.address."""
  a: str
  b: str
  address_a: str
  address_b: str
  veth_a: str  # The interface in a, and its peer in b.
  veth_b: str


def netns_exec(namespace: str) -> List[str]:
  """The prefix that runs a command inside `namespace`."""
  return ['ip', 'netns', 'exec', namespace]


_netns_counter = itertools.count()


def _ip(*args: str) -> subprocess.CompletedProcess:
  return subprocess.run(['ip', *args], capture_output=True, text=True)


@contextlib.contextmanager
def netns_pair(subnet: int = 0) -> Iterator[NetnsPair]:
  """Two namespaces with a veth between them on 198.18.0.<4·subnet>/30 (the benchmarking
  range, never routed anywhere: nothing is added to this host's own namespace).

  Names are unique per process and call, so runs side by side do not meet. Everything
  made is deleted on exit, also when the body raises. Raises NetnsUnavailable where
  `ip netns add` is refused, with ip's reason.
  """
  if not 0 <= subnet < 64:
    raise ValueError(f'subnet {subnet} is outside 0..63 (198.18.0.0/24 in /30 blocks)')
  tag = f'{os.getpid()}x{next(_netns_counter)}'
  a, b = f'seed{tag}a', f'seed{tag}b'
  veth_a, veth_b = f'sv{tag}a', f'sv{tag}b'  # Interface names: 15 characters at most.
  address_a, address_b = f'198.18.0.{4 * subnet + 1}', f'198.18.0.{4 * subnet + 2}'
  made = []
  try:
    for namespace in (a, b):
      try:
        added = _ip('netns', 'add', namespace)
      except FileNotFoundError as e:
        raise NetnsUnavailable(f'iproute2 is not installed: {e}') from e
      if added.returncode != 0:
        raise NetnsUnavailable(f'`ip netns add` failed: {added.stderr.strip()}')
      made.append(namespace)
    steps = [('link', 'add', veth_a, 'type', 'veth', 'peer', 'name', veth_b),
             ('link', 'set', veth_a, 'netns', a), ('link', 'set', veth_b, 'netns', b),
             ('-n', a, 'addr', 'add', f'{address_a}/30', 'dev', veth_a),
             ('-n', b, 'addr', 'add', f'{address_b}/30', 'dev', veth_b),
             ('-n', a, 'link', 'set', veth_a, 'up'), ('-n', b, 'link', 'set', veth_b, 'up'),
             ('-n', a, 'link', 'set', 'lo', 'up'), ('-n', b, 'link', 'set', 'lo', 'up')]
    for step in steps:
      done = _ip(*step)
      if done.returncode != 0:
        raise RuntimeError(f'`ip {" ".join(step)}` failed: {done.stderr.strip()}')
    yield NetnsPair(a, b, address_a, address_b, veth_a, veth_b)
  finally:
    _ip('link', 'del', veth_a)  # Still here only if moving it failed; quiet otherwise.
    for namespace in made:  # Takes the veth pair with it.
      _ip('netns', 'del', namespace)


# What slurm/submit.sh and gcp/*.sh use on a laptop; not Slurm's commands, not gcloud.
LAPTOP_COMMANDS = ('bash', 'sh', 'env', 'dirname', 'basename', 'readlink', 'realpath', 'ls',
                   'cat', 'tr', 'sed', 'sort', 'awk', 'cut', 'head', 'tail', 'grep', 'git',
                   'mkdir', 'mktemp', 'rm', 'cp', 'mv', 'chmod', 'touch', 'date', 'id',
                   'sha1sum', 'uname', 'printf')


def laptop_path(directory: str) -> str:
  """A PATH of one folder, made in `directory`, holding the commands a laptop has
  (LAPTOP_COMMANDS) and this interpreter as python3: no sbatch or gcloud, whatever this
  machine has installed."""
  import shutil  # pylint: disable=g-import-not-at-top
  os.makedirs(directory, exist_ok=True)
  for name in LAPTOP_COMMANDS:
    found = shutil.which(name)
    if found:
      os.symlink(found, os.path.join(directory, name))
  os.symlink(os.path.realpath(sys.executable), os.path.join(directory, 'python3'))
  return directory
