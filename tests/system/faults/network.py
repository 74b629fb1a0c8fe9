"""A bad network between actors and learner: latency, a bandwidth cap, connection
resets and a partition, each in turn, through a fault proxy (network_proxy.py).

V-trace on Catch, 2 actors x 4 envs dialing the learner through the proxy. Phases:
none, latency 100 ± 50 ms each way, a cap of 100 KB/s per direction and connection,
`count` resets (one connection's RST every RESET_GAP_S), a partition of
`partition_s` (every connection black-holed; gRPC's keepalive, 20 + 10 s, is what
notices), and none again. For each phase: env frames/s from the learner's
progress.csv. After the partition: seconds until frames rise again and until both
actor streams are back.

Passes when the learner never exits, frames rise in every phase but the partition,
training is back within RECOVERY_LIMIT_S of the partition's end, frames/s after it
are at least half those before the faults, and no step was counted twice: the
learner's env frames are at least the steps of the episodes it logged and at most
those plus one episode per env per stream opened (an episode cut by a reconnect is
counted, never logged).
"""
import csv
import os
import time
from typing import Dict, List

from tests.system.faults import watch
from tests.system.faults.network_proxy import FaultProxy
from tests.system.faults.outcome import Outcome, Stopwatch
from tests.system.faults.toy_run import ToyRun

CI_COUNT = 4
FULL_COUNT = 15
CI_OPTIONS = {'phase_s': 8.0, 'partition_s': 40.0}

ACTORS, ENVS_PER_ACTOR = 2, 4
LATENCY_S, JITTER_S = 0.1, 0.05
CAP_BYTES_PER_S = 100_000
RESET_GAP_S = 2.0
RECOVERY_LIMIT_S = 60.0
CATCH_EPISODE_STEPS = 10  # the most steps a Catch episode has (its board's rows)
# How far the last progress row (a 0.5 s tick) may trail the episodes logged after it:
# half a second at up to 16,000 frames/s.
PROGRESS_LAG_FRAMES = 8_000


def run(count: int, workdir: str, phase_s: float = 30.0, partition_s: float = 60.0) -> Outcome:
  outcome = Outcome('network', count)
  rates: Dict[str, float] = {}
  with Stopwatch(outcome), ToyRun(os.path.join(workdir, 'run')) as run_:
    port = run_.start_learner()
    with FaultProxy('127.0.0.1', port) as proxy:
      for actor_id in range(ACTORS):
        run_.start_actor(actor_id, ENVS_PER_ACTOR, port=proxy.port)
      run_.wait_progress(lambda rows: int(rows[-1]['actor_streams']) == ACTORS and
                         int(rows[-1]['env_frames']) > 0)

      def phase(name: str, seconds: float, during=None) -> None:
        start = _frames(run_)
        started = time.monotonic()
        while time.monotonic() - started < seconds:
          if during is not None:
            during()
          time.sleep(min(RESET_GAP_S, seconds))
          if run_.learner.poll() is not None:
            raise RuntimeError(f'the learner exited with {run_.learner.returncode}')
        rates[name] = (_frames(run_) - start) / (time.monotonic() - started)

      try:
        phase('none', phase_s)
        proxy.set_faults(delay_s=LATENCY_S, jitter_s=JITTER_S)
        phase('latency', phase_s)
        proxy.set_faults(bytes_per_s=CAP_BYTES_PER_S)
        phase('capped', phase_s)
        proxy.set_faults()
        resets = []
        phase('resets', count * RESET_GAP_S,
              during=lambda: resets.append(proxy.reset_some(0.05)) if len(resets) < count
              else None)
        connections_before = proxy.connections
        proxy.partition(partition_s)
        time.sleep(min(5.0, partition_s / 2))  # what was in flight when it began
        cut_off = _frames(run_)
        time.sleep(partition_s - min(5.0, partition_s / 2))
        at_end = _frames(run_)
        frames_during = at_end - cut_off
        ended = time.monotonic()
        watch.wait_until(lambda: _frames(run_) > at_end + 100 or None,
                         'frames rising after the partition', RECOVERY_LIMIT_S,
                         watched=[run_.learner])
        frames_back_s = time.monotonic() - ended
        run_.wait_progress(lambda rows: int(rows[-1]['actor_streams']) == ACTORS,
                           timeout_s=RECOVERY_LIMIT_S)
        streams_back_s = time.monotonic() - ended
        phase('after', phase_s)
      except (RuntimeError, TimeoutError) as e:
        outcome.fail(str(e))
        return outcome
      opened = proxy.connections
  if frames_during > 0:
    outcome.fail(f'{frames_during:,} frames arrived during the partition: it let traffic by')
  _check(outcome, rates, run_.logdir, opened)
  outcome.figures.update({f'frames_per_s_{name}': f'{rate:,.0f}' for name, rate in rates.items()})
  outcome.figures.update({
      'resets': str(sum(resets)), 'partition_s': f'{partition_s:.0f}',
      'frames_during_partition': f'{frames_during:,}',
      'frames_back_s': f'{frames_back_s:.1f}', 'streams_back_s': f'{streams_back_s:.1f}',
      'connections_opened': str(opened),
      'reconnects_after_partition': str(opened - connections_before)})
  return outcome


def _frames(run_: ToyRun) -> int:
  rows = run_.rows()
  return int(rows[-1]['env_frames']) if rows else 0


def _check(outcome: Outcome, rates: Dict[str, float], logdir: str, opened: int) -> None:
  for name, rate in rates.items():
    if rate <= 0:
      outcome.fail(f'no frames during phase {name!r}')
  if rates.get('after', 0) < 0.5 * rates.get('none', 0):
    outcome.fail(f'{rates["after"]:,.0f} frames/s after the faults, under half the '
                 f'{rates["none"]:,.0f} before')
  frames = int(watch.progress_rows(logdir)[-1]['env_frames'])
  steps = _episode_steps(logdir)
  # One cut episode per env of each stream opened, and the episodes under way at the end.
  slack = (opened + ACTORS) * ENVS_PER_ACTOR * CATCH_EPISODE_STEPS
  outcome.figures['frames_not_in_episodes'] = f'{frames - sum(steps):,}'
  if sum(steps) > frames + PROGRESS_LAG_FRAMES:
    outcome.fail(f'episodes hold {sum(steps):,} steps, more than the {frames:,} frames counted')
  if frames - sum(steps) > slack:
    outcome.fail(f'{frames:,} frames counted, {frames - sum(steps):,} more than the steps of '
                 f'the episodes logged; at most {slack:,} can be cut off by {opened} streams')


def _episode_steps(logdir: str) -> List[int]:
  with open(os.path.join(logdir, 'episodes.csv'), newline='') as f:
    return [int(row['episode_steps']) for row in csv.DictReader(f)]
