"""Time to a trained agent: seed and its peers on Pong, one after another on this machine,
each until the mean of its last 20 training episodes reaches +18 or a cap.

  python -m bench.time_to_target                       # every system, 4 h or 20M frames each
  python -m bench.time_to_target --systems seed_vtrace,sample_factory --cap_hours 0.05
  python -m bench.time_to_target --install             # make the peers' venvs first
  python -m bench.time_to_target --stop_after_hours 2.5  # a sitting; again: it resumes

A system may need more wall time than a sitting gives (4 h against a 3-h loan of a
machine). The runs live in --workdir (runs/time_to_target), a folder per system: the
bench stopped by --stop_after_hours, SIGTERM or Ctrl-C stops the running system as it
saves itself (seed's learner checkpoints on SIGTERM, Sample Factory and RL Zoo save on
SIGINT) and the same command later resumes it there (seed from its run directory,
Sample Factory with --restart_behavior=resume, RL Zoo with -i and the rest of its step
budget, its step counter and so its schedules going on) and then runs the systems after
it; a system whose run ended is reported again, not rerun (a new --workdir runs all
again). A system's wall time is its sittings' added up, each with its own start-up
(bench/time_to_target_segments.py).

What users wait for is the time from the command to a trained agent, where throughput and
sample efficiency meet (issue 69). Run it with nothing else on the machine: the systems
share its cores with whatever else runs. Every training episode of every system (env
frames, seconds of its run from its launch, return) goes into one curve file in seed's format
(`label,role,seed,env_frames,wall_s,episode_return`, as `seed plot --save_data` writes;
`--csv`, default docs/figures/time_to_target_pong.csv; a rerun of some systems replaces
only their rows), drawn as return against frames and against wall time (`--png`;
redraw: `seed plot docs/figures/time_to_target_pong.csv --out ...`); the table (system,
config, actors × envs, frames and wall time to +18, frames/s, or "not by" the cap that
stopped it) is printed with the CPU it ran on and written beside the CSV (.md). Frames
count the action repeat (4) everywhere: seed's env frames, the peers' emulator frames.
The budget a learning rate anneals over is the frame cap for every system that anneals:
seed V-trace (--anneal_learning_rate, as the README's Pong command), Sample Factory and
RL Zoo (their Atari settings decay it linearly over their step budget); seed PPO runs
gin/atari/ppo.gin as shipped, at a constant rate (`--extra seed_ppo=--anneal_learning_rate`
anneals it, as cleanrl's ppo_atari does).

Systems, each with its own tuned settings (best against best):
  seed_vtrace     `gin/atari/vtrace.gin`, `--anneal_learning_rate` over the frame cap, as
                  the README's Pong command; 2 actors × 4 envs, the layout of every
                  measured Pong run (docs/learning.md: +18 at 5.72M and 6.35M frames).
                  2 × 16 trains more frames/s (docs/performance.md) but learned Breakout
                  less per frame (14.9 against 19.5 at 3.4M); `--layout seed_vtrace=2x16`.
  seed_ppo        `gin/atari/ppo.gin` (cleanrl's ppo_atari settings), 2 actors × 4 envs.
  Both start as `seed suite learning_curve` starts them (seed.process.local_processes:
  the learner, its actors on its Unix socket), the learner stopping itself at the
  target (--target_return=18 --return_window=20) or at --max_env_frames.
  sample_factory  Sample Factory 2.1.1 APPO, PyTorch 2.13.0 on the CPU, in its own venv
                  (bench/peer_sample_factory.py: ~/.cache/seed-bench/sample-factory-venv).
                  Its own Atari example (sf_examples.atari.train_atari, atari_pong, with
                  its Atari defaults: Nature CNN, rollout 128, batch 256, 4 epochs,
                  GAE 0.95, clip 0.1, lr 2.5e-4 decayed linearly, normalised input and
                  returns) at the best of its own sweep here: 2 workers × 16 envs,
                  2 splits (docs/performance.md, "Best against best"). Its Atari
                  defaults are synchronous (8 workers × 1 env, 1,024 samples a rollout);
                  2 × 16 collects 4,096 a rollout, which sync mode refuses, so
                  --async_rl=True, as in its sweep. --train_for_env_steps is the frame
                  cap (it counts frames with the frame skip).
  sb3_ppo         cleanrl's ppo_atari_envpool was asked for: PyPI's cleanrl is 0.4.8
                  (2021), whose package has ppo_atari.py but no ppo_atari_envpool, and
                  GitHub is not reachable from the machines this was written on. So the
                  nearest well-known PPO instead: Stable-Baselines3 2.9.2 with RL Zoo
                  2.9.2's own train script and its Atari hyperparameters (hyperparams/
                  ppo.yml `atari`: 8 envs, n_steps 128, batch 256, 4 epochs, lr and clip
                  linear from 2.5e-4 and 0.1, ent 0.01, vf 0.5, AtariWrapper, frame
                  stack 4), PyTorch 2.13.0 on the CPU, in its own venv (bench/peer_venv.py
                  SB3: ~/.cache/seed-bench/sb3-venv). Its step budget (-n) is the frame
                  cap / 4; no evaluation envs (--eval-freq -1); RL Zoo's DummyVecEnv
                  (one process, 8 envs: 1 × 8).
  pufferlib       PufferLib 3.0.0, in a venv of its own if it installs. It does not here:
                  its only release on PyPI is a source archive whose setup.py downloads
                  raylib from GitHub while it builds, and only package registries are
                  reachable. So it is reported "not installed", with why; its Atari entry
                  point and episode capture were never tried, and a machine where it
                  installs still needs that written (bench/peer_launch.py).
The peers run bench/peer_launch.py with their venv's Python: it wraps every Atari env
the peer builds in a logger of each game's frames and unclipped return, a file per env
(bench/peer_episodes.py adds all envs' frames up at each episode's end). A peer that is
not installed is reported with how to install it (`--install`, or python -m
bench.peer_venv NAME), one that crashes with its log's last lines, and the others run.
"""
import argparse
import glob
import json
import os
import re
import shlex
import sys
import time
import zipfile
from typing import Dict, List, Optional, Tuple

