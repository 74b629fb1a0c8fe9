"""Actor round-trip latency over loopback and across a veth pair, both with TLS.

  python -m bench.round_trip                       # toy/vtrace (CartPole), 1 actor x 1,4,16 envs
  python -m bench.round_trip --env atari --envs 4 --steps 1000

Two "hosts" are network namespaces A and B joined by a veth pair (198.18.0.4/30, the
benchmarking range; needs root), made and started as the multi-host test does
(tests.processes: netns_pair, Run with `ip netns exec` prefixes). For each (actors × envs) and each path an
inference-only learner (--notrain) with TLS and a token runs in A:
  loopback  learner on 127.0.0.1 in A, actors in A;
  veth      learner on A's veth address, actors in B.
A warm-up actor takes --warmup_steps first (TensorFlow traces its functions), then the
measured actors take --steps steps each and exit; round trip is per step of one actor
(send k observations, get k actions), from each actor's --stats_file: the mean over
actors of their p50 and the worst p99, as in bench.throughput.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from typing import Dict, List

from seed.process import local_processes as processes
from tests.processes import Certs, NetnsPair, NetnsUnavailable, Run, make_certs, netns_exec
from tests.processes import netns_pair

from bench import hardware

PATHS = ('loopback', 'veth')


def measure(path: str, hosts: NetnsPair, certs: Certs, num_actors: int, num_envs: int,
            args) -> Dict[str, float]:
  """p50/p99 round trip of `num_actors` actors with `num_envs` envs each on `path`."""
  host, actor_ns = (('127.0.0.1', hosts.a) if path == 'loopback'
                    else (hosts.address_a, hosts.b))
  gin_file = os.path.join('gin', args.env, f'{args.agent}.gin')
  with tempfile.TemporaryDirectory(prefix='seed-round-trip-') as logdir:
    with Run(logdir, gin_file, agent=args.agent, gin_bindings=args.gin_bindings,
             learner_flags=['--notrain', '--checkpoint_interval_s=1e9'] + certs.learner_flags,
             host=host, learner_prefix=netns_exec(hosts.a), actor_prefix=netns_exec(actor_ns),
             actor_flags=certs.actor_flags) as run:
      run.start_learner()
      _wait_all(run.start_actors(1, num_envs, extra_flags=[f'--max_steps={args.warmup_steps}']),
                run)
      measured = []
      for actor_id in range(1, num_actors + 1):
        measured += run.start_actors(1, num_envs, first_id=actor_id, extra_flags=[
            f'--max_steps={args.steps}', f'--stats_file={_stats_path(logdir, actor_id)}'])
      _wait_all(measured, run)
      stats = []
      for actor_id in range(1, num_actors + 1):
        with open(_stats_path(logdir, actor_id)) as f:
          stats.append(json.load(f))
  return {'p50': statistics.mean(s['round_trip_ms_p50'] for s in stats),
          'p99': max(s['round_trip_ms_p99'] for s in stats)}


def _repeated(hosts: NetnsPair, certs: Certs, num_actors: int, num_envs: int,
              args) -> Dict[str, Dict[str, float]]:
  """Medians over --repeats runs of each path, alternating which goes first (a busy
  machine's load then falls on both paths alike)."""
  runs = {path: [] for path in PATHS}
  for repeat in range(args.repeats):
    for path in (PATHS if repeat % 2 == 0 else PATHS[::-1]):
      runs[path].append(measure(path, hosts, certs, num_actors, num_envs, args))
  return {path: {key: statistics.median(r[key] for r in results) for key in ('p50', 'p99')}
          for path, results in runs.items()}


def _stats_path(logdir: str, actor_id: int) -> str:
  return os.path.join(logdir, f'actor_{actor_id}.json')


def _wait_all(actors: List[subprocess.Popen], run: Run, timeout_s: float = 600) -> None:
  """Waits for actors that stop by themselves (--max_steps); raises on a failure."""
  for actor in actors:
    if actor.wait(timeout=timeout_s) != 0:
      raise RuntimeError(f'an actor exited with {actor.returncode}; learner log:\n'
                         f'{run.learner_log()}')


def _fmt(result: Dict[str, float]) -> str:
  return f'{result["p50"]:.2f} / {result["p99"]:.2f}' if result else '—'


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--env', default='toy', help='gin/<env>/<agent>.gin')
  parser.add_argument('--agent', default='vtrace')
  parser.add_argument('--gin_bindings', action='append', default=[],
                      help="repeatable, e.g. --gin_bindings=\"EnvConfig.name='Catch'\"")
  parser.add_argument('--actors', default='1', help='comma-separated actor counts')
  parser.add_argument('--envs', default='1,4,16', help='comma-separated envs per actor')
  parser.add_argument('--steps', type=int, default=3000, help='measured steps per actor')
  parser.add_argument('--warmup_steps', type=int, default=200)
  parser.add_argument('--repeats', type=int, default=1,
                      help='runs of each path; the table shows medians')
  parser.add_argument('--out', help='also write the table to this markdown file')
  args = parser.parse_args(argv)
  if not os.path.exists(os.path.join(processes.REPO, 'gin', args.env, f'{args.agent}.gin')):
    parser.error(f'no config gin/{args.env}/{args.agent}.gin')

  lines = [hardware.describe(),
           f'{args.env}/{args.agent} {args.gin_bindings or ""}, {os.cpu_count()} CPUs, '
           f'inference only (--notrain), TLS + token on both paths; round trip per actor step '
           f'over {args.steps} steps after {args.warmup_steps} warm-up steps: mean p50 / '
           f'worst p99 over actors, median of {args.repeats} run(s) per path', '',
           '| actors × envs | loopback p50 / p99 (ms) | veth p50 / p99 (ms) '
           '| veth − loopback p50 (ms) |',
           '|---|---|---|---|']
  print('\n'.join(lines), flush=True)
  try:
    with tempfile.TemporaryDirectory(prefix='seed-round-trip-certs-') as cert_dir, \
         netns_pair(subnet=1) as hosts:
      certs = make_certs(cert_dir, hosts.address_a, '127.0.0.1')
      for num_actors in [int(a) for a in args.actors.split(',')]:
        for num_envs in [int(e) for e in args.envs.split(',')]:
          results = _repeated(hosts, certs, num_actors, num_envs, args)
          line = (f'| {num_actors} × {num_envs} | {_fmt(results["loopback"])} | '
                  f'{_fmt(results["veth"])} | '
                  f'{results["veth"]["p50"] - results["loopback"]["p50"]:+.2f} |')
          lines.append(line)
          print(line, flush=True)
  except NetnsUnavailable as e:
    print(f'cannot make network namespaces here ({e}); run as root', file=sys.stderr)
    return 2
  if args.out:
    with open(args.out, 'w') as f:
      f.write('\n'.join(lines) + '\n')
  return 0


if __name__ == '__main__':
  sys.exit(main())
