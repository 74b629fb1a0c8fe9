"""How many CPUs this process may keep busy: its cgroup's CPU quota (a container's CPU
limit, e.g. Kubernetes' `limits.cpu`), the CPUs it may run on, whichever is fewer.

Thread pools sized from the machine's cores (TensorFlow's, left to size themselves) run
one thread per core of the node: a learner limited to 4 CPUs on a 64-core node then
runs 64 threads on a 4-CPU quota, and the kernel throttles the whole process each
period it overdraws. The quota is read where the kernel says this process's cgroup is
(/proc/self/cgroup, /proc/self/mountinfo), cgroup v2 (cpu.max) or v1
(cpu.cfs_quota_us / cpu.cfs_period_us), taking the smallest limit on the way up to the
hierarchy's root. Standard library only.
"""
import math
import os
from typing import Iterator, List, Optional, Tuple


def available_cpus(proc: str = '/proc') -> int:
  """CPUs this process may use: its affinity, lowered to its cgroup CPU quota (rounded up)."""
  cpus = len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else os.cpu_count()
  limit = cgroup_cpu_limit(proc)
  return max(1, min(cpus or 1, math.ceil(limit))) if limit else max(1, cpus or 1)


def cgroup_cpu_limit(proc: str = '/proc') -> Optional[float]:
  """The CPU quota of this process's cgroup in CPUs (1.5: 150 ms each 100 ms), the smallest
  set on its cgroup or any above it; None where none is set or none can be read."""
  limits = [limit for directory, version in _cgroup_dirs(proc)
            for limit in [_limit_in(directory, version)] if limit is not None]
  return min(limits) if limits else None


def _cgroup_dirs(proc: str) -> Iterator[Tuple[str, int]]:
  """(folder, cgroup version) of this process's CPU cgroup and each one above it."""
  try:
    with open(os.path.join(proc, 'self', 'cgroup')) as f:
      memberships = [line.rstrip('\n').split(':', 2) for line in f if line.count(':') >= 2]
    with open(os.path.join(proc, 'self', 'mountinfo')) as f:
      mounts = [_mount(line) for line in f]
  except OSError:
    return
  for hierarchy, controllers, path in memberships:
    version = 2 if hierarchy == '0' and controllers == '' else 1
    if version == 1 and 'cpu' not in controllers.split(','):
      continue
    for root, mount_point in _mounts_of(mounts, version):
      if path != root and not path.startswith(root.rstrip('/') + '/'):
        continue
      inside = os.path.relpath(path, root)
      folder = os.path.normpath(os.path.join(mount_point, inside))
      while True:
        yield folder, version
        if folder == mount_point or len(folder) <= len(mount_point):
          break
        folder = os.path.dirname(folder)


def _mount(line: str) -> Tuple[str, str, str, List[str]]:
  """(root, mount point, fs type, super options) of a /proc/self/mountinfo line."""
  fields = line.split()
  separator = fields.index('-')
  return fields[3], fields[4], fields[separator + 1], fields[separator + 3].split(',')


def _mounts_of(mounts, version: int) -> Iterator[Tuple[str, str]]:
  for root, mount_point, fs_type, options in mounts:
    if version == 2 and fs_type == 'cgroup2':
      yield root, mount_point
    elif version == 1 and fs_type == 'cgroup' and 'cpu' in options:
      yield root, mount_point


def _limit_in(folder: str, version: int) -> Optional[float]:
  try:
    if version == 2:
      with open(os.path.join(folder, 'cpu.max')) as f:
        quota, period = f.read().split()[:2]
      return None if quota == 'max' else int(quota) / int(period)
    with open(os.path.join(folder, 'cpu.cfs_quota_us')) as f:
      quota = int(f.read())
    with open(os.path.join(folder, 'cpu.cfs_period_us')) as f:
      period = int(f.read())
    return None if quota <= 0 or period <= 0 else quota / period
  except (OSError, ValueError):
    return None


def thread_pools(intra_op: int, inter_op: int) -> Tuple[int, int, str]:
  """TensorFlow's (intra-op, inter-op) threads: the flags where set (> 0); else, under a
  CPU limit below this machine's cores, the CPUs available; else 0 (TensorFlow picks,
  from the cores it may run on). With a note saying where the numbers came from."""
  if intra_op and inter_op:
    return intra_op, inter_op, 'as set'
  cpus = available_cpus()
  if cpus >= (os.cpu_count() or cpus):
    return intra_op, inter_op, f'TensorFlow sizes the rest from {cpus} CPUs'
  return (intra_op or cpus, inter_op or cpus,
          f'{cpus} of the machine\'s {os.cpu_count()} CPUs: the CPU limit or affinity')