from bench import hardware
from bench import peer_sample_factory
from bench import peer_venv
from bench import time_to_target_report as report
from bench.time_to_target_runs import PeerSystem, SeedSystem

CSV = 'docs/figures/time_to_target_pong.csv'
PNG = 'docs/time_to_target_pong.png'
SYSTEMS = ('seed_vtrace', 'seed_ppo', 'sample_factory', 'sb3_ppo', 'pufferlib')
# (actors or workers, envs each): each system's best measured layout on this machine.
LAYOUTS = {'seed_vtrace': (2, 4), 'seed_ppo': (2, 4), 'sample_factory': (2, 16),
           'sb3_ppo': (1, 8), 'pufferlib': (1, 8)}
FRAME_SKIP = 4  # RL Zoo's steps are agent steps; the caps are frames.
SB3_ENV = 'PongNoFrameskip-v4'
WORKDIR = os.path.join('runs', 'time_to_target')


def _sample_factory_arguments(workers: int, envs: int, extra: List[str]):
  def arguments(caps: report.Caps, folder: str) -> List[str]:
    return ['sample_factory', '--algo=APPO', '--env=atari_pong', '--device=cpu', '--seed=0',
            f'--num_workers={workers}', f'--num_envs_per_worker={envs}',
            f'--worker_num_splits={2 if envs % 2 == 0 else 1}', '--async_rl=True',
            f'--train_for_env_steps={caps.frames}', '--experiment=pong',
            f'--train_dir={os.path.join(folder, "train_dir")}',
            '--restart_behavior=resume', '--with_wandb=False', *extra]
  return arguments


def _sb3_arguments(envs: int, extra: List[str]):
  def arguments(caps: report.Caps, folder: str) -> List[str]:
    logs = os.path.join(folder, 'logs')
    steps, resume = caps.frames // FRAME_SKIP, []
    saved = sb3_saved_model(logs)
    if saved is not None:  # Resume: the rest of the budget, from the last save.
      model, done = saved
      steps, resume = max(1, steps - done), ['-i', model]
    return ['rl_zoo3', '--algo', 'ppo', '--env', SB3_ENV, '-n', str(steps), *resume,
            '--eval-freq', '-1', '--seed', '0', '--device', 'cpu', '--vec-env', 'dummy',
            '--log-interval', '10', '-f', logs, *extra, '--hyperparams', f'n_envs:{envs}']
  return arguments


