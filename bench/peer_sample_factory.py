"""Sample Factory (PyTorch APPO) on Pong: the peer side of the throughput benchmark.

Sample Factory 2.1.1 runs in a virtual environment of its own under
~/.cache/seed-bench (`ensure_venv`), never in seed's: it needs PyTorch and
gymnasium 0.29 while seed uses TensorFlow and gymnasium 1.x, and it must never
become one of seed's dependencies.

    python -m bench.peer_sample_factory --seconds 60

What is held equal to seed's `gin/atari/vtrace.gin` (Sample Factory's Atari
defaults are in sf_examples/atari/atari_params.py, its general ones in
sample_factory/cfg/cfg.py; every flag below is passed explicitly):
  * The network. Nature CNN torso -- conv 32 8x8/4, 64 4x4/2, 64 3x3/1, ReLU --
    then one 512-unit layer, no RNN, policy and value heads on the shared torso:
    --encoder_conv_architecture=convnet_atari (encoder.py: [[C, 32, 8, 4],
    [32, 64, 4, 2], [64, 64, 3, 1]]), --encoder_conv_mlp_layers 512,
    --nonlinearity=relu, --use_rnn=False, --recurrence=1,
    --decoder_mlp_layers (empty), --actor_critic_share_weights=True.
    Observations are 4 stacked 84x84 grayscale frames scaled by 1/255 on both
    sides; --normalize_input=False turns off Sample Factory's running
    mean/std observation normalisation (on in its Atari defaults), which seed
    does not have and which would add work to every forward pass.
  * Gradient passes per frame: four, as seed's `gin/atari/vtrace.gin` since the
    V-trace fix (docs/learning.md): each batch of 8 unrolls x 128 steps (1,024
    agent steps) is trained for 4 epochs of 4 minibatches of 2 unrolls. Here
    --rollout=128 --batch_size=256 --num_batches_per_epoch=4 --num_epochs=4:
    each training iteration takes 4 x 256 = 1,024 agent steps and makes 16
    gradient steps of 256, every frame feeding 4 of them -- also Sample
    Factory's own Atari defaults (num_epochs=4, num_batches_per_epoch=4,
    batch_size=256, rollout=128).
  * Asynchrony: --async_rl=True, Sample Factory's own default (cfg.py; the
    Atari defaults switch it off), because seed's actors also keep stepping
    while the learner trains, where its sync mode alternates collecting and
    training. Pass --async_rl=False to see sync mode: 2 workers x 2 envs x 128
    steps = 512 divides an iteration's 1,024, as sync mode requires (cfg/arguments.py).
  * Environment: Pong, action repeat 4 with a max over the last two frames,
    up to 30 no-op starts, 84x84 grayscale, frame stack 4, no sticky actions.
    Frames are counted with the action repeat on both sides.

What still differs (not a matter of settings):
  * The loss. APPO is PPO's clipped surrogate with GAE(0.95) advantages and
    return normalisation (its Atari defaults, kept); seed's learner uses
    V-trace. Both are one forward and backward pass over the batch plus a
    cheap O(batch) advantage computation, so the network dominates the cost.
  * What "frames/s" counts. Sample Factory's "Fps is (10 sec: ...)" counts
    frames the learner has trained on (learner.py adds experience_size *
    frameskip after each training step); seed's counts frames the actors have
    played. In a steady, learner-bound run the two agree.
  * Threads. Sample Factory's learner and inference processes use one PyTorch
    thread each (torch_utils.init_torch_runtime), seed's TensorFlow learner
    uses its own thread pools. Both run on the same 2-core machine.
  * Its wrappers follow SB3 / CleanRL: episodic life with fire-reset, reward
    clipping in the env, PongNoFrameskip-v4; seed uses ALE/Pong-v5 with
    gymnasium's AtariPreprocessing (which converts to grayscale before
    resizing, Sample Factory after). The emulator work per frame is the same.
  * Sample Factory's defaults for learning rate (2.5e-4, linear decay), Adam
    epsilon, gradient clipping (0.5) and entropy cost are kept: they change
    what is learnt, not how fast frames go through.
"""
import argparse
import dataclasses
import math
import os
import pathlib
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from bench import hardware
from bench import peer_venv

