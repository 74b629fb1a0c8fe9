"""A real one-node Slurm cluster for tests: munged, slurmctld and slurmd of our own.

Everything lives under one temporary folder (see ../shared/CLUSTERS.md): a munge
key and socket that no other munged uses, a slurm.conf named to every Slurm
command through SLURM_CONF (only in the environment this harness hands out), state,
spool, logs and pid files, on free ports. The system's munge and Slurm settings
are never read or touched.

  reason = unavailable_reason()     # None, or why it cannot run here (a skip reason)
  with SlurmCluster() as cluster:   # started and idle; stop() at the end, also on errors
    out = cluster.run('sinfo')      # any Slurm command against this cluster
    subprocess.run([...], env=cluster.env())   # e.g. slurm/submit.sh
    cluster.wait_state(job_id, {'COMPLETED'}, timeout_s=300)
  # stop(): cancels every job, kills what its steps left, then the daemons by pid,
  # and removes the folder.

A cluster whose test process was killed is cleaned up by the next one
(`SlurmCluster.remove_stale`).
"""
import contextlib
import glob
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import time
from typing import Dict, Iterable, List, Optional

from tests.processes import NetnsPair
from tests.server_harness import free_port

PREFIX = 'seed-slurm-'  # Temp dirs of clusters, under tempfile.gettempdir().
SBIN_PATH = '/usr/sbin:/sbin'
DAEMONS = ('munged', 'slurmctld', 'slurmd')
CLIENTS = ('sbatch', 'srun', 'scontrol', 'squeue', 'scancel', 'sinfo')
# Job states after which a job runs no more (unless requeued).
FINISHED = frozenset({'COMPLETED', 'FAILED', 'CANCELLED', 'TIMEOUT', 'NODE_FAIL',
                      'PREEMPTED', 'OUT_OF_MEMORY', 'BOOT_FAIL', 'DEADLINE'})


def _which(tool: str) -> Optional[str]:
  return shutil.which(tool, path=os.environ.get('PATH', '') + ':' + SBIN_PATH)


def unavailable_reason() -> Optional[str]:
  """Why a Slurm cluster cannot be started here (a skip reason), or None."""
  if not hasattr(os, 'geteuid') or os.geteuid() != 0:
    return 'the Slurm tests start munged, slurmctld and slurmd as root: not root'
  for tool in DAEMONS + CLIENTS:
    if not _which(tool):
      package = 'munge' if tool == 'munged' else 'slurm-wlm'
      return f'{tool} is not installed (apt-get install slurm-wlm munge; missing: {package})'
  return None


def _read_pid(path: str) -> Optional[int]:
  try:
    with open(path) as f:
      return int(f.read().strip())
  except (OSError, ValueError):
    return None


def _environ_mentions(pid: int, text: bytes) -> bool:
  try:
    with open(f'/proc/{pid}/environ', 'rb') as f:
      environ = f.read()
    with open(f'/proc/{pid}/cmdline', 'rb') as f:
      cmdline = f.read()
  except OSError:
    return False
  return text in environ or text in cmdline


def _pids_mentioning(text: bytes) -> List[int]:
  return [int(e) for e in os.listdir('/proc')
          if e.isdigit() and int(e) != os.getpid() and _environ_mentions(int(e), text)]


def _parent(pid: int) -> Optional[int]:
  try:
    with open(f'/proc/{pid}/stat') as f:
      return int(f.read().rsplit(')', 1)[1].split()[1])
  except (OSError, ValueError, IndexError):
    return None


def _alive(pid: int) -> bool:
  try:
    os.kill(pid, 0)
  except ProcessLookupError:
    return False
  except PermissionError:
    return True
  # A zombie is dead for our purposes.
  try:
    with open(f'/proc/{pid}/stat') as f:
      return f.read().rsplit(')', 1)[1].split()[0] != 'Z'
  except OSError:
    return False