def sb3_saved_model(logs: str) -> Optional[Tuple[str, int]]:
  """(path, agent steps) of the newest model RL Zoo saved under `logs` (it saves on
  SIGINT, which the bench stops it with, and at its budget's end); None before any.

  The steps are SB3's num_timesteps, from the save's `data` member: JSON (SB3's own
  format), read without unpickling anything."""
  paths = glob.glob(os.path.join(logs, 'ppo', f'{SB3_ENV}_*', f'{SB3_ENV}.zip'))
  if not paths:
    return None
  path = max(paths, key=os.path.getmtime)
  with zipfile.ZipFile(path) as archive:
    data = json.loads(archive.read('data'))
  return path, int(data['num_timesteps'])


def build_systems(names, layouts: Dict[str, Tuple[int, int]],
                  extra: Dict[str, List[str]]) -> List:
  """The systems to run, in the order given."""
  systems = []
  for name in names:
    units, envs = layouts[name]
    more = extra.get(name, [])
    if name == 'seed_vtrace':
      systems.append(SeedSystem(f'seed V-trace {units}×{envs}', 'vtrace',
                                'gin/atari/vtrace.gin', units, envs, anneal=True,
                                learner_flags=tuple(more)))
    elif name == 'seed_ppo':
      systems.append(SeedSystem(f'seed PPO {units}×{envs}', 'ppo', 'gin/atari/ppo.gin',
                                units, envs, learner_flags=tuple(more)))
    elif name == 'sample_factory':
      systems.append(PeerSystem(
          f'Sample Factory APPO {units}×{envs}',
          'its Atari example (sf_examples.atari, atari_pong), --async_rl=True'
          + ''.join(f', `{a}`' for a in more),
          f'{units} × {envs}', peer_sample_factory.VENV,
          _sample_factory_arguments(units, envs, more)))
    elif name == 'sb3_ppo':
      systems.append(PeerSystem(
          f'SB3 PPO (RL Zoo) {units}×{envs}',
          "RL Zoo's Atari PPO (hyperparams/ppo.yml `atari`), DummyVecEnv"
          + ''.join(f', `{a}`' for a in more),
          f'{units} × {envs}', peer_venv.SB3, _sb3_arguments(envs, more)))
    elif name == 'pufferlib':
      systems.append(PeerSystem(
          'PufferLib 3', 'its Atari config', f'{units} × {envs}', peer_venv.PUFFERLIB,
          lambda caps, folder: [],
          unavailable=('PufferLib 3.0.0 is a source archive on PyPI whose setup.py '
                       'downloads raylib from GitHub while it builds: not installable where '
                       'only package registries are reachable; where it installs, its '
                       'Atari entry point still needs adding to bench/peer_launch.py.')))
  return systems


def run(systems, caps: report.Caps, workdir: str, csv_path: str, png_path: str,
        pause_at_epoch_s: Optional[float] = None) -> int:
  """Runs each system in turn, rewriting the curve file, figure and table after each
  (a long run stopped half way keeps what it finished); prints the table at the end.

  A system whose run ended in an earlier sitting (its folder under `workdir` says so) is
  reported again without running. The sitting ends at `pause_at_epoch_s` or at SIGTERM or
  Ctrl-C: the running system is stopped as it saves itself and reported 'paused', the
  ones after it are left for the next sitting, which the same command starts."""
  hardware_line = hardware.describe()
  results = []
  for system in systems:
    if pause_at_epoch_s is not None and time.time() >= pause_at_epoch_s:
      break  # The sitting is over: this one and those after it start in the next.
    print(f'== {system.label}: {system.config}, {system.layout}; caps '
          f'{caps.wall_text()} or {caps.frames_text()}', flush=True)
    result = system.run(caps, workdir, pause_at_epoch_s=pause_at_epoch_s)
    print(report.table_row(result, caps), flush=True)
    results.append(result)
    lines = report.table(results, caps, hardware_line)
    os.makedirs(os.path.dirname(os.path.abspath(csv_path)), exist_ok=True)
    with open(os.path.splitext(csv_path)[0] + '.md', 'w') as f:
      f.write('\n'.join(lines) + '\n')
    if any(r.episodes for r in results):
      kept = report.write_curves(csv_path, results)
      report.draw(csv_path, png_path, caps, hardware_line)
      if kept:
        print(f'kept from {csv_path}: {", ".join(kept)}', flush=True)
    if result.status == 'paused':
      break
  print('\n'.join(report.table(results, caps, hardware_line)))
  print(f'curves: {csv_path}; figure: {png_path}; runs: {workdir}')
  left = [s.label for s in systems[len(results):]]
  if results and results[-1].status == 'paused':
    print(f'paused: {results[-1].label} resumes from its own save'
          + (f', then {", ".join(left)}' if left else '')
          + f' when this command runs again with --workdir {workdir}')
  elif left:
    print(f'the sitting ended before {", ".join(left)}: they run when this command runs '
          f'again with --workdir {workdir}')
  return 0