# Exact pins. torch 2.13.0 matters most: that version has a CPU wheel on the
# project machines, while any other (or an unpinned `torch`) pulls a multi-GB
# CUDA build. gymnasium 0.29 is what Sample Factory 2.1.1 is written against
# (our own venv has gymnasium 1.x, which is one reason the peer has its own).
PINNED_PACKAGES = (
    'torch==2.13.0',
    'sample-factory==2.1.1',
    'gymnasium==0.29.1',
    'numpy<2',
    'ale-py==0.10.1',
)
DEFAULT_VENV = pathlib.Path.home() / '.cache' / 'seed-bench' / 'sample-factory-venv'
VENV = peer_venv.Venv('sample_factory', DEFAULT_VENV, PINNED_PACKAGES)


def _log(message: str) -> None:
  print(f'[peer sample-factory] {message}', flush=True)


def ensure_venv(path: os.PathLike | str = DEFAULT_VENV) -> str:
  """Creates the Sample Factory venv at `path` unless it is already complete
  (bench/peer_venv.py); the path of its Python. RuntimeError if a step fails."""
  venv = dataclasses.replace(VENV, path=pathlib.Path(path).expanduser())
  if venv.ready():
    _log(f'using the venv at {venv.path}')
  return venv.install(log=print)


# Seed's V-trace learner (gin/atari/vtrace.gin): batches of 8 unrolls x 128 steps,
# each trained 4 epochs x 4 minibatches: every frame feeds 4 gradient steps of 256.
SEED_UNROLL_LENGTH = 128
SEED_UNROLLS_PER_BATCH = 8
SEED_EPOCHS = 4
SEED_MINIBATCHES = 4

# Flags that make the comparison fair; see the module docstring for why each.
FAIR_FLAGS = {
    # Network: Nature CNN + one 512-unit layer, ReLU, no RNN, shared torso.
    'encoder_conv_architecture': 'convnet_atari',
    'encoder_conv_mlp_layers': [512],
    'nonlinearity': 'relu',
    'use_rnn': False,
    'recurrence': 1,
    'decoder_mlp_layers': [],
    'actor_critic_share_weights': True,
    'normalize_input': False,
    # Four gradient passes over every frame, 256 agent steps per gradient step.
    'rollout': SEED_UNROLL_LENGTH,
    'batch_size': SEED_UNROLL_LENGTH * SEED_UNROLLS_PER_BATCH // SEED_MINIBATCHES,
    'num_batches_per_epoch': SEED_MINIBATCHES,
    'num_epochs': SEED_EPOCHS,
    # Collect while training, as seed does.
    'async_rl': True,
    # Environment, spelled out although they are the Atari defaults.
    'env_frameskip': 4,
    'env_framestack': 4,
    'summaries_use_frameskip': True,
}

# "Fps is (10 sec: 679.3, 60 sec: nan, 300 sec: nan). Total num frames: 123..."
FPS_LINE = re.compile(r'Fps is \(10 sec: ([^,]+), 60 sec: ([^,]+), 300 sec: ([^)]+)\)'
                      r'(?:\. Total num frames: (\d+))?')
# Far more frames than any benchmark plays: the run is stopped by wall time.
HUGE_ENV_STEPS = 10**12
# The launcher imports ale_py, which registers PongNoFrameskip-v4 with
# gymnasium; Sample Factory's Atari helpers do not. It must be a file, not
# `python -c`: Sample Factory builds envs in child processes started with
# multiprocessing's "spawn", which re-import the main script (so they register
# the envs too) and must not run main() again (hence the __name__ guard).
LAUNCHER = (
    'import sys\n'
    'import ale_py  # noqa: F401  (registers the ALE envs, also in spawned children)\n'
    'from sf_examples.atari.train_atari import main\n'
    "if __name__ == '__main__':\n"
    '  sys.exit(main())\n')
