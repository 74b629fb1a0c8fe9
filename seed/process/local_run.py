"""`seed train ENV AGENT NUM_ACTORS ENVS_PER_ACTOR [learner flags]`: one learner, its
actors and TensorBoard on this machine, until the learner stops or Ctrl-C.

The config is gin/ENV/AGENT.gin (from the repository, or from the installed package:
seed.config.gin_root). Extra flags go to the learner; --gin_file, --gin_bindings, --seed
and --env go to the actors too. The run directory is runs/ENV_AGENT under the current
folder (--logdir=DIR to change it); a checkpoint found there is resumed. Ctrl-C or
SIGTERM stops everything, the learner writing a checkpoint first (exit 130).

The actors reach the learner over its Unix socket, DIR/learner.sock (seed.transport.unix_socket:
the same messages as gRPC for less of the learner's CPU per step); --local_socket=PATH
puts it elsewhere, --local_socket= (empty) keeps them on gRPC. A run directory whose
socket path would exceed a Unix socket's 107 bytes uses gRPC, and says so.

Environment: SEED_PORT (the learner's port, 8686), SEED_TENSORBOARD_PORT (6006; 0
starts no TensorBoard), SEED_EVAL_ACTORS (evaluation actors of one env each, logging
eval/episode_return; 0), SEED_FOOTBALL_VENV (the Football actors' interpreter's venv,
.venv-football in the repository; ./run_local.sh builds it on first use).
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from typing import Callable, List, Optional, Sequence

from seed import config, settings
from seed.process import exit_codes, local_processes
from seed.run_dir.layout import RunDir

USAGE = 'usage: seed train ENV AGENT NUM_ACTORS ENVS_PER_ACTOR [learner flags]'
# Flags the actors get too: --seed also seeds their envs (env i of actor a: seed +
# 1000·a + i); --env names the env both sides build (the learner refuses actors of
# another).
SHARED_FLAGS = ('--gin_file=', '--gin_bindings=', '--seed=', '--env=')
# TensorFlow's start-up chatter, left in the log file but not echoed to the terminal.
_QUIET = re.compile(r'^(WARNING: All log messages before absl|I0000 00:00)|oneDNN|'
                    r'cpu_feature_guard|rebuild TensorFlow')
_POLL_S = 0.5


class UsageError(ValueError):
  """Bad arguments: the message names the value and what is accepted."""


def envs() -> List[str]:
  """The ENV names: gin's folders."""
  root = config.gin_root()
  return sorted(name for name in os.listdir(root) if os.path.isdir(os.path.join(root, name)))


def agents_for(env: str) -> List[str]:
  """The AGENT names for `env`: its gin files."""
  folder = os.path.join(config.gin_root(), env)
  return sorted(name[:-len('.gin')] for name in os.listdir(folder) if name.endswith('.gin'))


def help_text() -> str:
  """Usage, the arguments, and every learner and actor setting (seed.settings)."""
  def table(declared):
    return '\n'.join(f'  --{s.name}={s.default!r}  {s.help}' for s in declared)
  actor_only = [s for s in settings.ACTOR if s.name not in {x.name for x in settings.LEARNER}]
  return (f'{USAGE}\n\n{__doc__.split(chr(10), 2)[2].strip()}\n\n'
          f'ENV: {" ".join(envs())}\n'
          f'AGENT: the gin files of gin/ENV/ (e.g. toy: {" ".join(agents_for("toy"))})\n\n'
          f'Learner flags (seed.settings):\n{table(settings.LEARNER)}\n\n'
          f'Actor flags, set by seed train for each actor or shared from the learner\'s:\n'
          f'{table(actor_only)}')


def host_has_gpu() -> bool:
  """Whether nvidia-smi lists a GPU here (what a learner would train on), without
  TensorFlow, which this launcher never imports."""
  smi = shutil.which('nvidia-smi')
  if smi is None:
    return False
  try:
    listed = subprocess.run([smi, '-L'], capture_output=True, text=True, timeout=20).stdout
  except (OSError, subprocess.SubprocessError):
    return False
  return any(line.startswith('GPU') for line in listed.splitlines())


def accelerator_notice(env: str, agent: str, has_gpu: Callable[[], bool] = host_has_gpu
                       ) -> Optional[str]:
  """A config with a CPU sibling (gin/ENV/AGENT_cpu.gin) is sized for an accelerator: on a
  host without one, a line that says so and names the sibling; else None."""
  cpu_agent = f'{agent}_cpu'
  if cpu_agent not in agents_for(env) or has_gpu():
    return None
  return (f'seed: gin/{env}/{agent}.gin is sized for an accelerator and this host has no GPU '
          f'(nvidia-smi lists none); gin/{env}/{cpu_agent}.gin is sized for a CPU: '
          f'./run_local.sh {env} {cpu_agent} ... Going on with {agent}.')