def _pairs(values: List[str], flag: str) -> Dict[str, str]:
  """NAME=VALUE flags as a dict; SystemExit naming the flag for a bad one."""
  pairs = {}
  for value in values:
    name, _, rest = value.partition('=')
    if name not in SYSTEMS or not rest:
      sys.exit(f'time_to_target: {flag}={value!r}; expected NAME=VALUE, NAME one of '
               f'{", ".join(SYSTEMS)}')
    pairs[name] = rest
  return pairs


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
  parser.add_argument('--systems', default=','.join(SYSTEMS),
                      help=f'comma-separated, in the order to run ({",".join(SYSTEMS)})')
  parser.add_argument('--cap_hours', type=float, default=4.0,
                      help='wall time a system gets from its launch')
  parser.add_argument('--cap_frames', type=float, default=20e6,
                      help='env frames a system gets (its learning rate anneals over them)')
  parser.add_argument('--target', type=float, default=18.0)
  parser.add_argument('--window', type=int, default=20, help='episodes in the mean')
  parser.add_argument('--csv', default=CSV, help='the curve file (the table: its .md)')
  parser.add_argument('--png', default=PNG, help="the figure (seed plot's)")
  parser.add_argument('--workdir', default=WORKDIR,
                      help='where the runs go; a run found there resumes or is reported')
  parser.add_argument('--stop_after_hours', type=float,
                      help='end this sitting after so many hours (the running system '
                      'saves and is reported paused; run again to resume)')
  parser.add_argument('--layout', action='append', default=[], metavar='NAME=AxE',
                      help='actors (workers) × envs for a system, e.g. seed_vtrace=2x16')
  parser.add_argument('--extra', action='append', default=[], metavar="NAME='FLAGS'",
                      help="more flags for a system's command (seed: learner flags)")
  parser.add_argument('--install', action='store_true',
                      help="make missing peers' venvs first (a failure is reported)")
  args = parser.parse_args(argv)
  names = [n for n in args.systems.split(',') if n]
  unknown = [n for n in names if n not in SYSTEMS]
  if unknown or not names:
    parser.error(f'--systems: unknown {unknown}; known: {", ".join(SYSTEMS)}')
  layouts = dict(LAYOUTS)
  for name, text in _pairs(args.layout, '--layout').items():
    match = re.fullmatch(r'(\d+)\s*[x×]\s*(\d+)', text)
    if not match or '0' in (match.group(1), match.group(2)):
      parser.error(f'--layout {name}={text!r}; expected e.g. {name}=2x16')
    layouts[name] = (int(match.group(1)), int(match.group(2)))
  extra = {name: shlex.split(text) for name, text in _pairs(args.extra, '--extra').items()}
  try:
    caps = report.Caps(args.cap_hours * 3600, int(args.cap_frames), args.target, args.window)
  except ValueError as error:
    parser.error(str(error))
  systems = build_systems(names, layouts, extra)
  if args.install:
    for system in systems:
      venv = getattr(system, 'venv', None)
      if venv is not None and not venv.ready():
        try:
          venv.install()
        except RuntimeError as error:
          print(f'{system.label}: {error}', flush=True)
  if args.stop_after_hours is not None and args.stop_after_hours <= 0:
    parser.error(f'--stop_after_hours={args.stop_after_hours}; expected a positive number')
  pause_at = (None if args.stop_after_hours is None
              else time.time() + args.stop_after_hours * 3600)
  return run(systems, caps, args.workdir, args.csv, args.png, pause_at)


if __name__ == '__main__':
  sys.exit(main())