# How long Sample Factory gets to shut down after SIGINT, then after SIGTERM.
STOP_GRACE_S = 15.0
TERM_GRACE_S = 5.0
LOG_TAIL_LINES = 40


def _flag(name: str, value) -> list[str]:
  """Command-line words for one Sample Factory flag."""
  if isinstance(value, (list, tuple)):
    # nargs='*' flags take space-separated values after the bare flag.
    return [f'--{name}', *(str(v) for v in value)]
  return [f'--{name}={value}']


def sample_factory_command(python: str, launcher: str, experiment: str, train_dir: str,
                           num_workers: int, envs_per_worker: int, extra_args=()) -> list[str]:
  """The full command line that trains APPO on Pong until it is stopped."""
  command = [
      python, launcher,
      '--algo=APPO', '--env=atari_pong', '--device=cpu',
      f'--num_workers={num_workers}', f'--num_envs_per_worker={envs_per_worker}',
      # Double-buffered sampling needs an even split; one env per worker cannot split.
      f'--worker_num_splits={2 if envs_per_worker % 2 == 0 else 1}',
      f'--train_for_env_steps={HUGE_ENV_STEPS}',
      f'--experiment={experiment}', f'--train_dir={train_dir}',
      '--restart_behavior=overwrite', '--with_wandb=False',
  ]
  for name, value in FAIR_FLAGS.items():
    command += _flag(name, value)
  # Last, so a caller's flag wins (argparse keeps the last value).
  return command + list(extra_args)


def _settings(num_workers: int, envs_per_worker: int, extra_args) -> dict:
  """What the benchmark prints beside seed's figures."""
  batch = FAIR_FLAGS['batch_size']
  return {
      'framework': 'Sample Factory 2.1.1 (PyTorch 2.13.0, CPU), APPO',
      'env': 'atari_pong (PongNoFrameskip-v4, frameskip 4, frame stack 4, 84x84 gray)',
      'network': 'Nature CNN (32 8x8/4, 64 4x4/2, 64 3x3/1) + 512 FC, ReLU, no RNN',
      'actors': f'{num_workers} workers x {envs_per_worker} envs',
      'batch_per_gradient_step': (f'{batch} agent steps = '
                                  f'{batch // FAIR_FLAGS["rollout"]} rollouts x '
                                  f'{FAIR_FLAGS["rollout"]} steps'),
      'gradient_steps_per_frame': FAIR_FLAGS['num_epochs'],
      'loss': 'PPO clip 0.1 + GAE(0.95), normalised returns (seed: V-trace)',
      'async_rl': FAIR_FLAGS['async_rl'],
      'flags': {**FAIR_FLAGS, 'extra_args': list(extra_args)},
  }


def _parse_float(text: str) -> float:
  try:
    return float(text)
  except ValueError:
    return math.nan


def parse_fps_line(line: str):
  """The figures of one "Fps is (...)" line as a dict, or None for other lines."""
  match = FPS_LINE.search(line)
  if not match:
    return None
  return {
      'fps_10s': _parse_float(match.group(1)),
      'fps_60s': _parse_float(match.group(2)),
      'fps_300s': _parse_float(match.group(3)),
      'total_frames': int(match.group(4)) if match.group(4) else None,
  }


