"""Actor deaths: actors SIGKILLed at random moments of a V-trace run, each replaced by a
new process with a new id (as a supervisor would start one).

Passes when the learner never exits, env frames keep rising to the end, the
learner holds state for exactly the live envs once the last replacement is in
(its progress.csv's connected_envs and actor_streams), and its threads and file
descriptors do not grow with the deaths; past 50 deaths its memory must not grow
by more than RSS_PER_DEATH_KB per death (below that, allocator noise dominates).
"""
import os
import random
import time

from tests.system.faults import watch
from tests.system.faults.outcome import Outcome, Stopwatch
from tests.system.faults.toy_run import ToyRun

CI_COUNT = 10
FULL_COUNT = 100

LIVE_ACTORS = 4
ENVS_PER_ACTOR = 2
MIN_GAP_S, MAX_GAP_S = 0.2, 1.5  # between two deaths
RSS_PER_DEATH_KB = 200
THREAD_GROWTH = 8
FD_GROWTH = 16


def run(count: int, workdir: str, seed: int = 0) -> Outcome:
  rng = random.Random(seed)
  outcome = Outcome('actor_deaths', count)
  live_envs = LIVE_ACTORS * ENVS_PER_ACTOR
  with Stopwatch(outcome), ToyRun(os.path.join(workdir, 'run')) as run_:
    run_.start_learner()
    for actor_id in range(LIVE_ACTORS):
      run_.start_actor(actor_id, ENVS_PER_ACTOR)
    run_.wait_progress(lambda rows: _connected(rows[-1]) == (LIVE_ACTORS, live_envs) and
                       int(rows[-1]['env_frames']) > 0)
    with watch.ProcessSampler(run_.learner.pid) as sampler:
      time.sleep(2.0)
      start, start_rows = sampler.samples[-1], run_.rows()
      next_id = LIVE_ACTORS
      for _ in range(count):
        time.sleep(rng.uniform(MIN_GAP_S, MAX_GAP_S))
        if run_.learner.poll() is not None:
          break
        run_.kill_actor(rng.choice(run_.live_actors()))
        run_.start_actor(next_id, ENVS_PER_ACTOR)
        next_id += 1
      kill_rows = run_.rows()
      try:  # All replacements connected, nothing else held, and frames still rising.
        end_rows = run_.wait_progress(
            lambda rows: len(rows) > len(kill_rows) + 2 and
            _connected(rows[-1]) == (LIVE_ACTORS, live_envs) and
            int(rows[-1]['env_frames']) > int(rows[-3]['env_frames']), timeout_s=60)
      except (TimeoutError, RuntimeError) as e:
        outcome.fail(f'after the last death: {e}')
        end_rows = run_.rows()
      time.sleep(1.0)
      end = sampler.samples[-1]
    if run_.learner.poll() is not None:
      outcome.fail(f'the learner exited with {run_.learner.returncode}:\n{run_.learner_log()}')
  _report(outcome, count, start, end, start_rows, kill_rows, end_rows)
  return outcome


def _connected(row: dict):
  return int(row['actor_streams']), int(row['connected_envs'])


def _report(outcome, count, start, end, start_rows, kill_rows, end_rows) -> None:
  frames_start = int(start_rows[-1]['env_frames'])
  frames_end = int(end_rows[-1]['env_frames'])
  during = kill_rows[len(start_rows):]
  stall_s = _longest_stall_s(during)
  rss_growth_kb = 1024 * (end.rss_mb - start.rss_mb)
  outcome.figures.update({
      'env_frames': f'{frames_start:,} -> {frames_end:,}',
      'longest_stall_s': f'{stall_s:.1f}',
      'streams/envs_at_end': '{}/{}'.format(*_connected(end_rows[-1])),
      'rss_mb': f'{start.rss_mb:.0f} -> {end.rss_mb:.0f}',
      'rss_kb_per_death': f'{rss_growth_kb / max(count, 1):.0f}',
      'threads': f'{start.threads} -> {end.threads}',
      'fds': f'{start.fds} -> {end.fds}'})
  if frames_end <= frames_start:
    outcome.fail(f'env frames did not rise: {frames_start} -> {frames_end}')
  if end.threads - start.threads > THREAD_GROWTH:
    outcome.fail(f'learner threads grew from {start.threads} to {end.threads}')
  if end.fds - start.fds > FD_GROWTH:
    outcome.fail(f'learner file descriptors grew from {start.fds} to {end.fds}')
  if count >= 50 and rss_growth_kb > RSS_PER_DEATH_KB * count:
    outcome.fail(f'learner memory grew {rss_growth_kb / 1024:.1f} MB over {count} deaths '
                 f'(more than {RSS_PER_DEATH_KB} KB each)')


def _longest_stall_s(rows) -> float:
  """The longest time between two progress rows in which no env frame was added."""
  longest, since = 0.0, None
  for previous, row in zip(rows, rows[1:]):
    if int(row['env_frames']) > int(previous['env_frames']):
      since = None
      continue
    since = since if since is not None else float(previous['wall_time_s'])
    longest = max(longest, float(row['wall_time_s']) - since)
  return longest
