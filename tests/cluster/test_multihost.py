"""A learner and its actors on two "hosts": network namespaces joined by a veth pair.

The learner listens on its namespace's veth address with TLS and a token, as on a real
cluster; two actor processes in the other namespace dial it. bench.round_trip, which
compares loopback with such a veth pair, runs once with a tiny budget. Needs root (or
CAP_NET_ADMIN) for `ip netns add`, and skips where that is refused.
"""
import csv
import os
import re
import subprocess
import sys
import time

import pytest

from tests.processes import LOG_TAIL_CHARS, REPO, Run, _env, make_certs, netns_exec
from tests.learning_runs import first_solved

pytestmark = pytest.mark.timeout(900)


def test_actors_in_another_namespace_train_catch_over_tls(tmp_path, hosts):
  certs = make_certs(tmp_path / 'certs', hosts.address_a)
  # Catch returns are +-1: a 100-episode window keeps a lucky streak from counting.
  target, window, max_frames = 0.9, 100, 300_000
  with Run(tmp_path / 'run', 'gin/toy/vtrace.gin', gin_bindings=["EnvConfig.name='Catch'"],
           learner_flags=[f'--target_return={target}', f'--max_env_frames={max_frames}',
                          f'--return_window={window}'] + certs.learner_flags,
           host=hosts.address_a, learner_prefix=netns_exec(hosts.a),
           actor_prefix=netns_exec(hosts.b), actor_flags=certs.actor_flags) as run:
    started = time.monotonic()
    run.start_learner()
    run.start_actors(2, 4)
    assert run.wait_learner(timeout_s=840) == 0, run.learner_log()
    learner_s = time.monotonic() - started
    episodes = run.episodes()
    learner_log = run.learner_log(tail_chars=None)
    actor_logs = [run.actor_log(i, tail_chars=None) for i in range(2)]
  # The learner served TLS on the veth address; namespace B reaches that only over the veth.
  assert f'learner listening on {hosts.address_a}:0 (port {run.port}, TLS)' in learner_log, (
      learner_log[:LOG_TAIL_CHARS])
  for log in actor_logs:
    assert 'connected to learner' in log, log[:LOG_TAIL_CHARS]
  frames, mean_return = first_solved(episodes, target, window, label='Catch across namespaces')
  print(f'solved at {_wall_time_s(run.logdir, frames):.1f} s of the learner\'s clock; '
        f'learner process ran {learner_s:.1f} s from launch to exit')
  assert mean_return >= target, f'best mean return over {window} episodes: {mean_return}'
  assert frames <= max_frames


def _wall_time_s(logdir, frames):
  """The learner's wall time (episodes.csv) at the first episode at or past `frames`."""
  with open(os.path.join(logdir, 'episodes.csv')) as f:
    rows = list(csv.DictReader(f))
  return next(float(r['wall_time_s']) for r in rows if int(r['env_frames']) >= frames)


def test_round_trip_benchmark_prints_both_paths(tmp_path, hosts):
  del hosts  # Only its skip: the benchmark makes namespaces of its own.
  out = tmp_path / 'table.md'
  result = subprocess.run(
      [sys.executable, '-m', 'bench.round_trip', '--envs=2', '--steps=50', '--warmup_steps=20',
       f'--out={out}'], capture_output=True, text=True, env=_env(), cwd=REPO, timeout=280)
  assert result.returncode == 0, result.stdout + result.stderr
  row = next(line for line in out.read_text().splitlines() if line.startswith('| 1 × 2 |'))
  cells = [c.strip() for c in row.strip('|').split('|')]
  for cell in cells[1:3]:  # loopback and veth: p50 / p99, both measured
    assert re.fullmatch(r'\d+\.\d\d / \d+\.\d\d', cell), row