class _LogReader(threading.Thread):
  """Copies the child's output to a log file, stamping every Fps line's time."""

  def __init__(self, stream, log_path: pathlib.Path, start: float):
    super().__init__(daemon=True)
    self._stream = stream
    self._log_path = log_path
    self._start = start
    self.samples = []
    self.tail = []

  def run(self):
    with open(self._log_path, 'w', encoding='utf-8', errors='replace') as log:
      for raw in self._stream:
        line = raw.decode('utf-8', errors='replace')
        log.write(line)
        self.tail = (self.tail + [line.rstrip()])[-LOG_TAIL_LINES:]
        figures = parse_fps_line(line)
        if figures is not None:
          figures['t_s'] = round(time.monotonic() - self._start, 1)
          self.samples.append(figures)


def stop_group(process: subprocess.Popen) -> str:
  """Stops a peer's whole process group (started with start_new_session): SIGINT, then
  SIGTERM, then SIGKILL. Sample Factory and RL Zoo both save and exit on SIGINT.

  Returns:
    Which signal stopped it, for the report.
  """
  stopped_by = 'exited by itself'
  for sig, grace in ((signal.SIGINT, STOP_GRACE_S), (signal.SIGTERM, TERM_GRACE_S),
                     (signal.SIGKILL, TERM_GRACE_S)):
    if process.poll() is not None:
      break
    try:
      # Its rollout, inference and learner workers share the leader's group
      # (start_new_session), so one signal reaches all of them. Only the
      # leader acts on SIGINT; the workers ignore it and are shut down by it.
      os.killpg(process.pid, sig)
    except ProcessLookupError:
      break
    try:
      process.wait(timeout=grace)
      stopped_by = sig.name
      break
    except subprocess.TimeoutExpired:
      stopped_by = f'{sig.name} (no exit)'
  # Workers that outlived the leader would take CPU from whatever runs next.
  try:
    os.killpg(process.pid, signal.SIGKILL)
  except ProcessLookupError:
    pass
  return stopped_by