class Plan:
  """What `seed train` starts, from its arguments; UsageError for bad ones."""

  def __init__(self, argv: Sequence[str]):
    if len(argv) < 4:
      raise UsageError(f'{USAGE}\n  ENV: {" ".join(envs())}')
    self.env, self.agent, num_actors, envs_per_actor = argv[:4]
    self.learner_flags = list(argv[4:])
    if self.env not in envs():
      raise UsageError(f"unknown env '{self.env}'; valid envs: {' '.join(envs())}")
    if self.agent not in agents_for(self.env):
      raise UsageError(f"unknown agent '{self.agent}' for env '{self.env}'; valid agents: "
                       f"{' '.join(agents_for(self.env))}")
    for value in (num_actors, envs_per_actor):
      if not re.fullmatch(r'[1-9][0-9]*', value):
        raise UsageError(f"NUM_ACTORS and ENVS_PER_ACTOR must be positive integers, got "
                         f"'{value}'")
    self.num_actors, self.envs_per_actor = int(num_actors), int(envs_per_actor)
    self.logdir = f'runs/{self.env}_{self.agent}'
    self.port = os.environ.get('SEED_PORT', '8686')
    self.actor_flags = []
    for flag in self.learner_flags:
      if flag.startswith('--logdir='):
        self.logdir = flag[len('--logdir='):]
      elif flag.startswith('--server_address='):
        self.port = flag.rpartition(':')[2]
      elif flag.startswith(SHARED_FLAGS):
        self.actor_flags.append(flag)
    # The flag that gives the learner its Unix socket, and the actors' address on it
    # (None: they use gRPC).
    self.local_socket_flags, self.socket_address = local_processes.local_socket(
        self.logdir, self.learner_flags)
    # The repository's own relative path when it is there (what earlier runs recorded),
    # else the installed package's file.
    relative = os.path.join('gin', self.env, f'{self.agent}.gin')
    self.gin_file = relative if os.path.exists(relative) else config.resolve_gin_file(relative)
    self.eval_actors = int(os.environ.get('SEED_EVAL_ACTORS', '0'))
    self.tensorboard_port = os.environ.get('SEED_TENSORBOARD_PORT', '6006')

  @property
  def actor_address(self) -> str:
    return self.socket_address or f'localhost:{self.port}'

  def actor_python(self) -> str:
    """Football's actors run in a venv of their own (gfootball needs the old gym API)."""
    if self.env != 'football':
      return sys.executable
    venv = os.environ.get('SEED_FOOTBALL_VENV') or os.path.join(
        os.path.dirname(config.gin_root()), '.venv-football')
    return os.path.join(venv, 'bin', 'python')

  def ensure_actor_python(self) -> None:
    """Builds Football's actor venv on first use (scripts/install_football.sh, from a
    clone); raises UsageError where it is missing and cannot be built here."""
    python = self.actor_python()
    if python == sys.executable or os.path.exists(python) and subprocess.run(
        [python, '-c', 'import gfootball.env'], capture_output=True).returncode == 0:
      return
    script = os.path.join(os.path.dirname(config.gin_root()), 'scripts', 'install_football.sh')
    if not os.path.exists(script):
      raise UsageError(
          f'Football actors need gfootball in {python}, which does not import it; set '
          'SEED_FOOTBALL_VENV to a venv that has it, or run scripts/install_football.sh '
          'from a clone of seed.')
    if subprocess.run([script]).returncode != 0:
      raise UsageError(f'{script} failed; the Football actors have no interpreter.')


def _echo(log_path: str, learner: subprocess.Popen, done: threading.Event) -> None:
  """Prints the learner log's lines as they come (TensorFlow's chatter left out), until
  the learner has exited and the log is read to its end."""
  with open(log_path, errors='replace') as log:
    while True:
      line = log.readline()
      if line:
        if not _QUIET.search(line):
          sys.stdout.write(line)
          sys.stdout.flush()
        continue
      if learner.poll() is not None or done.is_set():
        return
      time.sleep(0.1)


def _stop(learner: subprocess.Popen, others: List[subprocess.Popen]) -> None:
  """SIGTERM to the others, then the learner (which checkpoints on it); waits for all."""
  for process in others:
    if process.poll() is None:
      process.send_signal(signal.SIGTERM)
  if learner.poll() is None:
    learner.send_signal(signal.SIGTERM)
  learner.wait()
  for process in others:
    try:
      process.wait(timeout=30)
    except subprocess.TimeoutExpired:
      process.kill()
      process.wait()


class _Interrupted(Exception):
  """Ctrl-C or SIGTERM."""


