"""Real podman for tests, on its own config and storage, removed whole at the end.

No Docker daemon and no registry are needed (see ../shared/CONTAINERS.md): podman
runs rootful with runc and cgroupfs from a containers.conf and storage.conf written
under a temporary folder, named to podman through CONTAINERS_CONF and
CONTAINERS_STORAGE_CONF in the environment of its own subprocesses only, so the
user's podman config and images are never touched. The base image is a
debootstrap Debian (`localbase:bookworm`) imported with `podman import`.

  reason = unavailable_reason()          # None, or why podman cannot run here
  with Podman() as pm:                   # cleanup() at the end, also on errors
    pm.base_image()                      # localbase:bookworm, once per Podman
    built = pm.build('docker/Dockerfile.actor', 'seed-actor:test')   # Built
    pm.run_once(built.tag, ['--help'])   # podman run --rm, no network
    pm.network('seed-test', '198.18.2.0/24')   # networks_unavailable_reason() first
    pm.start('a0', built.tag, ['--actor_id=0'], network='seed-test', env={...})
    pm.wait('a0', timeout=60); pm.logs('a0'); pm.stop('a0'); pm.remove('a0')
    pm.run(['kube', 'play', ...])        # any other podman command
  # cleanup(): every container, pod, network, volume and image, then the storage
  # (nothing left mounted) and the temporary folder.

Tests get one instance a session, and the project's images built once on it, from
the `podman` and `seed_images` fixtures in tests/conftest.py. An instance whose
test process was killed is cleaned up by the next session (`Podman.remove_stale`).

Container networks use only 198.18.0.0/15 (the benchmarking range): `network()`
refuses any other subnet, and `start()` never falls back to podman's default
bridge (10.88.0.0/16): a container gets the named network or none.
"""
import contextlib
import dataclasses
import glob
import ipaddress
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from typing import Dict, Iterable, List, Optional, Sequence

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BASE_IMAGE = 'localbase:bookworm'
PREFIX = 'seed-podman-'  # Temp dirs of instances, under tempfile.gettempdir().
SUITE = 'bookworm'
ALLOWED_NETWORK = ipaddress.ip_network('198.18.0.0/15')
DEFAULT_MIRROR = 'http://deb.debian.org/debian'
# The host's CA bundle: pip inside a build trusts it too (a TLS-intercepting proxy).
HOST_CA_BUNDLE = os.environ.get('PIP_CERT') or '/etc/ssl/certs/ca-certificates.crt'
# Podman 4.3 keeps netavark's run state here whatever the config says; we remove
# them at the end only if we made them and no other podman is using them.
NETAVARK_RUN_DIRS = ('/run/containers/networks', '/run/containers')
# The xdist group of every test that uses the session's podman storage and images or the
# one-node Slurm cluster (whose jobs run the images): one worker runs them one after
# another, and builds the images once.
SHARED_MACHINE_GROUP = 'podman_and_slurm'
# Measured figures (build times, sizes, ...): tests/conftest.py prints them after the run.
FIGURES: List[str] = []


def revision() -> str:
  """The commit checked out here (the images' REVISION label), or 'unknown' outside git."""
  done = subprocess.run(['git', 'rev-parse', 'HEAD'], cwd=REPO, capture_output=True, text=True)
  return done.stdout.strip() if done.returncode == 0 else 'unknown'


def report(line: str) -> None:
  """Keeps a measured figure for the end-of-run summary (never for an assertion)."""
  FIGURES.append(line)
  print(line)


def unavailable_reason() -> Optional[str]:
  """Why real podman cannot run here (a skip reason), or None."""
  if not hasattr(os, 'geteuid') or os.geteuid() != 0:
    return 'podman tests run podman rootful: not root'
  for tool in ('podman', 'runc', 'debootstrap'):
    if not _which(tool):
      return f'{tool} is not installed (apt-get install {tool})'
  return None


def networks_unavailable_reason() -> Optional[str]:
  """Why `Podman.network()` cannot work here (a skip reason), or None."""
  if not _which('iptables'):
    return ('iptables is not installed: netavark needs it for container networks '
            '(apt-get install iptables)')
  return None


def _which(tool: str) -> Optional[str]:
  return shutil.which(tool, path=os.environ.get('PATH', '') + ':/usr/sbin:/sbin')