def run_sample_factory(wall_time_s: float, num_workers: int = 2, envs_per_worker: int = 2,
                       warmup_s: float = 20, extra_args=(), venv=DEFAULT_VENV) -> dict:
  """Trains Sample Factory's APPO on Pong for `wall_time_s` and reports its frames/s.

  Args:
    wall_time_s: How long to let it run, from launch (start-up included).
    num_workers: Rollout worker processes.
    envs_per_worker: Envs per rollout worker.
    warmup_s: Reports before this many seconds from launch are not counted.
    extra_args: More Sample Factory flags, e.g. ('--async_rl=False',); they
      override the fair settings.
    venv: The Sample Factory venv (made by `ensure_venv` if missing).

  Returns:
    {'frames_per_s_median': median of the "10 sec" figures reported after
     warmup_s (nan ones left out), 'frames_per_s_overall': frames trained
     between the first and the last report after warmup_s over the seconds
     between them (nan with fewer than two; finer grained than the 10-s
     figures, which move in steps of one training iteration's frames per
     10 s: 1,024 x 4 frames, 410 frames/s), 'samples': every report as a dict with t_s
     (seconds from launch), fps_10s, fps_60s, fps_300s and total_frames,
     'settings': the settings to show beside seed's figures, 'command': the
     command line, 'launcher': the source of the script it ran (its temp copy
     is gone), plus 'wall_s' and 'stopped_by'}.

  Raises:
    ValueError: If the times or counts make no sense.
    RuntimeError: If Sample Factory exited before the time was up, or printed
      no Fps line, or none after warmup_s. The message ends with its log's
      last lines and names where the whole log was kept.
  """
  if wall_time_s <= warmup_s:
    raise ValueError(f'wall_time_s ({wall_time_s}) must be longer than warmup_s ({warmup_s}): '
                     'no report after the warm-up would be counted.')
  if num_workers < 1 or envs_per_worker < 1:
    raise ValueError(f'num_workers ({num_workers}) and envs_per_worker ({envs_per_worker}) '
                     'must both be at least 1.')
  python = ensure_venv(venv)
  work_dir = pathlib.Path(tempfile.mkdtemp(prefix='seed-bench-sf-'))
  log_path = work_dir / 'sample_factory.log'
  launcher = work_dir / 'train_atari_ale.py'
  launcher.write_text(LAUNCHER)
  command = sample_factory_command(python, str(launcher), 'pong_appo', str(work_dir / 'train_dir'),
                                   num_workers, envs_per_worker, extra_args)
  # Keep seed's own packages and any outer venv out of Sample Factory's interpreter.
  env = {k: v for k, v in os.environ.items() if k not in ('PYTHONPATH', 'VIRTUAL_ENV')}
  env['PYTHONUNBUFFERED'] = '1'
  _log(f'running APPO on Pong for {wall_time_s:.0f} s ({num_workers} workers x '
       f'{envs_per_worker} envs)')
  start = time.monotonic()
  process = subprocess.Popen(command, cwd=work_dir, env=env, stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             start_new_session=True)
  reader = _LogReader(process.stdout, log_path, start)
  reader.start()
  try:
    try:
      process.wait(timeout=wall_time_s)
      stopped_by = None  # It stopped by itself: with HUGE_ENV_STEPS only a failure does that.
    except subprocess.TimeoutExpired:
      stopped_by = stop_group(process)
  except BaseException:
    # Ctrl-C or an error here must not leave a training run behind.
    stop_group(process)
    raise
  finally:
    reader.join(timeout=10)
  wall_s = time.monotonic() - start
  counted = [s['fps_10s'] for s in reader.samples
             if s['t_s'] >= warmup_s and not math.isnan(s['fps_10s'])]
  problem = None
  if stopped_by is None:
    problem = (f'Sample Factory exited with status {process.returncode} after {wall_s:.0f} s, '
               f'before the {wall_time_s:.0f} s run was over.')
  elif not reader.samples:
    problem = (f'Sample Factory printed no "Fps is" line in {wall_s:.0f} s '
               f'(stopped by {stopped_by}).')
  elif not counted:
    problem = (f'Sample Factory reported no frames/s figure after the {warmup_s:.0f} s '
               f'warm-up ({len(reader.samples)} reports in {wall_s:.0f} s); run it longer.')
  steady = [s for s in reader.samples if s['t_s'] >= warmup_s and s['total_frames'] is not None]
  if problem is None and len(steady) >= 2 and steady[-1]['t_s'] > steady[0]['t_s']:
    overall = ((steady[-1]['total_frames'] - steady[0]['total_frames'])
               / (steady[-1]['t_s'] - steady[0]['t_s']))
  else:
    overall = math.nan
  if problem:
    # Keep the whole log for whoever reads the error; the train_dir goes anyway.
    kept_log = pathlib.Path(tempfile.mkstemp(prefix='seed-bench-sf-', suffix='.log')[1])
    shutil.move(log_path, kept_log)
    shutil.rmtree(work_dir, ignore_errors=True)
    tail = '\n'.join(reader.tail)
    raise RuntimeError(f'{problem} Full log: {kept_log}. Last lines of its log:\n{tail}')
  # Its train_dir holds checkpoints and summaries nobody reads.
  shutil.rmtree(work_dir, ignore_errors=True)
  return {
      'frames_per_s_median': statistics.median(counted),
      'frames_per_s_overall': overall,
      'samples': reader.samples,
      'settings': _settings(num_workers, envs_per_worker, extra_args),
      'command': command,
      'launcher': LAUNCHER,
      'wall_s': round(wall_s, 1),
      'stopped_by': stopped_by,
  }


# Sample Factory's own sweep (its maintainer's advice for Atari throughput, sample-factory
# issue 280: workers = logical CPUs or more, 10-20 envs a worker, double-buffered
# sampling with 2 splits, a larger batch as the data grows):
# (workers, envs per worker, extra flags).
SWEEP = (
    (2, 2, ()),                            # the matched setting above
    (2, 8, ()),
    (2, 16, ()),
    (2, 16, ('--worker_num_splits=1',)),
    (4, 8, ()),
    # Bigger gradient steps, still 4 passes over each frame: 4 x 1,024 an iteration.
    (2, 16, ('--batch_size=1024',)),
    (4, 16, ('--batch_size=1024',)),
)


