"""bench.time_to_target without the peers installed: the episode files each peer's
launcher writes and how they are added up, seed's episodes on the launch's clock, the
table (a "not by" row among others), the curve file, and a missing and a crashing peer
beside one that reaches the target. Stand-in commands play the peers; no figure is
checked against a time.

Tests never import bench (tests/unit/test_layering.py): bench code runs in a child
process, as in test_bench_smoke.py.
"""
import csv
import json
import os
import subprocess
import sys
import textwrap
import time

import pytest

from tests.processes import REPO, _env

pytestmark = pytest.mark.timeout(240)


def bench_value(statements: str, cwd: str = REPO):
  """Runs `statements` in a child process (bench importable) and returns the JSON value
  they assign to `value`."""
  code = 'import json, sys\n' + textwrap.dedent(statements) + '\nprint(json.dumps(value))'
  result = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                          env=_env(), cwd=cwd, timeout=200)
  assert result.returncode == 0, result.stdout + result.stderr
  return json.loads(result.stdout.splitlines()[-1])


def _write_env_file(path, lines):
  with open(path, 'w') as f:
    f.write('wall_epoch_s,env_frames,episode_return\n')
    for t, frames, value in lines:
      f.write(f'{t},{frames},{"" if value is None else value}\n')


def test_sample_factory_workers_files_add_up_every_envs_frames(tmp_path):
  # Two rollout workers (processes 11 and 12) with two envs each, each env 100 frames/s
  # from t=1000; an env's episode at t ends when all four have played 4 x its frames.
  for pid in (11, 12):
    for n in range(2):
      start = 1000.0 + 0.01 * n
      _write_env_file(tmp_path / f'env_{pid}_{n}.csv',
                      [(start, 0, None), (start + 5, 500, -21), (start + 10, 1000, None)])
  # A line still being written (no newline yet) is left for the next read.
  with open(tmp_path / 'env_11_0.csv', 'a') as f:
    f.write('1011.0,1100')
  value = bench_value(f"""
from bench import peer_episodes
snap = peer_episodes.read_episodes({str(tmp_path)!r}, lambda epoch_s: epoch_s - 998.0)
value = [snap.episodes, snap.env_frames, snap.last_epoch_s]""")
  episodes, total, last = value
  assert len(episodes) == 4 and total == 4000 and last == pytest.approx(1010.01)
  frames, wall_s, episode_return = episodes[0]
  # At 1005.0 the envs started 0.01 s later have played 499 frames: 500 + 499 + 500 + 499.
  assert frames == 1998 and wall_s == pytest.approx(7.0) and episode_return == -21
  assert [e[0] for e in episodes] == sorted(e[0] for e in episodes)


def test_rl_zoo_and_sample_factory_envs_are_logged_through_gymnasium_make(tmp_path):
  # The launcher patches both ways a peer makes an env: gymnasium.make (Sample
  # Factory's make_atari_env) and EnvSpec.make (RL Zoo's create_envs). Real Pong, random
  # actions until each game ends: frames are emulator frames, the return unclipped.
  value = bench_value(f"""
import os
os.environ['SEED_BENCH_EPISODE_DIR'] = {str(tmp_path)!r}
sys.path.insert(0, 'bench')
import peer_launch  # As a peer's interpreter runs it: a script, not bench's package.
import gymnasium
from bench import peer_episodes
envs = [gymnasium.make('PongNoFrameskip-v4'),
        gymnasium.spec('PongNoFrameskip-v4').make(),
        gymnasium.make('CartPole-v1')]  # not Atari: left alone
steps = []
for env in envs[:2]:
  env.reset(seed=0)
  env.action_space.seed(0)
  n, total, done = 0, 0.0, False
  while not done:
    _, reward, terminated, truncated, _ = env.step(env.action_space.sample())
    n, total, done = n + 1, total + reward, terminated or truncated
  steps.append((n, total))
  env.close()
snap = peer_episodes.read_episodes({str(tmp_path)!r}, lambda epoch_s: epoch_s)
value = [steps, [[e.env_frames, e.episode_return] for e in snap.episodes], snap.env_frames,
         sorted(os.listdir({str(tmp_path)!r})), type(envs[2]).__name__]""")
  steps, episodes, total, files, cartpole = value
  assert len(files) == 2 and cartpole != 'EpisodeLog'
  assert sorted(e[1] for e in episodes) == sorted(t for _, t in steps)
  assert all(-21 <= t <= -15 for _, t in steps)
  assert total == sum(n for n, _ in steps)  # NoFrameskip: one frame a step
  # Each episode's frames: its own env's plus what the other had played by then.
  assert max(e[0] for e in episodes) == total