def train(plan: Plan) -> int:
  """Runs the plan until the learner stops (its exit code) or a signal stops everything
  (130).

  A Ctrl-C at the terminal reaches the children too (one process group, so whoever
  kills the group kills them all); each stops cleanly on it, and this process then
  stops the actors and waits for the learner's checkpoint.
  """
  run_dir = RunDir(plan.logdir)
  os.makedirs(run_dir.logs, exist_ok=True)
  run_dir.remove_port()
  env = local_processes.child_env()
  print(f'seed: {plan.env}/{plan.agent} with {plan.num_actors} actors x {plan.envs_per_actor} '
        f'envs; run directory {plan.logdir}; actors connect to {plan.actor_address}', flush=True)
  notice = accelerator_notice(plan.env, plan.agent)
  if notice:
    print(notice, flush=True)

  def interrupted(signum, frame):
    del signum, frame
    raise _Interrupted()

  previous = {sig: signal.signal(sig, interrupted) for sig in (signal.SIGINT, signal.SIGTERM)}
  learner_log = run_dir.learner_log
  started: List[subprocess.Popen] = []
  learner: Optional[subprocess.Popen] = None
  echo_done = threading.Event()
  echo = None
  try:
    with open(learner_log, 'w') as log:
      # In this folder, not the repository's: the flags' paths are the user's.
      learner = subprocess.Popen(
          local_processes.learner_command([
              f'--logdir={plan.logdir}', f'--agent={plan.agent}', f'--gin_file={plan.gin_file}',
              f'--server_address=localhost:{plan.port}', *plan.local_socket_flags,
              *plan.learner_flags]),
          stdout=log, stderr=subprocess.STDOUT, env=env)
    echo = threading.Thread(target=_echo, args=(learner_log, learner, echo_done), daemon=True)
    echo.start()
    # Actors connect once the learner has warmed up and bound its port.
    while run_dir.read_port() is None:
      if learner.poll() is not None:
        if learner.returncode == exit_codes.BAD_SETTINGS:  # Its one line, echoed, says why.
          print(f'seed: the learner refused its settings (its line in {learner_log})',
                file=sys.stderr)
          return exit_codes.BAD_SETTINGS
        print(f'seed: the learner exited during start-up; see {learner_log}', file=sys.stderr)
        return 1
      time.sleep(_POLL_S)
    python = plan.actor_python()
    actors = [(i, plan.envs_per_actor, []) for i in range(plan.num_actors)]
    actors += [(i, 1, ['--eval']) for i in range(plan.num_actors,
                                                 plan.num_actors + plan.eval_actors)]
    for actor_id, num_envs, extra in actors:
      with open(run_dir.actor_log(actor_id), 'w') as log:
        started.append(subprocess.Popen(
            local_processes.actor_command([
                f'--actor_id={actor_id}', f'--num_envs={num_envs}', *extra,
                f'--gin_file={plan.gin_file}', f'--server_address={plan.actor_address}',
                *plan.actor_flags], python),
            stdout=log, stderr=subprocess.STDOUT, env=env))
    beside = os.path.join(os.path.dirname(sys.executable), 'tensorboard')
    tensorboard = beside if os.path.exists(beside) else shutil.which('tensorboard')
    if plan.tensorboard_port != '0' and tensorboard:
      with open(os.path.join(run_dir.logs, 'tensorboard.log'), 'w') as log:
        started.append(subprocess.Popen(
            [tensorboard, '--logdir', plan.logdir, '--host', 'localhost',
             '--port', plan.tensorboard_port], stdout=log, stderr=subprocess.STDOUT, env=env))
      print(f'seed: TensorBoard at http://localhost:{plan.tensorboard_port}', flush=True)
    # Runs until the learner stops (a stop condition such as --target_return): its exit
    # code is ours (0 at its goal; 1 when its final checkpoint failed, say).
    return learner.wait()
  except _Interrupted:
    return 130
  finally:
    # Stopping is not interrupted by a second Ctrl-C: the checkpoint comes first.
    for sig in previous:
      signal.signal(sig, signal.SIG_IGN)
    if learner is not None:
      print('seed: stopping (the learner checkpoints first)...', flush=True)
      _stop(learner, started)
      echo_done.set()
      if echo is not None:
        echo.join(timeout=5)
      print(f'seed: stopped. Run directory: {plan.logdir}', flush=True)
    for sig, handler in previous.items():
      signal.signal(sig, handler)


def main(argv: Sequence[str]) -> int:
  if argv and argv[0] in ('-h', '--help'):
    print(help_text())
    return 0
  try:
    plan = Plan(argv)
    plan.ensure_actor_python()
  except (UsageError, FileNotFoundError) as e:
    print(e, file=sys.stderr)
    return 2
  return train(plan)
