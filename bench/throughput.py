"""Throughput of seed against the env limit (and Sample Factory), as a markdown table.

  python -m bench.throughput --env atari --agent vtrace
  python -m bench.throughput --env atari --agent vtrace --actors 1,2 --envs 4 --peer_s 120

  python -m bench.throughput --env atari --agent vtrace --actors 1,2,4,8 --envs 4 \
      --modes env_limit,inference          # the speedup table (collection only)

  python -m bench.throughput --env atari --agent vtrace --actors 1 --envs 16 \
      --gin_bindings "EnvConfig.backend = 'envpool'"   # actors on EnvPool

For each (actors × envs per actor) it measures, one after the other on this machine:
  env limit   the same envs, same preprocessing, stepped with random actions in the same
              number of processes, as an actor's batch (EnvConfig.backend): no network,
              no model (the raw ceiling);
  ceiling     the compute-aware ceiling: the frames/s these cores reach if they did only
              the env steps and the model's inference at the batch the inference run
              formed, both measured here (env CPU per frame from the env-limit
              processes; the policy's CPU and wall time per batch from bench.model_cost,
              with the learner's thread flags): min(env limit, cores / (env CPU per
              frame + model CPU per frame), 1 / model wall time per frame);
  together    the ceiling measured rather than summed: the env-limit processes, their
              envs in the actors' groups (--actor_flag=--num_splits), and one process
              calling the policy on what they stepped, all at once on these cores, as the
              learner batches (everything that is waiting, at the padded sizes); a group
              steps again once a call has served it. No learner, no messages, no
              bookkeeping: what the sum leaves out is what the envs and the model cost
              each other sharing the cores (caches, memory bandwidth, clocks) and the
              waits of the pipeline itself;
  inference   actors + learner serving inference, no training (--notrain);
  training    the full system training.
With several actor counts, starting at 1, it also prints the speedup table: frames/s of
the env limit and of collection against one process (near-linear until the learner's
inference is the bottleneck). Frames/s is the median of `--windows` windows of
`--window_s` after `--warmup_s` (counted from the first frames, or in training from
the first train step, so that tracing it is left out); training p10 is the 10th
percentile of its windows, against the inference-only median (issue 19's test that
training does not starve acting: use many windows, e.g. 12 of 5 s); frames count the
action repeat. Round trip is per step of one actor (send k observations, get k
actions): the mean over actors of their p50 and the worst p99.
"""
import argparse
import collections
import csv
import json
import multiprocessing as mp
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List, NamedTuple, Optional

import numpy as np

from bench import hardware
from seed.process import local_processes as processes
from seed.inference.step_processor import padded_batch_sizes

REPO = processes.REPO
MODES = ('env_limit', 'inference', 'together', 'training')  # In the order they run.


class Pace(NamedTuple):
  """How the envs and the model's calls keep pace in the measured ceiling, as an actor's
  envs and the learner's batches do. Each env process steps its envs in `go`'s number of
  groups (an actor's --num_splits); after stepping a group it puts (process, group, envs)
  on `stepped` and steps its next group; a group steps again once a call has served it
  (its semaphore in `go`, one permit). The model process takes all that was put, as the
  learner's batcher with --max_wait_ms=0 does, calls the policy at the padded size, and
  gives those groups their permits back. Semaphores and a pipe, not a Condition: a
  multiprocessing Condition's notify waits until each waiter has run, and on busy cores
  that serialised the processes this measures side by side."""
  stepped: Any  # multiprocessing SimpleQueue of (process, group, envs); None stops the model
  go: List[List[Any]]  # a multiprocessing Semaphore per env process and group
  # What explains the figure: the calls' wall seconds, count and envs (the model
  # process's), and the env processes' seconds waiting for a permit (all together).
  call_s: Any  # multiprocessing Value('d')
  calls: Any  # multiprocessing Value('q')
  call_envs: Any  # multiprocessing Value('q')
  wait_s: Any  # multiprocessing Value('d')