def _kill_and_wait(pids: Iterable[int], timeout_s: float = 10.0) -> None:
  """SIGTERM, then SIGKILL whatever is still there after `timeout_s`."""
  pids = [p for p in pids if _alive(p)]
  for pid in pids:
    with contextlib.suppress(ProcessLookupError):
      os.kill(pid, signal.SIGTERM)
  deadline = time.monotonic() + timeout_s
  while any(_alive(p) for p in pids) and time.monotonic() < deadline:
    time.sleep(0.1)
  for pid in pids:
    if _alive(pid):
      with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


class SlurmCluster:
  """munged + slurmctld + slurmd on this host, one node named after it.

  cpus: CPUs the node offers. More than the machine has is allowed (slurmd's
  config_overrides): a learner and two actors need three task slots on a 2-core VM.
  cred_expire_s: lifetime of job step credentials, and so how long a requeued job
  waits before it starts again.
  hosts: two network namespaces (tests.processes.netns_pair): a cluster of two nodes,
  a slurmd in each, named `<a>-n1` and `<a>-n2` by an /etc/hosts of the cluster's own
  (bind-mounted over the host's in a mount namespace of each daemon's); slurmctld runs
  in the first, and so must every client (`prefix`, `run`).
  gpus: GPUs the node declares as the generic resource `gpu`. Their device files are
  device nodes in the cluster's folder that no driver serves: Slurm allocates them to
  steps and sets CUDA_VISIBLE_DEVICES and SLURM_STEP_GPUS as for real ones.
  """

  def __init__(self, cpus: int = 4, real_memory_mb: int = 4000, cred_expire_s: int = 5,
               gpus: int = 0, hosts: Optional[NetnsPair] = None):
    self.cpus = cpus
    self.gpus = gpus
    self.cred_expire_s = cred_expire_s
    self.real_memory_mb = real_memory_mb
    self.hosts = hosts
    if hosts is None:
      self.node = socket.gethostname().split('.')[0]
      self.nodes = {self.node: '127.0.0.1'}
    else:
      # Two nodes, one slurmd in each namespace; slurmctld and every client in the first.
      self.nodes = {f'{hosts.a}-n1': hosts.address_a, f'{hosts.a}-n2': hosts.address_b}
      self.node = next(iter(self.nodes))
    self.root: Optional[str] = None
    self._daemons: List[subprocess.Popen] = []  # in the order started

  @property
  def prefix(self) -> List[str]:
    """What runs a command where slurmctld is reachable (the first node's namespace)."""
    return [] if self.hosts is None else self._in_namespace(self.hosts.a)

  def _in_namespace(self, namespace: str) -> List[str]:
    """The prefix that runs a command in `namespace`'s network, with the cluster's
    /etc/hosts. Not `ip netns exec`: it also mounts a fresh /sys, without the cgroup
    tree slurmd needs."""
    return ['nsenter', f'--net=/run/netns/{namespace}', 'unshare', '--mount',
            '--propagation', 'private', 'sh', '-c', 'mount --bind "$0" /etc/hosts && exec "$@"',
            self.path('hosts')]

  # --- paths --------------------------------------------------------------------
  def path(self, *parts: str) -> str:
    return os.path.join(self.root, *parts)

  @property
  def conf(self) -> str:
    return self.path('slurm.conf')

  def env(self, extra: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    """This process's environment pointed at this cluster (for Slurm commands and jobs)."""
    env = dict(os.environ, SLURM_CONF=self.conf)
    env['PATH'] = env.get('PATH', '') + ':' + SBIN_PATH
    # A test run inside some other Slurm job must not hand its job to ours.
    for name in [n for n in env if n.startswith(('SLURM_', 'SBATCH_', 'SRUN_'))]:
      if name != 'SLURM_CONF':
        del env[name]
    env.update(extra or {})
    return env

  # --- life cycle ---------------------------------------------------------------
  def start(self, timeout_s: float = 60.0) -> 'SlurmCluster':
    """Starts the daemons and waits until the node is idle; raises with their logs if not."""
    self.root = tempfile.mkdtemp(prefix=PREFIX)
    # munged refuses a socket whose parents others cannot search; slurmstepd reads too.
    os.chmod(self.root, 0o755)
    with open(self.path('owner.pid'), 'w') as f:
      f.write(str(os.getpid()))
    for folder in ('munge', 'state', 'spool', 'log'):
      os.makedirs(self.path(folder))
    for node in self.nodes:
      os.makedirs(self.path('spool', node))
    os.chmod(self.path('munge'), 0o700)
    with open(os.open(self.path('munge', 'munge.key'), os.O_WRONLY | os.O_CREAT, 0o600),
              'wb') as f:
      f.write(os.urandom(1024))
    self._write_conf()
    self._write_hosts()
    try:
      # In the foreground, as our children: we hold their pids and reap them.
      self._daemon('munged', [
          _which('munged'), '--foreground', '--force',
          f'--socket={self.path("munge", "munge.sock")}',
          f'--key-file={self.path("munge", "munge.key")}',
          f'--pid-file={self.path("munge", "munged.pid")}',
          f'--log-file={self.path("log", "munged.log")}',
          f'--seed-file={self.path("munge", "munged.seed")}'],
          ready=lambda: os.path.exists(self.path('munge', 'munge.sock')))
      self._daemon('slurmctld', self.prefix + [_which('slurmctld'), '-D', '-c'],
                   ready=lambda: self.run('scontrol', 'ping', check=False).returncode == 0)
      if self.hosts is None:
        self._daemon('slurmd', [_which('slurmd'), '-D', '-c'])
      else:
        for node, namespace in zip(self.nodes, (self.hosts.a, self.hosts.b)):
          self._daemon(f'slurmd-{node}', self._in_namespace(namespace) + [
              _which('slurmd'), '-D', '-c', '-N', node])
      self._wait(self._node_idle, 'every node idle', self._daemons,
                 30.0 if self.hosts is None else timeout_s)
    except BaseException:
      self.stop()
      raise
    return self

  def _write_hosts(self) -> None:
    lines = ['127.0.0.1 localhost'] + [f'{a} {n}' for n, a in self.nodes.items()]
    with open(self.path('hosts'), 'w') as f:
      f.write('\n'.join(lines) + '\n')

  def _wait(self, ready, what: str, daemons: List[subprocess.Popen], timeout_s: float) -> None:
    """Polls ready() until true; raises with the daemons' logs if one of `daemons` exits
    first or `timeout_s` passes."""
    deadline = time.monotonic() + timeout_s
    while not ready():
      for process in daemons:
        if process.poll() is not None:
          raise RuntimeError(f'{process.args[0]} exited with {process.returncode} while '
                             f'waiting for {what}\n{self.daemon_logs()}')
      if time.monotonic() > deadline:
        raise RuntimeError(f'{what}: not within {timeout_s} s\n{self.daemon_logs()}')
      time.sleep(0.1)

  def _write_conf(self) -> None:
    port_ctld, port_d = free_port(), free_port()
    lines = [
        'ClusterName=seedtest',
        # slurmctld runs only where the host's name is its SlurmctldHost.
        f'SlurmctldHost={socket.gethostname().split(".")[0]}({self.nodes[self.node]})',
        f'SlurmctldPort={port_ctld}',
        f'SlurmdPort={port_d}',
        'AuthType=auth/munge',
        'CredType=cred/munge',
        # cred_expire: also how long a requeued job waits before it may start again
        # (Slurm's default, 120 s, would be most of a test's time).
        f'AuthInfo=socket={self.path("munge", "munge.sock")},cred_expire={self.cred_expire_s}',
        # No cgroups: the tests may run in a container without a writable cgroup tree.
        # Memory is counted (CR_Core_Memory), not enforced, as on most clusters.
        'ProctrackType=proctrack/linuxproc',
        'TaskPlugin=task/none',
        'SelectType=select/cons_tres',
        'SelectTypeParameters=CR_Core_Memory',
        'DefMemPerCPU=1000',
        'SlurmUser=root',
        'SlurmdUser=root',
        'SlurmdParameters=config_overrides',
        f'StateSaveLocation={self.path("state")}',
        # %n: each node's own (two slurmd share this folder in the two-node cluster).
        f'SlurmdSpoolDir={self.path("spool", "%n")}',
        f'SlurmctldPidFile={self.path("slurmctld.pid")}',
        f'SlurmdPidFile={self.path("slurmd-%n.pid")}',
        f'SlurmctldLogFile={self.path("log", "slurmctld.log")}',
        f'SlurmdLogFile={self.path("log", "slurmd-%n.log")}',
        'MpiDefault=none',
        # Look at pending jobs every 2 s (default 60): a requeued job starts once
        # its begin time has come, not up to a minute later. Backfill every 2 s (default
        # 30): only backfill starts a heterogeneous job.
        'SchedulerParameters=sched_interval=2,bf_interval=2',
        'ReturnToService=2',
        'JobCompType=jobcomp/none',
        'AccountingStorageType=accounting_storage/none',
        # Seconds between SIGTERM and SIGKILL when a job is cancelled or requeued:
        # the learner's checkpoint must fit in it (Slurm's default, said outright).
        'KillWait=30',
        # Finished jobs stay visible to scontrol for this long.
        'MinJobAge=600',
    ] + [
        f'NodeName={node} NodeAddr={address} CPUs={self.cpus} '
        f'RealMemory={self.real_memory_mb} State=UNKNOWN'
        + (f' Gres=gpu:{self.gpus}' if self.gpus else '')
        for node, address in self.nodes.items()
    ] + [
        f'PartitionName=debug Nodes={",".join(self.nodes)} Default=YES MaxTime=INFINITE '
        'State=UP',
    ]
    if self.gpus:
      lines.insert(0, 'GresTypes=gpu')
      devices = [self.path('dev', f'nvidia{i}') for i in range(self.gpus)]
      os.makedirs(self.path('dev'))
      for index, device in enumerate(devices):
        # Character devices with NVIDIA's major number (Slurm refuses plain files); no
        # driver answers behind them.
        os.mknod(device, stat.S_IFCHR | 0o600, os.makedev(195, index))
      with open(self.path('gres.conf'), 'w') as f:
        f.write('AutoDetect=off\n' + ''.join(f'Name=gpu File={d}\n' for d in devices))
    with open(self.conf, 'w') as f:
      f.write('\n'.join(lines) + '\n')

  def _daemon(self, name: str, command: List[str], ready=None, timeout_s: float = 30.0) -> None:
    """Starts a daemon logging to log/NAME.out; waits until ready() when given."""
    log = open(self.path('log', f'{name}.out'), 'w')
    process = subprocess.Popen(command, env=self.env(), stdout=log, stderr=subprocess.STDOUT,
                               stdin=subprocess.DEVNULL, cwd=self.root, start_new_session=True)
    log.close()
    self._daemons.append(process)
    if ready is not None:
      self._wait(ready, f'{name} to start', [process], timeout_s)

  def _node_idle(self) -> bool:
    """Every node idle."""
    done = self.run('sinfo', '--noheader', '--format=%t', check=False)
    return done.returncode == 0 and done.stdout.split() == ['idle']

  def stop(self) -> None:
    """Cancels every job, kills what its steps left, stops the daemons, removes the folder."""
    if self.root is None:
      return
    try:
      if any(p.poll() is None for p in self._daemons[1:2]):  # slurmctld answers
        self._cancel_all_jobs()
      # Job steps are not children of slurmd: they would outlive it. Every one of
      # them carries our SLURM_CONF in its environment.
      _kill_and_wait(self._processes_of_ours())
      for process in reversed(self._daemons):  # slurmd, slurmctld, then munged
        _kill_and_wait([process.pid])
        process.wait()
    finally:
      shutil.rmtree(self.root, ignore_errors=True)
      self.root = None
      self._daemons = []

  def _cancel_all_jobs(self, timeout_s: float = 45.0) -> None:
    if self.run('scancel', '--full', '--quiet', '--partition=debug', check=False).returncode:
      return
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
      done = self.run('squeue', '--noheader', '--format=%i', check=False)
      if done.returncode != 0 or not done.stdout.strip():
        return
      time.sleep(0.5)

  def _processes_of_ours(self) -> List[int]:
    """Pids whose environment or command line names our folder: job steps and what
    they started, not the daemons (nor slurmctld's own helper, slurmscriptd)."""
    daemons = {p.pid for p in self._daemons}
    return [pid for pid in _pids_mentioning(self.root.encode())
            if pid not in daemons and _parent(pid) not in daemons]

  def __enter__(self) -> 'SlurmCluster':
    return self.start() if self.root is None else self

  def __exit__(self, *exc) -> None:
    self.stop()

  @staticmethod
  def remove_stale() -> List[str]:
    """Stops and removes clusters left by test processes that were killed."""
    removed = []
    for root in glob.glob(os.path.join(tempfile.gettempdir(), PREFIX + '*')):
      owner = _read_pid(os.path.join(root, 'owner.pid'))
      if owner is not None and _alive(owner):
        continue
      # Everything of a cluster names its folder in its environment (SLURM_CONF):
      # the daemons, the job steps and their processes. A reused pid does not.
      _kill_and_wait(_pids_mentioning(root.encode()))
      shutil.rmtree(root, ignore_errors=True)
      removed.append(root)
    return removed

  # --- commands -----------------------------------------------------------------
  def run(self, *command: str, check: bool = True,
          timeout_s: float = 30.0) -> subprocess.CompletedProcess:
    """A Slurm client command against this cluster; raises on failure when `check`."""
    done = subprocess.run(self.prefix + list(command), env=self.env(), capture_output=True,
                          text=True, timeout=timeout_s)
    if check and done.returncode != 0:
      raise RuntimeError(f'`{" ".join(command)}` failed (exit {done.returncode}): '
                         f'{done.stderr.strip()}')
    return done

  def job(self, job_id: str) -> Dict[str, str]:
    """`scontrol show job` as a dict (JobState, Restarts, StartTime, ...); {} if unknown."""
    done = self.run('scontrol', '--oneliner', 'show', 'job', job_id, check=False)
    if done.returncode != 0:
      return {}
    return dict(re.findall(r'(\w+)=(\S*)', done.stdout))

  def job_state(self, job_id: str) -> str:
    return self.job(job_id).get('JobState', 'UNKNOWN')

  def wait_state(self, job_id: str, states: Iterable[str], timeout_s: float,
                 poll_s: float = 0.5) -> str:
    """Waits until the job is in one of `states`; raises on timeout or on another end."""
    states = set(states)
    deadline = time.monotonic() + timeout_s
    while True:
      state = self.job_state(job_id)
      if state in states:
        return state
      if state in FINISHED:
        raise RuntimeError(f'job {job_id} ended {state}, not {sorted(states)}')
      if time.monotonic() > deadline:
        raise TimeoutError(f'job {job_id} still {state} after {timeout_s} s, not '
                           f'{sorted(states)}')
      time.sleep(poll_s)

  def daemon_logs(self, lines: int = 30) -> str:
    """The last lines of each daemon's log, for failure messages."""
    out = []
    for path in sorted(glob.glob(self.path('log', '*'))):
      with open(path, errors='replace') as f:
        tail = f.readlines()[-lines:]
      out.append(f'--- {os.path.basename(path)}\n' + ''.join(tail))
    return '\n'.join(out)
