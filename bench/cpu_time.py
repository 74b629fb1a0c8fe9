"""CPU time of a process and of a learner's threads by part, from Linux's /proc: what the
benchmarks report beside their rates."""
import os
from typing import List, Tuple


def cpu_s(pid: int) -> float:
  """User + system CPU seconds of a process, all its threads (Linux /proc)."""
  return _stat_cpu_s(f'/proc/{pid}/stat')


def _stat_cpu_s(path: str) -> float:
  with open(path) as f:
    fields = f.read().rpartition(')')[2].split()
  return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')


# The learner's threads by what they do, from the names the OS shows (seed.process.thread_names
# names ours; gRPC and TensorFlow name theirs). Its main thread runs the event loop.
LEARNER_THREAD_PARTS = ('event loop', 'gRPC', 'inference lanes', 'TensorFlow', 'other')


def learner_thread_part(pid: int, tid: int, name: str) -> str:
  if tid == pid:
    return 'event loop'
  if name.startswith(('event_engine', 'grpc')):
    return 'gRPC'
  if name.startswith('seed_infer'):
    return 'inference lanes'
  if name.startswith('tf_'):
    return 'TensorFlow'
  return 'other'


def thread_cpu_s(pid: int) -> List[Tuple[int, str, float]]:
  """(thread id, the name the OS shows, user + system CPU seconds) of each live thread."""
  threads = []
  for tid in os.listdir(f'/proc/{pid}/task'):
    try:
      with open(f'/proc/{pid}/task/{tid}/comm') as f:
        name = f.read().strip()
      threads.append((int(tid), name, _stat_cpu_s(f'/proc/{pid}/task/{tid}/stat')))
    except FileNotFoundError:
      pass  # The thread ended between the listing and the reading.
  return threads


def learner_thread_cpu_s(pid: int) -> dict:
  """User + system CPU seconds of a learner's live threads, summed by part
  (LEARNER_THREAD_PARTS): the difference of two readings says where a window's CPU went."""
  parts = dict.fromkeys(LEARNER_THREAD_PARTS, 0.0)
  for tid, name, seconds in thread_cpu_s(pid):
    parts[learner_thread_part(pid, tid, name)] += seconds
  return parts