def _env_process(gin_file: str, gin_bindings: List[str], num_envs: int, process_id: int, steps,
                 cpu_s, stop, pace: Optional[Pace] = None) -> None:
  """Steps `num_envs` envs as an actor's batch (its backend) with random actions until told
  to stop (the env limit); adds its steps to `steps` and the CPU seconds they took, of all
  its threads, to `cpu_s`. With a `pace`, as an actor's groups (splits) that each wait
  (asleep) for the model's call on their last step."""
  sys.path.insert(0, REPO)
  from seed import config  # pylint: disable=g-import-not-at-top
  from seed.actors import client  # pylint: disable=g-import-not-at-top
  from seed.envs import EnvConfig  # pylint: disable=g-import-not-at-top
  config.parse_gin([gin_file], gin_bindings, skip_unknown=True)
  groups = client.make_env_batches(EnvConfig(), num_envs, len(pace.go[process_id]) if pace
                                   else 1, process_id, 0)
  spec, rng = groups[0].spec, np.random.default_rng(process_id)
  for envs in groups:
    envs.reset()
  local_steps, step_index = 0, 0
  cpu_counted = time.process_time()
  while not stop.is_set():
    group = step_index % len(groups)
    step_index += 1
    if pace is not None:
      waited_from = time.monotonic()
      while not pace.go[process_id][group].acquire(timeout=0.1):
        if stop.is_set():
          return
      with pace.wait_s.get_lock():
        pace.wait_s.value += time.monotonic() - waited_from
    size = groups[group].num_envs
    if spec.is_discrete:
      actions = rng.integers(spec.num_actions, size=size, dtype=np.int32)
    else:
      actions = rng.uniform(spec.action_low, spec.action_high,
                            size=(size, *spec.action_shape)).astype(spec.action_dtype)
    groups[group].step(actions)
    local_steps += size
    # Few shared-counter updates (they cost a lock each), except where the model's calls
    # follow the steps: there each step.
    if local_steps >= 64 or pace is not None:
      now = time.process_time()
      with steps.get_lock():
        steps.value += local_steps
        cpu_s.value += now - cpu_counted
      local_steps, cpu_counted = 0, now
      if pace is not None:
        pace.stepped.put((process_id, group, size))