def debian_mirror() -> str:
  """The Debian mirror apt uses here (/etc/apt/sources.list.d/, sources.list)."""
  files = sorted(glob.glob('/etc/apt/sources.list.d/*.sources'))
  for path in files:  # deb822: "URIs: ..." with "Suites: bookworm ..."
    with open(path) as f:
      for stanza in f.read().split('\n\n'):
        fields = dict(re.findall(r'^([\w-]+):\s*(.*)$', stanza, re.M))
        if SUITE in fields.get('Suites', '').split() and 'deb' in fields.get('Types', '').split():
          return fields['URIs'].split()[0]
  for path in sorted(glob.glob('/etc/apt/sources.list.d/*.list')) + ['/etc/apt/sources.list']:
    if os.path.exists(path):
      with open(path) as f:
        for line in f:
          match = re.match(r'^deb\s+(?:\[[^]]*\]\s+)?(\S+)\s+' + SUITE + r'\s', line)
          if match:
            return match.group(1)
  return DEFAULT_MIRROR


@dataclasses.dataclass(frozen=True)
class Built:
  """One `podman build`: the tag, its wall time, the image's size and the build log."""
  tag: str
  seconds: float
  size_mb: float
  log: str

  def step_cached(self, text: str) -> bool:
    """Whether the build step whose instruction contains `text` came from the cache."""
    steps = [s for s in self.log.split('STEP ')[1:] if text in s.split('\n', 1)[0]]
    if not steps:
      raise ValueError(f'no build step contains {text!r}')
    return all('--> Using cache' in s for s in steps)


class PodmanError(RuntimeError):
  """A podman command failed; the message holds its command line and output."""