def test_seed_episodes_are_timed_on_the_run_clock_over_its_sittings(tmp_path):
  # Two sittings: launched at 1,000,000 and stopped at +200 s; launched again at
  # 1,005,000 (the gap does not count) and stopped at +100 s. Each learner starts its
  # clock 30 s and 20 s after its launch; the second resumed from a checkpoint at 6,000
  # frames, so the first's episode that ended at 8,000 was thrown away.
  run = tmp_path / 'run'
  run.mkdir()
  (run / 'episodes.csv').write_text(
      'env_frames,episode_return,episode_steps,wall_time_s\n'
      '4000,-21,1000,100.0\n8000,-20,1000,150.0\n'   # the first learner
      '7000,-19,1000,40.0\n')                          # the second, from 6,000 frames
  (run / 'segments.json').write_text(json.dumps({'segments': [
      {'start_epoch_s': 1_000_000.0, 'end_epoch_s': 1_000_200.0,
       'clock_start_epoch_s': 1_000_030.0},
      {'start_epoch_s': 1_005_000.0, 'end_epoch_s': 1_005_100.0,
       'clock_start_epoch_s': 1_005_020.0}], 'outcome': None}))
  value = bench_value(f"""
from bench import time_to_target_runs as runs
from bench.time_to_target_segments import Segments
segments = Segments({str(run)!r})
value = [runs.seed_episodes({str(run)!r}, segments), segments.elapsed_s(),
         segments.bench_s(1_002_000.0)]""")
  episodes, elapsed_s, in_the_gap_s = value
  assert episodes == [[4000, pytest.approx(130.0), -21.0], [7000, pytest.approx(260.0), -19.0]]
  assert elapsed_s == pytest.approx(300.0) and in_the_gap_s == pytest.approx(200.0)


def test_the_clock_start_is_read_off_the_last_write(tmp_path):
  # The learner's clock starts after the launch; its file's last write (mtime) less the
  # last line's time is that start: here 30 s after the launch. A file last written
  # before the segment began belongs to an earlier learner: no start yet.
  run = tmp_path / 'run'
  run.mkdir()
  episodes = run / 'episodes.csv'
  episodes.write_text('env_frames,episode_return,episode_steps,wall_time_s\n'
                      '4000,-21,1000,100.0\n8000,-20,1000,150.0\n')
  os.utime(episodes, (1_000_000.0, 1_000_000.0))  # written at 1,000,000 = start + 150
  value = bench_value(f"""
from bench import time_to_target_runs as runs
value = [runs._clock_start({str(run)!r}, 1_000_000.0 - 150 - 30),
         runs._clock_start({str(run)!r}, 1_000_001.0)]""")
  assert value == [pytest.approx(1_000_000.0 - 150), None]


