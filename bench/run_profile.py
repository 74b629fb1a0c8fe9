"""Where a training run's CPU goes, read from a run that is going: the learner's threads
by what they do and the actors' processes, over a window, beside the run's own rate.

  python -m bench.run_profile --logdir RUN [--window_s 120] [--windows 3]

The learner and its actors are found by their command lines (`seed.learner.main
--logdir=RUN`; `seed.actors.main` naming RUN's socket or the port RUN/port holds), so any
launcher's run can be read (run_local.sh, `seed suite learning_curve`, a test). Nothing
is attached to them: /proc is read at the window's two ends.

The learner's threads, by the names the OS shows (seed.process.thread_names names ours):
  train step       `seed_trainer`: the train step's Python and TensorFlow's dispatch
  TF arithmetic    TensorFlow's pools: `tf_*` (inter-op) and the unnamed threads, which
                   are Eigen's intra-op pool (they keep the process's name; a Python thread
                   left unnamed would count here too). The train step's and inference's
                   products share them, so this part is both, mostly the train step's
  inference lanes  `seed_infer_*`: batching, the policy call's dispatch, the replies
  event loop       the main thread: transport, decode, the batcher's queue
  gRPC             gRPC's own threads
Actors: each process's whole CPU (stepping the envs, preprocessing, its transport).
"idle" is what the host's cores had left (cores × window less all the above and the
rest of the machine, which is reported apart so a busy host shows).
"""
import argparse
import os
import time
from typing import Dict, List, Optional, Tuple

from bench import cpu_time, hardware
from seed.run_dir.layout import RunDir

LEARNER_PARTS = ('train step', 'TF arithmetic', 'inference lanes', 'event loop', 'gRPC')


def _cmdline(pid: int) -> List[str]:
  try:
    with open(f'/proc/{pid}/cmdline', 'rb') as f:
      return [arg.decode(errors='replace') for arg in f.read().split(b'\0') if arg]
  except OSError:
    return []


def find_processes(logdir: str) -> Tuple[Optional[int], List[int]]:
  """(learner pid or None, actor pids) of the run in `logdir`."""
  run_dir = RunDir(os.path.abspath(logdir))
  port = run_dir.read_port()
  actor_marks = [run_dir.local_socket] + ([f':{port}'] if port else [])
  learner, actors = None, []
  for name in os.listdir('/proc'):
    if not name.isdigit():
      continue
    args = _cmdline(int(name))
    if 'seed.learner.main' in args and f'--logdir={run_dir.root}' in args:
      learner = int(name)
    elif 'seed.actors.main' in args and any(
        arg.startswith('--server_address=') and any(mark in arg for mark in actor_marks)
        for arg in args):
      actors.append(int(name))
  return learner, sorted(actors)


def learner_part(pid: int, tid: int, name: str, process_name: str) -> Optional[str]:
  """The LEARNER_PARTS entry of one learner thread, or None for the rest: cpu_time's
  parts, with the train step's thread and TensorFlow's unnamed pool threads told apart."""
  if name.startswith('seed_trainer'):
    return 'train step'
  part = cpu_time.learner_thread_part(pid, tid, name)
  if part == 'TensorFlow' or (part == 'other' and name == process_name):
    return 'TF arithmetic'
  return None if part == 'other' else part


def learner_cpu_s(pid: int) -> Dict[str, float]:
  """CPU seconds of the learner's live threads by LEARNER_PARTS, the rest as 'other'."""
  with open(f'/proc/{pid}/comm') as f:
    process_name = f.read().strip()
  parts = dict.fromkeys(LEARNER_PARTS + ('other',), 0.0)
  for tid, name, seconds in cpu_time.thread_cpu_s(pid):
    parts[learner_part(pid, tid, name, process_name) or 'other'] += seconds
  return parts


def host_busy_s() -> float:
  """All CPUs' busy seconds since boot (/proc/stat: all but idle and iowait)."""
  with open('/proc/stat') as f:
    fields = [int(x) for x in f.readline().split()[1:]]
  return (sum(fields) - fields[3] - fields[4]) / os.sysconf('SC_CLK_TCK')


def _last_progress(run_dir: RunDir) -> Optional[Tuple[float, int, int]]:
  """(wall_time_s, env_frames, learner_steps) of progress.csv's last line."""
  try:
    with open(run_dir.progress_csv, 'rb') as f:
      f.seek(max(0, os.path.getsize(run_dir.progress_csv) - 4096))
      last = f.read().decode().strip().splitlines()[-1].split(',')
    return float(last[0]), int(last[1]), int(last[2])
  except (OSError, IndexError, ValueError):
    return None


def profile_window(logdir: str, window_s: float) -> Dict[str, float]:
  """Cores used by each part over one window, the run's frames/s and steps/s in it."""
  learner, actors = find_processes(logdir)
  if learner is None:
    raise SystemExit(f'bench.run_profile: no learner running with --logdir={logdir}')
  run_dir = RunDir(os.path.abspath(logdir))
  start = (time.monotonic(), learner_cpu_s(learner),
           {pid: cpu_time.cpu_s(pid) for pid in actors}, host_busy_s(),
           _last_progress(run_dir))
  time.sleep(window_s)
  end = (time.monotonic(), learner_cpu_s(learner),
         {pid: cpu_time.cpu_s(pid) for pid in actors if os.path.exists(f'/proc/{pid}')},
         host_busy_s(), _last_progress(run_dir))
  seconds = end[0] - start[0]
  cores = {part: (end[1][part] - start[1][part]) / seconds for part in start[1]}
  cores['actors'] = sum(end[2][pid] - start[2][pid] for pid in end[2]) / seconds
  ours = sum(cores.values())
  host = (end[3] - start[3]) / seconds
  cores['rest of the host'] = max(0.0, host - ours)
  cores['idle'] = max(0.0, (os.cpu_count() or 1) - host)
  if start[4] and end[4] and end[4][0] > start[4][0]:
    elapsed = end[4][0] - start[4][0]
    cores['frames/s'] = (end[4][1] - start[4][1]) / elapsed
    cores['learner steps/s'] = (end[4][2] - start[4][2]) / elapsed
  cores['actor processes'] = len(end[2])
  return cores


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0],
                                   formatter_class=argparse.RawDescriptionHelpFormatter,
                                   epilog=__doc__.split('\n', 2)[2])
  parser.add_argument('--logdir', required=True, help='the run directory of a running learner')
  parser.add_argument('--window_s', type=float, default=120.0)
  parser.add_argument('--windows', type=int, default=1)
  args = parser.parse_args(argv)
  rows = [profile_window(args.logdir, args.window_s) for _ in range(args.windows)]
  print(f'{args.logdir}: cores used by each part, {args.window_s:g} s windows; '
        f'{hardware.describe()}')
  names = [name for name in rows[0] if name not in ('frames/s', 'learner steps/s',
                                                     'actor processes')]
  print('| part | ' + ' | '.join(f'window {i + 1}' for i in range(len(rows))) + ' |')
  print('|---|' + '---:|' * len(rows))
  for name in names:
    print(f'| {name} | ' + ' | '.join(f'{row[name]:.2f}' for row in rows) + ' |')
  for name in ('frames/s', 'learner steps/s', 'actor processes'):
    print(f'| {name} | ' + ' | '.join(
        f'{row[name]:,.{2 if name == "learner steps/s" else 0}f}' if name in row else '—'
        for row in rows) + ' |')
  return 0


if __name__ == '__main__':
  raise SystemExit(main())
