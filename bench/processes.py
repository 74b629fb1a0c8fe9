"""Moved to seed/process/local_processes.py (the experiment runner uses it); bench/ imports it here,
with what only benches need."""
import os

from seed.process.local_processes import (REPO, child_env, sigterm_raises, start_actor,
                                          start_learner, stop, wait_for_port)

__all__ = ['REPO', 'child_env', 'cpu_s', 'sigterm_raises', 'start_actor', 'start_learner',
           'stop', 'wait_for_port']


def cpu_s(pid: int) -> float:
  """User + system CPU seconds of a process, all its threads (Linux /proc)."""
  with open(f'/proc/{pid}/stat') as f:
    fields = f.read().rpartition(')')[2].split()
  return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')