def test_the_table_has_a_row_for_every_system_and_says_not_by_its_cap(tmp_path):
  out = tmp_path / 'curves.csv'
  value = bench_value(f"""
from bench import time_to_target_report as report
from bench.peer_episodes import Episode
caps = report.Caps(wall_s=4 * 3600, frames=20_000_000, target=18, window=2)
climbs = [Episode(1_000_000 * i, 600.0 * i, float(r)) for i, r in
          enumerate([-21, 10, 17, 19, 20, 21], start=1)]   # +18 at 4M frames, 40 min
flat = [Episode(1_000_000 * i, 700.0 * i, -20.0) for i in range(1, 20)]
results = [
  report.Result('fast', 'a.gin', '2 × 4', 'reached', climbs, 6_000_000, 3700.0),
  report.Result('slow', 'its own', '2 × 16', 'cap', flat, 19_500_000, 14400.0, 'wall'),
  report.Result('long', 'its own', '1 × 8', 'cap', flat, 20_000_000, 9000.0, 'frames'),
  report.Result('broken', 'its own', '1 × 8', 'crashed', flat[:3], 3_100_000, 2100.0,
                detail='exit 1; peer.log:\\nTraceback\\nValueError: boom'),
  report.Result('absent', 'its own', '1 × 8', 'not installed',
                detail='install: python -m bench.peer_venv absent'),
]
lines = report.table(results, caps, 'CPU: Test CPU, 2 cores; avx2 yes, amx no')
kept = report.write_curves({str(out)!r}, results)
value = [lines, kept, report.reached_at(climbs, 18, 2)]""")
  lines, kept, hit = value
  assert hit == [4_000_000, 2400.0, 19.0] and kept == []
  assert 'CPU: Test CPU, 2 cores; avx2 yes, amx no' in lines[0]
  rows = {line.split('|')[1].strip(): [c.strip() for c in line.strip('|').split('|')]
          for line in lines if line.startswith('| ') and not line.startswith('| system')}
  assert rows['fast'][3:6] == ['4.00M', '40.0 min', '1,667']
  assert rows['fast'][6] == '+20.50 (6 episodes)'
  assert rows['slow'][3].startswith('not by 4.00 h') and rows['slow'][4].startswith('not by 4.00 h')
  assert rows['long'][3] == 'not by 20.00M frames (20.00M played)'
  assert rows['broken'][3] == 'crashed at 3.10M' and rows['absent'][3] == 'not installed'
  text = '\n'.join(lines)
  assert 'broken (crashed):' in text and 'ValueError: boom' in text
  assert 'python -m bench.peer_venv absent' in text
  with open(out, newline='') as f:
    saved = list(csv.reader(f))
  assert saved[0] == ['label', 'role', 'seed', 'env_frames', 'wall_s', 'episode_return']
  assert saved[1] == ['fast', 'run', '0', '1000000', '600.0', '-21']
  assert {row[0] for row in saved[1:]} == {'fast', 'slow', 'long', 'broken'}
  assert len(saved) == 1 + 6 + 19 + 19 + 3
  # seed plot draws it as it draws any curve file.
  png = tmp_path / 'curves.png'
  drawn = subprocess.run([sys.executable, '-m', 'seed', 'plot', str(out), '--out', str(png)],
                         capture_output=True, text=True, env=_env(), cwd=REPO, timeout=120)
  assert drawn.returncode == 0 and png.stat().st_size > 0, drawn.stderr


# Stand-ins for peers, run as run_command runs a peer (its own process group, the episode
# folder in SEED_BENCH_EPISODE_DIR). Each writes its pid first, to check it was stopped.
_STAND_IN = '''
import os, sys, time
open(os.path.join(os.getcwd(), 'pid'), 'w').write(str(os.getpid()))
folder = os.environ['SEED_BENCH_EPISODE_DIR']
episode_return = float(sys.argv[1])
with open(os.path.join(folder, 'env_1_0.csv'), 'w') as f:
  start = time.time()
  f.write('wall_epoch_s,env_frames,episode_return\\n' + f'{start},0,\\n')
  for i in range(1, 31):
    f.write(f'{start + 0.01 * i},{1000 * i},{episode_return}\\n')
if episode_return < -100:
  print('stand-in: something broke', flush=True)
  sys.exit(3)
time.sleep(120)
'''