def call_sizes(envs: int, batch_sizes: List[int]) -> List[int]:
  """The padded sizes of the calls that serve `envs` waiting env steps: as many of the
  largest of `batch_sizes` (ascending) as fill, then the smallest that holds the rest."""
  sizes = [batch_sizes[-1]] * (envs // batch_sizes[-1])
  rest = envs % batch_sizes[-1]
  return sizes + ([next(s for s in batch_sizes if s >= rest)] if rest else [])


def _model_process(gin_file: str, agent: str, gin_bindings: List[str], intra_op_threads: int,
                   batch_sizes: List[int], pace: Pace, ready) -> None:
  """Serves the env processes' steps as they come (`Pace`) with the agent's traced policy
  (bench.model_cost's agent, the learner's thread flag) at the padded batch sizes
  `batch_sizes`, the largest being the most envs a call takes; sets `ready` once warm."""
  sys.path.insert(0, REPO)
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from bench import model_cost  # pylint: disable=g-import-not-at-top
  model = model_cost.build_agent(gin_file, agent, batch_sizes, intra_op_threads, gin_bindings)
  calls = {}
  for size in batch_sizes:
    calls[size] = (model.batched_policy(size),
                   model._example_inputs(size))  # pylint: disable=protected-access
    calls[size][0](*calls[size][1])
  ready.set()
  while True:
    taken = [pace.stepped.get()]
    while not pace.stepped.empty():
      taken.append(pace.stepped.get())
    if None in taken:
      return
    envs = sum(size for _, _, size in taken)
    called = time.monotonic()
    for size in call_sizes(envs, batch_sizes):
      policy, inputs = calls[size]
      # The call's results in NumPy, as the learner waits for them.
      tf.nest.map_structure(lambda t: t.numpy(), policy(*inputs))
      pace.calls.value += 1
    pace.call_s.value += time.monotonic() - called
    pace.call_envs.value += envs
    for process_id, group, _ in taken:
      pace.go[process_id][group].release()


def _windows_rate(samples: List[tuple], start_s: float, window_s: float,
                  windows: int) -> List[float]:
  """Rates over consecutive windows from (time_s, count) samples in time order: between the
  first and last sample inside each window, or, where fewer than two fell inside (a loaded
  machine writes its progress rows late), between the samples just around it."""
  rates = []
  for w in range(windows):
    lo, hi = start_s + w * window_s, start_s + (w + 1) * window_s
    inside = [(t, c) for t, c in samples if lo <= t <= hi]
    if len(inside) < 2 or inside[-1][0] <= inside[0][0]:
      before = [s for s in samples if s[0] <= lo]
      after = [s for s in samples if s[0] >= hi]
      inside = [before[-1], after[0]] if before and after else []
    if len(inside) >= 2 and inside[-1][0] > inside[0][0]:
      rates.append((inside[-1][1] - inside[0][1]) / (inside[-1][0] - inside[0][0]))
  return rates


def _flag_value(flags: List[str], name: str, default: int) -> int:
  """The integer value of the last --`name`=VALUE among `flags` (the learner's or the
  actors' extra flags); `default` when absent."""
  values = [f.split('=', 1)[1] for f in flags if f.startswith(f'--{name}=')]
  return int(values[-1]) if values else default


def measure_env_limit(gin_file: str, frames_per_step: int, num_processes: int, num_envs: int,
                      args, agent: Optional[str] = None) -> Dict[str, float]:
  """The envs alone (the env limit), or with `agent` the envs as actors' splits and that
  agent's policy calls serving them (`Pace`), together: the measured ceiling, which also
  reports its mean batch, a call's wall time and the envs' share of time waiting."""
  ctx = mp.get_context('spawn')
  steps, cpu_s, stop = ctx.Value('q', 0), ctx.Value('d', 0.0, lock=False), ctx.Event()
  pace, started = None, []
  if agent is not None:
    splits = _flag_value(args.actor_flag, 'num_splits', 1)
    pace = Pace(ctx.SimpleQueue(),
                [[ctx.Semaphore(1) for _ in range(splits)] for _ in range(num_processes)],
                ctx.Value('d', 0.0, lock=False), ctx.Value('q', 0, lock=False),
                ctx.Value('q', 0, lock=False), ctx.Value('d', 0.0))
    ready = ctx.Event()
    started.append(ctx.Process(target=_model_process, args=(
        gin_file, agent, args.gin_bindings, _flag_value(args.learner_flag,
                                                         'tf_intra_op_threads', 0),
        padded_batch_sizes(args.inference_batch_size), pace, ready)))
    started[0].start()
    while not ready.wait(1.0):  # TensorFlow's import, the agent and its trace.
      if not started[0].is_alive():
        raise RuntimeError(f'the model process ended ({started[0].exitcode}) before it was '
                           'ready')
  processes = [ctx.Process(target=_env_process, args=(gin_file, args.gin_bindings, num_envs, i,
                                                      steps, cpu_s, stop, pace))
               for i in range(num_processes)]
  for p in processes:
    p.start()
  processes += started
  start = time.monotonic()
  while steps.value == 0:  # imports and env construction
    time.sleep(0.05)
  measure_from = time.monotonic() - start + args.warmup_s
  samples = []  # (time s, frames, env CPU s, (call s, calls, call envs, wait s) or ())
  while time.monotonic() - start < measure_from + args.windows * args.window_s + 0.2:
    with steps.get_lock():
      samples.append((time.monotonic() - start, steps.value * frames_per_step, cpu_s.value,
                      () if pace is None else
                      (pace.call_s.value, pace.calls.value, pace.call_envs.value,
                       pace.wait_s.value)))
    time.sleep(0.1)
  stop.set()
  if pace is not None:
    pace.stepped.put(None)
  for p in processes:
    p.join()
  rates = _windows_rate([(t, frames) for t, frames, _, _ in samples], measure_from,
                        args.window_s, args.windows)
  measured = [sample for sample in samples if sample[0] >= measure_from]
  first, last = measured[0], measured[-1]
  frames = last[1] - first[1]
  result = {'frames_per_s': statistics.median(rates),
            'cpu_s_per_frame': (last[2] - first[2]) / frames if frames > 0 else None}
  if pace is not None:
    call_s, calls, call_envs, wait_s = (b - a for a, b in zip(first[3], last[3]))
    result['model_call_ms'] = 1000 * call_s / max(1, calls)
    result['mean_batch'] = call_envs / max(1, calls)
    result['env_wait_share'] = wait_s / (num_processes * (last[0] - first[0]))
  return result


def model_costs(gin_file: str, agent: str, batch_sizes: List[int],
                learner_flags: List[str]) -> Dict[int, Dict[str, float]]:
  """{padded batch size: {'wall_ms', 'cpu_ms'}} of the policy alone (bench.model_cost),
  in a process with the learner's TensorFlow thread flag."""
  out = subprocess.run(
      [sys.executable, '-m', 'bench.model_cost', f'--gin_file={gin_file}', f'--agent={agent}',
       f'--batch_sizes={",".join(str(b) for b in batch_sizes)}',
       f'--tf_intra_op_threads={_flag_value(learner_flags, "tf_intra_op_threads", 0)}'],
      capture_output=True, text=True, env=processes.child_env(), cwd=REPO, check=True)
  rows = [json.loads(line) for line in out.stdout.splitlines() if line.startswith('{')]
  return {row['batch_size']: row for row in rows}


def compute_aware_ceiling(env_limit_fps: float, env_cpu_s_per_frame: float,
                          model_cost: Dict[str, float], mean_batch: float, frames_per_step: int,
                          cores: int) -> float:
  """Frames/s of `cores` cores doing only env steps and the model's inference at batches
  of `mean_batch` envs, padded to the batch size whose cost is `model_cost` (its
  'cpu_ms' and 'wall_ms' per call); at most the env limit, and at most what one
  inference call at a time (the learner's loop) can serve."""
  frames_per_call = mean_batch * frames_per_step
  model_cpu_s_per_frame = model_cost['cpu_ms'] / 1000 / frames_per_call
  model_wall_s_per_frame = model_cost['wall_ms'] / 1000 / frames_per_call
  return min(env_limit_fps, cores / (env_cpu_s_per_frame + model_cpu_s_per_frame),
             1 / model_wall_s_per_frame)


def measure_learner(gin_file: str, agent: str, num_actors: int, num_envs: int, train: bool,
                    args) -> Dict[str, Optional[float]]:
  """Learner + actors as separate processes, as run_local.sh starts them."""
  with tempfile.TemporaryDirectory(prefix='seed-bench-') as logdir:
    socket_flags, actor_address = (processes.local_socket(logdir, args.learner_flag)
                                   if args.transport == 'unix' else ([], None))
    learner = processes.start_learner(
        logdir, agent, [f'--gin_file={gin_file}', '--progress_interval_s=0.5',
                        *(f'--gin_bindings={b}' for b in args.gin_bindings),
                        '--checkpoint_interval_s=1e9',
                        f'--inference_batch_size={args.inference_batch_size}',
                        '--train' if train else '--notrain'] + socket_flags
        + args.learner_flag)
    actors = []
    try:
      port = processes.wait_for_port(learner, logdir)
      for i in range(num_actors):
        actors.append(processes.start_actor(
            i, num_envs, port,
            [f'--gin_file={gin_file}', f'--stats_file={logdir}/actor_{i}.json',
             *(f'--gin_bindings={b}' for b in args.gin_bindings)] + args.actor_flag,
            address=actor_address))
      progress = os.path.join(logdir, 'progress.csv')
      # Warm-up counts from the first frames, and when training from the first train
      # step: tracing the train step (seconds, more on a loaded machine) is not training.
      started = 'learner_steps' if train else 'env_frames'
      rows = _wait_rows(progress, lambda rs: rs and int(rs[-1][started]) > 0)
      first_frames_s = float(rows[-1]['wall_time_s'])
      end_s = first_frames_s + args.warmup_s + args.windows * args.window_s + 0.6
      rows = _wait_rows(progress, lambda rs: float(rs[-1]['wall_time_s']) >= end_s)
    finally:
      processes.stop(actors)
      processes.stop([learner], timeout_s=120)
    samples = [(float(r['wall_time_s']), int(r['env_frames'])) for r in rows]
    measure_from = first_frames_s + args.warmup_s
    rates = _windows_rate(samples, measure_from, args.window_s, args.windows)
    window_rows = [r for r in rows if float(r['wall_time_s']) >= measure_from]
    batch = [float(r['mean_inference_batch']) for r in window_rows
             if float(r['mean_inference_batch']) > 0]
    steps = [int(r['learner_steps']) for r in window_rows]
    times = [float(r['wall_time_s']) for r in window_rows]
    stats = [json.load(open(f'{logdir}/actor_{i}.json')) for i in range(num_actors)
             if os.path.exists(f'{logdir}/actor_{i}.json')]
    return {
        'frames_per_s': statistics.median(rates) if rates else None,
        # The slow windows: training that starves acting shows here, not in the median.
        'frames_per_s_p10': float(np.percentile(rates, 10)) if rates else None,
        'round_trip_ms_p50': statistics.mean(s['round_trip_ms_p50'] for s in stats)
                             if stats else None,
        'round_trip_ms_p99': max(s['round_trip_ms_p99'] for s in stats) if stats else None,
        'mean_batch': statistics.mean(batch) if batch else None,
        'learner_steps_per_s': ((steps[-1] - steps[0]) / (times[-1] - times[0])
                                if len(steps) >= 2 and times[-1] > times[0] else None),
    }


def _wait_rows(path: str, done, timeout_s: float = 600) -> List[dict]:
  deadline = time.monotonic() + timeout_s
  while time.monotonic() < deadline:
    if os.path.exists(path):
      with open(path) as f:
        rows = list(csv.DictReader(f))
      if done(rows):
        return rows
    time.sleep(0.2)
  raise TimeoutError(f'{path} did not reach the expected state in {timeout_s} s')


def _fmt(value, digits=0) -> str:
  return '—' if value is None else f'{value:,.{digits}f}'


def _ratio(value, base) -> str:
  return f'{100 * value / base:.0f}%' if value and base else '—'


def _parser() -> argparse.ArgumentParser:
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--env', default='atari', help='gin/<env>/<agent>.gin')
  parser.add_argument('--agent', default='vtrace')
  parser.add_argument('--actors', default='1,2,4,8', help='comma-separated actor counts')
  parser.add_argument('--envs', default='1,4,16', help='comma-separated envs per actor')
  parser.add_argument('--modes', default=','.join(MODES))
  parser.add_argument('--warmup_s', type=float, default=10.0)
  parser.add_argument('--window_s', type=float, default=5.0)
  parser.add_argument('--windows', type=int, default=3)
  parser.add_argument('--inference_batch_size', type=int, default=64)
  parser.add_argument('--learner_flag', action='append', default=[],
                      help='extra learner flag, repeatable')
  parser.add_argument('--actor_flag', action='append', default=[],
                      help='extra actor flag, repeatable (e.g. --actor_flag=--num_splits=2)')
  parser.add_argument('--gin_bindings', action='append', default=[],
                      help="gin binding for the env-limit processes, learner and actors, "
                           "repeatable (e.g. \"EnvConfig.backend = 'envpool'\")")
  parser.add_argument('--transport', choices=('unix', 'grpc'), default='unix',
                      help="how the actors reach the learner: its Unix socket, as "
                      "run_local.sh's do (tables before 2026-11-29 used gRPC), or gRPC on "
                      'loopback')
  parser.add_argument('--peer_s', type=float, default=0,
                      help='also run Sample Factory APPO on Pong for this many seconds')
  # Best against best: the default is the best row of Sample Factory's own sweep on the
  # 2-core development machine (`python -m bench.peer_sample_factory --sweep`,
  # docs/performance.md "Best against best"); rerun the sweep on other hardware.
  parser.add_argument('--peer_workers', type=int, default=2,
                      help="Sample Factory's rollout worker processes (its best here: 2)")
  parser.add_argument('--peer_envs_per_worker', type=int, default=16,
                      help="Sample Factory's envs per worker (its best here: 16)")
  parser.add_argument('--peer_warmup_s', type=float, default=40,
                      help="seconds of Sample Factory's run before its reports count")
  parser.add_argument('--out', help='also write the table to this markdown file')
  return parser


def main(argv=None) -> int:
  parser = _parser()
  args = parser.parse_args(argv)

  gin_file = os.path.join(REPO, 'gin', args.env, f'{args.agent}.gin')
  if not os.path.exists(gin_file):
    parser.error(f'no config {gin_file}')
  modes = args.modes.split(',')
  unknown = set(modes) - set(MODES)
  if unknown:
    parser.error(f'unknown modes {sorted(unknown)}; valid: {", ".join(MODES)}')
  frames_per_step = _frames_per_step(gin_file)

  # Which CPU the figures are of: the same command differs by its vector extensions.
  lines = [f'{args.env}/{args.agent}, {hardware.describe()}; frames/s is the median of '
           f'{args.windows} × {args.window_s:g} s windows after {args.warmup_s:g} s warm-up; '
           f'learner flags {args.learner_flag}, actor flags {args.actor_flag}, gin bindings '
           f'{args.gin_bindings}; ceiling: the '
           'compute-aware ceiling (env steps + the model at the mean batch); together: '
           'the ceiling measured, the envs and the model\'s calls at once', '',
           '| actors × envs | env limit | ceiling | inference | / limit | / ceiling | round trip '
           'p50 / p99 (ms) | mean batch | training | / limit | / ceiling | training learner '
           'steps/s | training p10 | / inference | together | inference / together | '
           'training / together |',
           '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|']
  print('\n'.join(lines), flush=True)
  results, together_results, costs = {}, {}, None
  for num_actors in [int(a) for a in args.actors.split(',')]:
    for num_envs in [int(e) for e in args.envs.split(',')]:
      limit = (measure_env_limit(gin_file, frames_per_step, num_actors, num_envs, args)
               if 'env_limit' in modes else {})
      infer = (measure_learner(gin_file, args.agent, num_actors, num_envs, False, args)
               if 'inference' in modes else {})
      together = (measure_env_limit(gin_file, frames_per_step, num_actors, num_envs, args,
                                    agent=args.agent)
                  if 'together' in modes else {})
      train = (measure_learner(gin_file, args.agent, num_actors, num_envs, True, args)
               if 'training' in modes else {})
      ceiling = None
      if limit.get('cpu_s_per_frame') and infer.get('mean_batch'):
        sizes = padded_batch_sizes(args.inference_batch_size)
        costs = costs or model_costs(gin_file, args.agent, sizes, args.learner_flag)
        size = next(s for s in sizes if s >= max(1, round(infer['mean_batch'])))
        ceiling = compute_aware_ceiling(limit['frames_per_s'], limit['cpu_s_per_frame'],
                                        costs[size], infer['mean_batch'], frames_per_step,
                                        os.cpu_count())
      results[(num_actors, num_envs)] = (limit, infer, train)
      together_results[(num_actors, num_envs)] = together
      line = (f'| {num_actors} × {num_envs} | {_fmt(limit.get("frames_per_s"))} | '
              f'{_fmt(ceiling)} | {_fmt(infer.get("frames_per_s"))} | '
              f'{_ratio(infer.get("frames_per_s"), limit.get("frames_per_s"))} | '
              f'{_ratio(infer.get("frames_per_s"), ceiling)} | '
              f'{_fmt(infer.get("round_trip_ms_p50"), 1)} / '
              f'{_fmt(infer.get("round_trip_ms_p99"), 1)} | {_fmt(infer.get("mean_batch"), 1)} | '
              f'{_fmt(train.get("frames_per_s"))} | '
              f'{_ratio(train.get("frames_per_s"), limit.get("frames_per_s"))} | '
              f'{_ratio(train.get("frames_per_s"), ceiling)} | '
              f'{_fmt(train.get("learner_steps_per_s"), 2)} | '
              f'{_fmt(train.get("frames_per_s_p10"))} | '
              f'{_ratio(train.get("frames_per_s_p10"), infer.get("frames_per_s"))} | '
              f'{_fmt(together.get("frames_per_s"))} | '
              f'{_ratio(infer.get("frames_per_s"), together.get("frames_per_s"))} | '
              f'{_ratio(train.get("frames_per_s"), together.get("frames_per_s"))} |')
      lines.append(line)
      print(line, flush=True)
  env_cpu = []
  for (actors, envs), (alone, _, _) in results.items():
    beside = together_results[(actors, envs)]
    if alone.get('cpu_s_per_frame') and beside.get('cpu_s_per_frame'):
      env_cpu.append(f'{actors} × {envs}: {1e6 * alone["cpu_s_per_frame"]:.0f} alone, '
                     f'{1e6 * beside["cpu_s_per_frame"]:.0f} together (their time waiting '
                     f'for the calls {100 * beside["env_wait_share"]:.0f}%, a call '
                     f'{beside["model_call_ms"]:.2f} ms, mean batch '
                     f'{beside["mean_batch"]:.1f})')
  if env_cpu:
    lines += ['', 'The env processes\' CPU per frame (µs), alone and beside the model\'s '
              'calls: ' + '; '.join(env_cpu)]
    print(lines[-1], flush=True)
  if costs:
    lines += ['', 'Model cost (bench.model_cost, the learner\'s thread flags), per call: ' +
              ', '.join(f'batch {size}: {c["cpu_ms"]:.2f} ms CPU / {c["wall_ms"]:.2f} ms wall'
                        for size, c in sorted(costs.items()))]
    print(lines[-1], flush=True)

  lines += _speedup_lines(results)
  if args.peer_s > 0:
    lines += _peer_lines(args, results)
  if args.out:
    with open(args.out, 'w') as f:
      f.write('\n'.join(lines) + '\n')
  return 0


def _speedup_lines(results) -> List[str]:
  """For each envs-per-actor measured with several actor counts: frames/s and the
  speedup over one process, of the env limit and of collection (inference only)."""
  lines = []
  for num_envs in sorted({envs for _, envs in results}):
    counts = sorted(actors for actors, envs in results if envs == num_envs)
    if len(counts) < 2 or counts[0] != 1:
      continue
    one_limit, one_infer, _ = results[(1, num_envs)]
    lines += ['', f'Speedup with actor processes ({num_envs} envs each; collection is '
              'inference only, no training):', '',
              '| actor processes | env limit | × one | collection | × one | collection / limit |',
              '|---:|---:|---:|---:|---:|---:|']
    for count in counts:
      limit, infer, _ = results[(count, num_envs)]
      limit_fps, infer_fps = limit.get('frames_per_s'), infer.get('frames_per_s')
      def times(value, base):
        return f'{value / base:.2f}' if value and base else '—'
      lines.append(
          f'| {count} | {_fmt(limit_fps)} | {times(limit_fps, one_limit.get("frames_per_s"))} | '
          f'{_fmt(infer_fps)} | {times(infer_fps, one_infer.get("frames_per_s"))} | '
          f'{times(infer_fps, limit_fps)} |')
  print('\n'.join(lines), flush=True)
  return lines


def _peer_lines(args, results) -> List[str]:
  """Sample Factory for the same wall time, and the ratio to our best training figure."""
  from bench import peer_sample_factory  # pylint: disable=g-import-not-at-top
  peer = peer_sample_factory.run_sample_factory(
      args.peer_s, args.peer_workers, args.peer_envs_per_worker, args.peer_warmup_s)
  ours = [t['frames_per_s'] for _, _, t in results.values() if t.get('frames_per_s')]
  median, overall = peer['frames_per_s_median'], peer['frames_per_s_overall']
  lines = ['', f'Sample Factory APPO on Pong, {args.peer_workers} workers × '
           f'{args.peer_envs_per_worker} envs, {args.peer_s:g} s: {median:,.0f} frames/s '
           f'(median of its 10-s figures), {overall:,.0f} (overall, after '
           f'{args.peer_warmup_s:g} s), {hardware.describe()}; settings: '
           f'{json.dumps(peer["settings"])}']
  if ours:
    lines.append(f'ours (best training row) / Sample Factory: {max(ours) / median:.2f} by its '
                 f'median figure, {max(ours) / overall:.2f} by its overall one')
  print('\n'.join(lines), flush=True)
  return lines


def _frames_per_step(gin_file: str) -> int:
  code = ('import sys; from seed import config; from seed.envs import EnvConfig, env_spec; '
          f'config.parse_gin([{gin_file!r}], [], skip_unknown=True); '
          'env = EnvConfig().make(0); print(env_spec(env).frames_per_step)')
  out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                       env=processes.child_env(), cwd=REPO, check=True)
  return int(out.stdout.strip().splitlines()[-1])


if __name__ == '__main__':
  sys.exit(main())
