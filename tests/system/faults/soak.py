"""Soak: 64 envs across actor processes trained for `count` minutes (by hand, not CI).

After WARMUP_S, the learner's resident memory must stay within ±10% of its
value at the end of the warm-up, and its threads and file descriptors must not
grow. Writes <workdir>/soak.csv (one row per SAMPLE_S) and <workdir>/rss.svg
(the plot docs/reliability.md shows).

  python -m tests.system.faults soak --count 30 --workdir /tmp/soak
"""
import csv
import os
import time

from tests.system.faults import watch
from tests.system.faults.outcome import Outcome, Stopwatch
from tests.system.faults.toy_run import ToyRun

CI_COUNT = 2      # minutes
FULL_COUNT = 30

ACTORS, ENVS_PER_ACTOR = 8, 8  # 64 envs
WARMUP_S = 300.0
SAMPLE_S = 5.0
RSS_BAND = 0.10
THREAD_GROWTH = 4
FD_GROWTH = 8


def run(count: int, workdir: str) -> Outcome:
  outcome = Outcome('soak', count)
  duration_s = 60.0 * count
  warmup_s = min(WARMUP_S, duration_s / 2)
  rows = []
  with Stopwatch(outcome), ToyRun(os.path.join(workdir, 'run')) as run_:
    run_.start_learner()
    for actor_id in range(ACTORS):
      run_.start_actor(actor_id, ENVS_PER_ACTOR)
    run_.wait_progress(lambda r: int(r[-1]['connected_envs']) == ACTORS * ENVS_PER_ACTOR)
    start = time.monotonic()
    while time.monotonic() - start < duration_s:
      sample = watch.sample_process(run_.learner.pid)
      if sample is None or run_.learner.poll() is not None:
        outcome.fail(f'the learner exited with {run_.learner.poll()}:\n{run_.learner_log()}')
        break
      progress = run_.rows()[-1]
      rows.append({'elapsed_s': round(sample.t - start, 1), 'rss_mb': round(sample.rss_mb, 1),
                   'threads': sample.threads, 'fds': sample.fds,
                   'env_frames': int(progress['env_frames']),
                   'connected_envs': int(progress['connected_envs'])})
      time.sleep(SAMPLE_S)
  os.makedirs(workdir, exist_ok=True)
  with open(os.path.join(workdir, 'soak.csv'), 'w', newline='') as f:
    writer = csv.DictWriter(f, fieldnames=list(rows[0]) if rows else ['elapsed_s'])
    writer.writeheader()
    writer.writerows(rows)
  settled = [r for r in rows if r['elapsed_s'] >= warmup_s]
  if len(settled) < 2:
    outcome.fail('too few samples after the warm-up')
    return outcome
  base, rss = settled[0], [r['rss_mb'] for r in settled]
  low, high = min(rss), max(rss)
  frames_per_s = (rows[-1]['env_frames'] - rows[0]['env_frames']) / max(rows[-1]['elapsed_s'], 1)
  outcome.figures.update({
      'envs': str(ACTORS * ENVS_PER_ACTOR), 'frames_per_s': f'{frames_per_s:,.0f}',
      'rss_mb_after_warmup': f'{base["rss_mb"]:.0f} (min {low:.0f}, max {high:.0f}, '
                             f'end {rss[-1]:.0f})',
      'threads': f'{base["threads"]} -> {settled[-1]["threads"]}',
      'fds': f'{base["fds"]} -> {settled[-1]["fds"]}'})
  if high > base['rss_mb'] * (1 + RSS_BAND) or low < base['rss_mb'] * (1 - RSS_BAND):
    outcome.fail(f'RSS left ±{RSS_BAND:.0%} of {base["rss_mb"]:.0f} MB after the warm-up: '
                 f'{low:.0f}-{high:.0f} MB')
  if settled[-1]['threads'] - base['threads'] > THREAD_GROWTH:
    outcome.fail(f'threads grew: {base["threads"]} -> {settled[-1]["threads"]}')
  if settled[-1]['fds'] - base['fds'] > FD_GROWTH:
    outcome.fail(f'file descriptors grew: {base["fds"]} -> {settled[-1]["fds"]}')
  _write_svg(os.path.join(workdir, 'rss.svg'), rows, warmup_s)
  return outcome


def _write_svg(path: str, rows, warmup_s: float, width: int = 640, height: int = 240) -> None:
  """RSS (MB) against minutes as a plain SVG line; the warm-up's end is marked."""
  pad = 40
  t_max = max(r['elapsed_s'] for r in rows) or 1.0
  top = max(r['rss_mb'] for r in rows) * 1.1

  def x(t):
    return pad + (width - 2 * pad) * t / t_max

  def y(mb):
    return height - pad - (height - 2 * pad) * mb / top
  points = ' '.join(f'{x(r["elapsed_s"]):.1f},{y(r["rss_mb"]):.1f}' for r in rows)
  ticks = ''.join(
      f'<text x="{pad - 4}" y="{y(mb):.0f}" text-anchor="end" font-size="10">{mb:.0f}</text>'
      for mb in (0, top / 2, top / 1.1))
  with open(path, 'w') as f:
    f.write(
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}">'
        f'<rect width="100%" height="100%" fill="white"/>'
        f'<line x1="{x(warmup_s):.1f}" y1="{pad}" x2="{x(warmup_s):.1f}" y2="{height - pad}" '
        f'stroke="#bbb" stroke-dasharray="4"/>'
        f'<polyline points="{points}" fill="none" stroke="#1f77b4" stroke-width="1.5"/>'
        f'<text x="{width / 2}" y="{height - 8}" text-anchor="middle" font-size="11">'
        f'minutes (0 - {t_max / 60:.0f}); dashed: end of warm-up</text>'
        f'<text x="12" y="{pad - 12}" font-size="11">learner RSS, MB</text>{ticks}</svg>\n')