def test_a_missing_and_a_crashing_peer_are_reported_and_the_others_run(tmp_path):
  script = tmp_path / 'stand_in.py'
  script.write_text(_STAND_IN)
  csv_path, png_path = tmp_path / 'ttt.csv', tmp_path / 'ttt.png'
  value = bench_value(f"""
import pathlib
from bench import peer_venv, time_to_target, time_to_target_report as report
from bench import time_to_target_runs as runs

class StandIn:
  def __init__(self, label, episode_return):
    self.label, self.config, self.layout = label, 'stand-in', '1 × 1'
    self.episode_return = episode_return
  def run(self, caps, workdir, pause_at_epoch_s=None):
    folder = runs.system_folder(workdir, self.label)
    return runs.run_command(self.label, self.config, self.layout,
                            [sys.executable, {str(script)!r}, str(self.episode_return)],
                            caps, folder, poll_s=0.2)

missing = runs.PeerSystem('absent peer', 'its own', '1 × 8',
                          peer_venv.Venv('absent', pathlib.Path({str(tmp_path / 'no-venv')!r}),
                                         ('absent==1.0',)), lambda caps, folder: [])
systems = [missing, StandIn('crashing peer', -1000), StandIn('good peer', 21),
           StandIn('weak peer', -20)]
caps = report.Caps(wall_s=4, frames=10**9, target=18, window=20)
time_to_target.run(systems, caps, {str(tmp_path / 'runs')!r}, {str(csv_path)!r},
                   {str(png_path)!r})
value = open({str(csv_path)[:-4] + '.md'!r}).read()""")
  table = value
  rows = {line.split('|')[1].strip(): line for line in table.splitlines()
          if line.startswith('| ') and not line.startswith('| system')}
  assert set(rows) == {'absent peer', 'crashing peer', 'good peer', 'weak peer'}
  assert 'not installed' in rows['absent peer']
  assert 'python -m bench.peer_venv absent' in table and 'pip install absent==1.0' in table
  assert 'crashed' in rows['crashing peer'] and 'stand-in: something broke' in table
  assert '| 20K |' in rows['good peer']  # the 20th episode ends at 20,000 frames
  assert 'not by 4 s' in rows['weak peer']
  with open(csv_path, newline='') as f:
    labels = {row['label'] for row in csv.DictReader(f)}
  assert labels == {'crashing peer', 'good peer', 'weak peer'}
  assert png_path.stat().st_size > 0
  # Every stand-in was stopped (its process group), none left running.
  for pid_file in (tmp_path / 'runs').glob('*/pid'):
    with pytest.raises(ProcessLookupError):
      os.kill(int(pid_file.read_text()), 0)


# A peer that saves on SIGINT and resumes: each sitting counts itself in its folder and
# writes a new env file (as a resumed peer's new envs do), an episode of 1,000 frames every
# 0.1 s, returning argv[1] in its first sitting and argv[2] after.
_RESUMABLE = '''
import os, signal, sys, time
sitting = int(open('sittings').read()) + 1 if os.path.exists('sittings') else 1
open('sittings', 'w').write(str(sitting))
def save(signum, frame):
  open('saved', 'a').write(f'{sitting}\\n')
  sys.exit(0)
signal.signal(signal.SIGINT, save)
episode_return = float(sys.argv[1] if sitting == 1 else sys.argv[2])
path = os.path.join(os.environ['SEED_BENCH_EPISODE_DIR'], f'env_{os.getpid()}_0.csv')
with open(path, 'w', buffering=1) as f:
  f.write('wall_epoch_s,env_frames,episode_return\\n' + f'{time.time()},0,\\n')
  for i in range(1, 3000):
    time.sleep(0.1)
    f.write(f'{time.time()},{1000 * i},{episode_return}\\n')
'''