def sweep(seconds: float, warmup_s: float, venv=DEFAULT_VENV, configs=SWEEP) -> list:
  """Runs each of `configs` for `seconds`, one after another; [(config, result or the
  error's first line)]."""
  rows = []
  for workers, envs, extra in configs:
    try:
      result = run_sample_factory(seconds, workers, envs, warmup_s, extra_args=extra, venv=venv)
    except RuntimeError as error:
      result = str(error).splitlines()[0]
    rows.append(((workers, envs, extra), result))
  return rows


def sweep_table(rows) -> str:
  """Markdown: one line per config, the best marked."""
  def fps(result):
    return result['frames_per_s_overall'] if isinstance(result, dict) else math.nan
  ok = [fps(r) for _, r in rows if not math.isnan(fps(r))]
  best = max(ok) if ok else math.nan
  lines = ['| workers × envs | other flags | frames/s (median of 10-s reports) | '
           'frames/s (overall) |', '|---|---|---:|---:|']
  for (workers, envs, extra), result in rows:
    if isinstance(result, dict):
      overall = fps(result)
      mark = '**' if overall == best else ''
      lines.append(f'| {workers} × {envs} | {" ".join(extra) or "—"} | '
                   f'{result["frames_per_s_median"]:,.0f} | {mark}{overall:,.0f}{mark} |')
    else:
      lines.append(f'| {workers} × {envs} | {" ".join(extra) or "—"} | failed: {result} | |')
  return '\n'.join(lines)


def main(argv=None) -> None:
  """Runs the peer once (or its sweep) and prints the result and the settings."""
  parser = argparse.ArgumentParser(
      description=__doc__.splitlines()[0],
      epilog='Any other --flag=value goes to Sample Factory and overrides the fair settings.')
  parser.add_argument('--seconds', type=float, default=60, help='wall time of the run')
  parser.add_argument('--num_workers', type=int, default=2)
  parser.add_argument('--envs_per_worker', type=int, default=2)
  parser.add_argument('--warmup', type=float, default=20,
                      help='seconds from launch before reports count')
  parser.add_argument('--venv', default=str(DEFAULT_VENV))
  parser.add_argument('--sweep', action='store_true',
                      help='run every config of SWEEP for --seconds each, print a table')
  args, extra = parser.parse_known_args(argv)
  if args.sweep:
    if extra:
      sys.exit(f'peer_sample_factory: --sweep takes no Sample Factory flags; got {extra}')
    print(sweep_table(sweep(args.seconds, args.warmup, args.venv)))
    return
  try:
    result = run_sample_factory(args.seconds, args.num_workers, args.envs_per_worker,
                                args.warmup, extra_args=extra, venv=args.venv)
  except (RuntimeError, ValueError) as error:
    sys.exit(f'peer_sample_factory: {error}')
  counted = [s for s in result['samples']
             if s['t_s'] >= args.warmup and not math.isnan(s['fps_10s'])]
  print(hardware.describe())
  print(f'Sample Factory APPO Pong: {result["frames_per_s_median"]:.0f} frames/s '
        f'(median of {len(counted)} 10-s reports after {args.warmup:.0f} s warm-up; '
        f'{result["frames_per_s_overall"]:.0f} overall; {result["wall_s"]:.0f} s run, '
        f'stopped by {result["stopped_by"]})')
  print('  10-s reports (seconds from launch: frames/s): ' + ', '.join(
      f'{s["t_s"]:.0f}: {s["fps_10s"]:.0f}' for s in result['samples']
      if not math.isnan(s['fps_10s'])))
  for key, value in result['settings'].items():
    print(f'  {key}: {value}')


if __name__ == '__main__':
  main()
