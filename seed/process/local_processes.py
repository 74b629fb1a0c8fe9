"""Starting a learner and its actors as separate processes, as run_local.sh does.

Used by seed train (local_run), the Python API, the experiment runner and its suites, the
benchmarks (bench/) and, for the command lines, seed-job.
"""
import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

from seed.transport import unix_address
from seed.run_dir.layout import RunDir

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The two processes' entry points (learner/main.py, actors/main.py).
LEARNER_MAIN = 'seed.learner.main'
ACTOR_MAIN = 'seed.actors.main'


def child_env() -> Dict[str, str]:
  """This environment, unbuffered output, the repo importable, and TensorFlow's start-up
  chatter left out unless TF_CPP_MIN_LOG_LEVEL says otherwise."""
  env = dict(os.environ, PYTHONUNBUFFERED='1')
  env.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
  env['PYTHONPATH'] = REPO + os.pathsep + env.get('PYTHONPATH', '')
  return env


def learner_command(flags: Sequence[str]) -> List[str]:
  return [sys.executable, '-m', LEARNER_MAIN, *flags]


def actor_command(flags: Sequence[str], python: str = sys.executable) -> List[str]:
  """An actor's command line; `python`: the interpreter (Football's actors have a venv of
  their own)."""
  return [python, '-m', ACTOR_MAIN, *flags]


def start_learner(logdir: str, agent: str, flags: Sequence[str],
                  log_name: str = 'learner.log', append: bool = False,
                  port: int = 0) -> subprocess.Popen:
  """A learner on localhost's `port` (0: a free one), logging to <logdir>/logs/<log_name>
  (after what the log holds with `append`, so a resumed run keeps the earlier starts'
  lines)."""
  run_dir = RunDir(logdir)
  os.makedirs(run_dir.logs, exist_ok=True)
  run_dir.remove_port()
  with open(os.path.join(run_dir.logs, log_name), 'a' if append else 'w') as log:
    return subprocess.Popen(
        learner_command([f'--logdir={logdir}', f'--agent={agent}',
                         f'--server_address=localhost:{port}', *flags]),
        stdout=log, stderr=subprocess.STDOUT, env=child_env(), cwd=REPO)


def local_socket(logdir: str, learner_flags: Sequence[str] = ()) -> Tuple[List[str], Optional[str]]:
  """How the actors of this host reach a learner of run directory `logdir`, as
  run_local.sh has them: the learner flags to add and the actors' --server_address for
  its Unix socket LOGDIR/learner.sock (seed.transport.unix_socket: the same messages as gRPC
  for less of the learner's CPU); ([], None), gRPC, where that path is too long for a
  Unix socket. A --local_socket in `learner_flags` is used as it is ('': gRPC)."""
  given = [f for f in learner_flags if f.startswith('--local_socket=')]
  if given:
    path = given[-1][len('--local_socket='):]
    return [], (unix_address.SCHEME + path if path else None)
  path = os.path.abspath(RunDir(logdir).local_socket)
  if not unix_address.fits(path):
    return [], None
  return [f'--local_socket={path}'], unix_address.SCHEME + path


def wait_for_port(learner: subprocess.Popen, logdir: str, poll_s: float = 0.1) -> int:
  """The port the learner listens on, once it does; raises if it exits first."""
  run_dir = RunDir(logdir)
  while (port := run_dir.read_port()) is None:
    if learner.poll() is not None:
      raise RuntimeError(f'learner exited with {learner.returncode}: see {run_dir.learner_log}')
    time.sleep(poll_s)
  return port


def learner_last_line(run_dir: str) -> str:
  """The learner log's last error line (or last line): what it said when it stopped."""
  path = RunDir(run_dir).learner_log
  try:
    with open(path) as f:
      lines = [line.strip() for line in f if line.strip()]
  except OSError:
    return f'no log at {path}'
  errors = [line for line in lines if line.startswith('E')]
  return (errors or lines or ['(empty log)'])[-1][:500]


# A learner that reached its goal tells its actors first (they exit 0), then writes its
# final checkpoint and closes: its watchdog ends it within --shutdown_limit_s (20 s by
# default); a few more for the interpreter's exit.
LEARNER_FINISHING_S = 30.0


def wait_learner(learner: subprocess.Popen, actors: List[subprocess.Popen],
                 poll_s: float = 1.0, timeout_s: Optional[float] = None) -> Optional[int]:
  """The learner's exit code; None if every actor ended and the learner still ran
  LEARNER_FINISHING_S later (nothing would feed it); TimeoutError after `timeout_s` with
  everything still running."""
  deadline = None if timeout_s is None else time.monotonic() + timeout_s
  actors_gone_at = None
  while True:
    try:
      return learner.wait(timeout=poll_s)
    except subprocess.TimeoutExpired:
      pass
    if actors and actors_gone_at is None and all(a.poll() is not None for a in actors):
      actors_gone_at = time.monotonic()
    if actors_gone_at is not None and time.monotonic() - actors_gone_at > LEARNER_FINISHING_S:
      return None
    if deadline is not None and time.monotonic() > deadline:
      raise TimeoutError(f'the learner still runs after {timeout_s} s')


def start_actor(actor_id: int, num_envs: int, port: int, flags: Sequence[str],
                log_path: Optional[str] = None, append: bool = False,
                address: Optional[str] = None, python: str = sys.executable
                ) -> subprocess.Popen:
  """An actor process of the learner at `address` (local_socket's), else on localhost's
  `port`; its output goes to `log_path` (after what it holds, with `append`), or nowhere."""
  command = actor_command([f'--actor_id={actor_id}', f'--num_envs={num_envs}',
                           f'--server_address={address or f"localhost:{port}"}', *flags],
                          python)
  if not log_path:
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
                            env=child_env(), cwd=REPO)
  # The child keeps its own copy of the descriptor.
  with open(log_path, 'a' if append else 'w') as log:
    return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=child_env(),
                            cwd=REPO)


def start_actors(logdir: str, num_actors: int, num_envs: int, port: int,
                 flags: Sequence[str], address: Optional[str] = None,
                 append: bool = False) -> List[subprocess.Popen]:
  """The run's `num_actors` actors (ids 0, 1, ...), `num_envs` envs each, every one
  logging to its own file of the run directory (RunDir.actor_log); start_actor's
  `port`, `address` and `append`."""
  return [start_actor(actor_id, num_envs, port, flags,
                      log_path=RunDir(logdir).actor_log(actor_id), append=append,
                      address=address) for actor_id in range(num_actors)]


@contextlib.contextmanager
def sigterm_raises() -> Iterator[None]:
  """Inside it, SIGTERM to this process raises SystemExit(143) in the main thread, so
  the `finally` that stops a learner and its actors runs. Python's default ends the
  process at once, leaving them running: the learner to its budget, the actors
  retrying a learner that is gone forever."""
  if threading.current_thread() is not threading.main_thread():
    yield
    return

  def raise_exit(signum, frame):
    del signum, frame
    raise SystemExit(128 + signal.SIGTERM)

  previous = signal.signal(signal.SIGTERM, raise_exit)
  try:
    yield
  finally:
    signal.signal(signal.SIGTERM, previous)


def stop(processes: List[subprocess.Popen], timeout_s: float = 60) -> None:
  """SIGTERM to every process still running, then waits; SIGKILL for any that hang."""
  for process in processes:
    if process.poll() is None:
      process.send_signal(signal.SIGTERM)
  for process in processes:
    try:
      process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
      process.kill()
      process.wait()