def test_a_paused_run_resumes_on_its_own_clock_and_an_ended_one_is_not_rerun(tmp_path):
  script, good = tmp_path / 'resumable.py', tmp_path / 'stand_in.py'
  script.write_text(_RESUMABLE)
  good.write_text(_STAND_IN)
  workdir, csv_path = tmp_path / 'runs', tmp_path / 'ttt.csv'
  sitting = f"""
import time
from bench import time_to_target, time_to_target_report as report
from bench import time_to_target_runs as runs

class StandIn:
  def __init__(self, label, command):
    self.label, self.config, self.layout, self.command = label, 'stand-in', '1 × 1', command
  def run(self, caps, workdir, pause_at_epoch_s=None):
    return runs.run_command(self.label, self.config, self.layout, self.command, caps,
                            runs.system_folder(workdir, self.label), poll_s=0.2,
                            pause_at_epoch_s=pause_at_epoch_s)

systems = [StandIn('resumable peer', [sys.executable, {str(script)!r}, '-20', '21']),
           StandIn('good peer', [sys.executable, {str(good)!r}, '21'])]
caps = report.Caps(wall_s=60, frames=10**9, target=18, window=5)
"""
  def run_sitting(pause_after_s):
    pause = 'None' if pause_after_s is None else f'time.time() + {pause_after_s}'
    return bench_value(sitting + f"""
time_to_target.run(systems, caps, {str(workdir)!r}, {str(csv_path)!r},
                   {str(tmp_path / 'ttt.png')!r}, pause_at_epoch_s={pause})
value = open({str(csv_path)[:-4] + '.md'!r}).read()""")

  def rows(table):
    return {line.split('|')[1].strip(): line for line in table.splitlines()
            if line.startswith('| ') and not line.startswith('| system')}

  peer = workdir / 'resumable_peer'
  first = rows(run_sitting(3.0))
  assert set(first) == {'resumable peer'} and 'paused at' in first['resumable peer']
  assert (peer / 'saved').read_text() == '1\n'  # Stopped by SIGINT, which it saves on.
  first_s = json.loads((peer / 'segments.json').read_text())['segments'][0]
  time.sleep(3)  # Between two sittings: not the run's time.
  second = rows(run_sitting(None))
  assert '| 5K |' not in second['resumable peer'] and 'reached' not in second['resumable peer']
  saved = json.loads((peer / 'segments.json').read_text())
  assert len(saved['segments']) == 2 and saved['outcome']['status'] == 'reached'
  gap_s = saved['segments'][1]['start_epoch_s'] - first_s['end_epoch_s']
  assert gap_s >= 3
  with open(csv_path, newline='') as f:
    curve = [row for row in csv.DictReader(f) if row['label'] == 'resumable peer']
  walls = [float(row['wall_s']) for row in curve]
  frames = [int(row['env_frames']) for row in curve]
  assert walls == sorted(walls) and frames == sorted(frames)
  first_sitting_s = first_s['end_epoch_s'] - first_s['start_epoch_s']
  resumed = [row for row in curve if float(row['episode_return']) == 21]
  # The second sitting's episodes follow the first's on the run's clock, the gap left out.
  assert first_sitting_s < float(resumed[0]['wall_s']) < first_sitting_s + gap_s
  assert 'good peer' in second and '| 5K |' in second['good peer']  # run after it
  assert (peer / 'sittings').read_text() == '2'
  third = rows(run_sitting(None))  # Both ended: reported again, neither run.
  assert third.keys() == second.keys() and (peer / 'sittings').read_text() == '2'
  assert third['resumable peer'] == second['resumable peer']


def test_bad_arguments_are_refused_naming_what_is_accepted():
  for args, expected in ((['--systems', 'nope'], 'known: seed_vtrace'),
                         (['--layout', 'seed_vtrace=2by4'], 'seed_vtrace=2x16'),
                         (['--extra', 'other=--x'], 'NAME one of seed_vtrace'),
                         (['--cap_hours', '0'], 'must be positive')):
    result = subprocess.run([sys.executable, '-m', 'bench.time_to_target', *args],
                            capture_output=True, text=True, env=_env(), cwd=REPO, timeout=60)
    assert result.returncode != 0 and expected in result.stderr, (args, result.stderr)


def test_seed_runs_as_learning_curve_starts_it_and_stops_at_the_target(tmp_path):
  # CartPole's toy config with a target any 20 episodes reach: the learner stops itself
  # (--target_return, --return_window) and the run reads as reached, on the launch's clock.
  value = bench_value(f"""
from bench import time_to_target_report as report
from bench.time_to_target_runs import SeedSystem
system = SeedSystem('seed toy', 'vtrace', 'gin/toy/vtrace.gin', 1, 4)
caps = report.Caps(wall_s=150, frames=2_000_000, target=5, window=20)
result = system.run(caps, {str(tmp_path)!r})
hit = report.reached_at(result.episodes, caps.target, caps.window)
value = [result.status, result.detail, len(result.episodes), hit, result.wall_s,
         result.layout, result.config]""")
  status, detail, episodes, hit, wall_s, layout, config = value
  assert status == 'reached', detail
  assert episodes >= 20 and layout == '1 × 4' and config == '`gin/toy/vtrace.gin`'
  frames, hit_wall_s, _ = hit
  # The learner's clock starts after TensorFlow's import and the model: later than 0.
  assert frames > 0 and 0 < hit_wall_s <= wall_s