class Podman:
  """One private podman: config, storage and everything made under one temp dir."""

  def __init__(self, root: Optional[str] = None):
    """A new instance in a new temp dir; `root`: attach to an existing one (to clean it)."""
    self.root = root or tempfile.mkdtemp(prefix=PREFIX)
    self._made_run_dirs = [d for d in NETAVARK_RUN_DIRS if not os.path.exists(d)]
    if root is None:
      self._write_config()
      with open(self._path('pid'), 'w') as f:
        f.write(str(os.getpid()))
    self.env = dict(os.environ, CONTAINERS_CONF=self._path('containers.conf'),
                    CONTAINERS_STORAGE_CONF=self._path('storage.conf'),
                    TMPDIR=self._path('tmp'))
    self._base_ready = False
    self.build_seconds: Dict[str, float] = {}

  @classmethod
  def remove_stale(cls) -> List[str]:
    """Cleans up instances whose test process died without cleaning (killed); returns
    their folders. Instances of live processes are left alone."""
    stale = []
    for root in glob.glob(os.path.join(tempfile.gettempdir(), PREFIX + '*')):
      try:
        with open(os.path.join(root, 'pid')) as f:
          pid = int(f.read())
      except (OSError, ValueError):
        continue  # Not ours, or still being made.
      if not _alive(pid):
        cls(root).cleanup()
        stale.append(root)
    return stale

  def _path(self, *names: str) -> str:
    return os.path.join(self.root, *names)

  def _write_config(self) -> None:
    for sub in ('tmp', 'libpod', 'networks', 'storage', 'run'):
      os.makedirs(self._path(sub))
    with open(self._path('containers.conf'), 'w') as f:
      # crun fails on this host's hybrid cgroups; higher ulimits are refused
      # without CAP_SYS_RESOURCE.
      f.write('[containers]\n'
              'default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]\n'
              '[engine]\n'
              'runtime = "runc"\n'
              'cgroup_manager = "cgroupfs"\n'
              'events_logger = "file"\n'
              f'tmp_dir = "{self._path("libpod")}"\n'
              '[network]\n'
              f'network_config_dir = "{self._path("networks")}"\n')
    with open(self._path('storage.conf'), 'w') as f:
      f.write('[storage]\n'
              'driver = "overlay"\n'
              f'graphroot = "{self._path("storage")}"\n'
              f'runroot = "{self._path("run")}"\n')

  # -- commands ---------------------------------------------------------------

  def run(self, args: Sequence[str], check: bool = True, timeout: float = 600,
          input: Optional[bytes] = None) -> subprocess.CompletedProcess:  # pylint: disable=redefined-builtin
    """`podman ARGS` on this instance's config and storage; text output."""
    result = subprocess.run(['podman', *args], env=self.env, capture_output=True,
                            timeout=timeout, input=input)
    result = subprocess.CompletedProcess(result.args, result.returncode,
                                         result.stdout.decode(errors='replace'),
                                         result.stderr.decode(errors='replace'))
    if check and result.returncode != 0:
      raise PodmanError(f'podman {" ".join(args)} exited {result.returncode}:\n'
                        f'{result.stdout[-4000:]}{result.stderr[-4000:]}')
    return result

  def check_works(self) -> None:
    """Raises PodmanError, with podman's words, where podman is installed but broken."""
    self.run(['info', '--format', '{{.Host.OCIRuntime.Name}}'], timeout=60)

  def base_image(self, mirror: Optional[str] = None) -> str:
    """localbase:bookworm from debootstrap --variant=minbase (once); returns its name."""
    if self._base_ready:
      return BASE_IMAGE
    rootfs = self._path('rootfs')
    started = time.monotonic()
    try:
      result = subprocess.run(
          ['debootstrap', '--variant=minbase', SUITE, rootfs, mirror or debian_mirror()],
          capture_output=True, text=True, timeout=900)
      if result.returncode != 0:
        raise PodmanError(f'debootstrap exited {result.returncode}:\n{result.stdout[-3000:]}'
                          f'{result.stderr[-3000:]}')
      bootstrapped = time.monotonic()
      tar = subprocess.run(['tar', '-C', rootfs, '-c', '.'], capture_output=True, check=True)
      self.run(['import', '-', BASE_IMAGE], input=tar.stdout)
    finally:
      _unmount_under(rootfs)
      shutil.rmtree(rootfs, ignore_errors=True)
    self.build_seconds[BASE_IMAGE] = time.monotonic() - started
    report(f'{BASE_IMAGE}: {self.build_seconds[BASE_IMAGE]:.0f} s (debootstrap '
           f'{bootstrapped - started:.0f} s), {self.image_size_mb(BASE_IMAGE):.0f} MB')
    self._base_ready = True
    return BASE_IMAGE

  def build(self, dockerfile: str, tag: str, build_args: Optional[Dict[str, str]] = None,
            context: str = REPO, timeout: float = 1500) -> Built:
    """Builds `dockerfile` (relative to `context`) FROM the debootstrap base.

    Network: the host's (pip and apt reach their registries); pip trusts the host's
    CA bundle through the PIP_CERT build argument and a read-only build volume.
    """
    args = {'BASE': self.base_image()}
    volumes = []
    if os.path.exists(HOST_CA_BUNDLE):
      volumes = ['--volume', f'{HOST_CA_BUNDLE}:/tmp/build-ca.crt:ro']
      args['PIP_CERT'] = '/tmp/build-ca.crt'
    args.update(build_args or {})
    started = time.monotonic()
    result = self.run(['build', '--network=host', '--pull=never', *volumes,
                       *[f'--build-arg={k}={v}' for k, v in args.items()],
                       '-f', os.path.join(context, dockerfile), '-t', tag, context],
                      timeout=timeout)
    built = Built(tag, time.monotonic() - started, self.image_size_mb(tag),
                  result.stdout + result.stderr)
    self.build_seconds[tag] = built.seconds
    steps = built.log.split('STEP ')[1:]
    cached = sum('--> Using cache' in step for step in steps)
    report(f'{tag}: built in {built.seconds:.0f} s ({cached}/{len(steps)} steps cached), '
           f'{built.size_mb:.0f} MB')
    return built

  def image_size_mb(self, image: str) -> float:
    return int(self.run(['image', 'inspect', '--format', '{{.Size}}', image]).stdout) / 1e6

  def network(self, name: str, subnet: str, internal: bool = True) -> str:
    """A bridge network with DNS (containers find each other by name) on `subnet`,
    which must lie in 198.18.0.0/15. Internal: no route out of it."""
    reason = networks_unavailable_reason()
    if reason:
      raise PodmanError(reason)
    net = ipaddress.ip_network(subnet)
    if not net.subnet_of(ALLOWED_NETWORK):
      raise ValueError(f'subnet {subnet}: test networks must lie in {ALLOWED_NETWORK}')
    self.run(['network', 'create', '--subnet', subnet, *(['--internal'] if internal else []),
              name])
    return name

  def start(self, name: str, image: str, args: Sequence[str] = (),
            network: Optional[str] = None, env: Optional[Dict[str, str]] = None,
            volumes: Iterable[str] = (), extra: Sequence[str] = ()) -> str:
    """`podman run -d` a container named `name`; on `network`, else with no network."""
    env_args = [a for k, v in (env or {}).items() for a in ('--env', f'{k}={v}')]
    volume_args = [a for v in volumes for a in ('--volume', v)]
    self.run(['run', '-d', '--name', name, f'--network={network or "none"}', *env_args,
              *volume_args, *extra, image, *args], timeout=120)
    return name

  def run_once(self, image: str, args: Sequence[str] = (), entrypoint: Optional[str] = None,
               env: Optional[Dict[str, str]] = None, network: Optional[str] = None,
               timeout: float = 300) -> subprocess.CompletedProcess:
    """`podman run --rm` and wait (no network unless named); the result holds the
    exit code and output, whatever the exit code."""
    env_args = [a for k, v in (env or {}).items() for a in ('--env', f'{k}={v}')]
    entry = ['--entrypoint', entrypoint] if entrypoint else []
    return self.run(['run', '--rm', f'--network={network or "none"}', *entry, *env_args,
                     image, *args], check=False, timeout=timeout)

  def logs(self, name: str, tail_chars: int = 8000) -> str:
    result = self.run(['logs', name], check=False, timeout=60)
    return (result.stdout + result.stderr)[-tail_chars:]

  def wait(self, name: str, timeout: float) -> int:
    """Exit code of container `name` once it exits; PodmanError after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
      state = self.state(name)
      if state['Status'] in ('exited', 'stopped'):
        return int(state['ExitCode'])
      if time.monotonic() > deadline:
        raise PodmanError(f'{name} still {state["Status"]} after {timeout:.0f} s:\n'
                          f'{self.logs(name)}')
      time.sleep(1)

  def state(self, name: str) -> dict:
    out = self.run(['inspect', '--format', '{{json .State}}', name], timeout=60).stdout
    return json.loads(out)

  def stop(self, name: str, timeout_s: int = 60) -> int:
    """SIGTERM (`podman stop`), SIGKILL after `timeout_s`; returns the exit code."""
    self.run(['stop', '-t', str(timeout_s), name], timeout=timeout_s + 60)
    return int(self.state(name)['ExitCode'])

  def remove(self, name: str) -> None:
    self.run(['rm', '-f', '-t', '0', name], check=False, timeout=120)

  # -- cleanup ----------------------------------------------------------------

  def cleanup(self) -> None:
    """Removes everything this instance made, then its folder; safe to call twice."""
    if not os.path.isdir(self.root):
      return
    errors = []
    for args in (['pod', 'rm', '-a', '-f', '-t', '0'], ['rm', '-a', '-f', '-t', '0'],
                 ['network', 'prune', '-f'], ['volume', 'rm', '-a', '-f'],
                 ['rmi', '-a', '-f'], ['system', 'reset', '-f']):
      try:
        result = self.run(args, check=False, timeout=300)
        if result.returncode != 0:
          errors.append(f'podman {" ".join(args)}: {result.stderr.strip()[-500:]}')
      except subprocess.TimeoutExpired:
        errors.append(f'podman {" ".join(args)}: timed out')
    _unmount_under(self.root)
    shutil.rmtree(self.root, ignore_errors=True)
    if os.path.exists(self.root):  # Overlay leftovers podman could not remove.
      subprocess.run(['rm', '-rf', '--one-file-system', self.root], check=False)
    self._remove_netavark_run_dir()
    if errors:
      print('podman cleanup: ' + '; '.join(errors))

  def _remove_netavark_run_dir(self) -> None:
    """Netavark's run state (ipam.db, aardvark-dns configs), where we made it and no
    other podman is using it: no network config left, no aardvark-dns running."""
    if NETAVARK_RUN_DIRS[0] not in self._made_run_dirs:
      return
    dns_dir = os.path.join(NETAVARK_RUN_DIRS[0], 'aardvark-dns')
    if (os.path.isdir(dns_dir) and os.listdir(dns_dir)) or _running('aardvark-dns'):
      return
    shutil.rmtree(NETAVARK_RUN_DIRS[0], ignore_errors=True)
    if NETAVARK_RUN_DIRS[1] in self._made_run_dirs:
      with contextlib.suppress(OSError):
        os.rmdir(NETAVARK_RUN_DIRS[1])  # Only when empty.

  def __enter__(self) -> 'Podman':
    return self

  def __exit__(self, *exc) -> None:
    self.cleanup()


def _alive(pid: int) -> bool:
  """Whether process `pid` exists and is not a zombie."""
  try:
    with open(f'/proc/{pid}/stat') as f:
      return f.read().rsplit(')', 1)[1].split()[0] != 'Z'
  except (OSError, IndexError):
    return False


def _running(command: str) -> bool:
  """Whether any process runs `command` (by its /proc comm name)."""
  for comm in glob.glob('/proc/[0-9]*/comm'):
    with contextlib.suppress(OSError):
      with open(comm) as f:
        if f.read().strip() == command:
          return True
  return False


def _unmount_under(path: str) -> List[str]:
  """Unmounts every mount point at or below `path`, deepest first; returns them."""
  path = os.path.realpath(path)
  with open('/proc/self/mountinfo') as f:
    points = [line.split()[4].replace('\\040', ' ') for line in f]
  mine = sorted({p for p in points if p == path or p.startswith(path + '/')},
                key=len, reverse=True)
  for point in mine:
    if subprocess.run(['umount', point], capture_output=True).returncode != 0:
      subprocess.run(['umount', '-l', point], capture_output=True)
  return mine
