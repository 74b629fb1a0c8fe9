"""The CPUs a process may use (seed/process/cpu_quota.py): its cgroup's CPU quota, v1 or
v2, the smallest on the way up, as /proc/self/cgroup and /proc/self/mountinfo place it;
TensorFlow's thread pools sized from it. Fake /proc and cgroup trees here; a real cgroup
in tests/system/test_cpu_limit.py."""
import os

import pytest

from seed.process import cpu_quota


def fake_proc(tmp_path, cgroup_lines, mount_lines):
  proc = tmp_path / 'proc'
  (proc / 'self').mkdir(parents=True)
  (proc / 'self' / 'cgroup').write_text(''.join(line + '\n' for line in cgroup_lines))
  (proc / 'self' / 'mountinfo').write_text(''.join(line + '\n' for line in mount_lines))
  return str(proc)


def write(folder, **files):
  folder.mkdir(parents=True, exist_ok=True)
  for name, text in files.items():
    (folder / name.replace('__', '.')).write_text(text)


def test_v2_a_containers_limit_and_the_smallest_above_it(tmp_path):
  root = tmp_path / 'cg2'
  write(root / 'kubepods' / 'pod1' / 'learner', cpu__max='400000 100000\n')
  write(root / 'kubepods' / 'pod1', cpu__max='max 100000\n')
  write(root / 'kubepods', cpu__max='250000 100000\n')  # 2.5 CPUs above it wins
  proc = fake_proc(tmp_path, ['0::/kubepods/pod1/learner'],
                   [f'30 1 0:26 / {root} rw - cgroup2 cgroup2 rw'])
  assert cpu_quota.cgroup_cpu_limit(proc) == 2.5


def test_v2_inside_a_cgroup_namespace(tmp_path):
  root = tmp_path / 'cg2'
  write(root, cpu__max='150000 100000\n')  # the container's own cgroup is the root it sees
  proc = fake_proc(tmp_path, ['0::/'], [f'30 1 0:26 / {root} ro - cgroup2 cgroup2 rw'])
  assert cpu_quota.cgroup_cpu_limit(proc) == 1.5


def test_v1_cpu_controller_quota_and_period(tmp_path):
  root = tmp_path / 'cpu'
  write(root / 'docker' / 'abc', cpu__cfs_quota_us='300000\n', cpu__cfs_period_us='100000\n')
  write(root / 'docker', cpu__cfs_quota_us='-1\n', cpu__cfs_period_us='100000\n')
  proc = fake_proc(tmp_path, ['4:memory:/docker/abc', '3:cpu,cpuacct:/docker/abc'],
                   [f'33 31 0:30 / {tmp_path / "memory"} rw - cgroup cgroup rw,memory',
                    f'32 31 0:29 / {root} rw - cgroup cgroup rw,cpu,cpuacct'])
  assert cpu_quota.cgroup_cpu_limit(proc) == 3.0


def test_no_limit_set_or_nothing_readable(tmp_path):
  root = tmp_path / 'cg2'
  write(root, cpu__max='max 100000\n')
  assert cpu_quota.cgroup_cpu_limit(fake_proc(tmp_path, ['0::/'], [
      f'30 1 0:26 / {root} rw - cgroup2 cgroup2 rw'])) is None
  assert cpu_quota.cgroup_cpu_limit(str(tmp_path / 'no-proc')) is None


@pytest.mark.parametrize('limit, flags, expected', [
    (None, (0, 0), (0, 0)),  # no limit: TensorFlow picks
    (0.5, (0, 0), (1, 1)),   # half a CPU: one thread each
    (0.5, (3, 0), (3, 1)),   # a flag wins
    (0.5, (3, 2), (3, 2)),
])
def test_tensorflow_pools_follow_a_limit_below_the_machines_cores(monkeypatch, limit, flags,
                                                                   expected):
  monkeypatch.setattr(cpu_quota, 'cgroup_cpu_limit', lambda proc='/proc': limit)
  monkeypatch.setattr(os, 'sched_getaffinity', lambda pid: {0, 1, 2, 3})
  monkeypatch.setattr(os, 'cpu_count', lambda: 4)
  assert cpu_quota.thread_pools(*flags)[:2] == expected
