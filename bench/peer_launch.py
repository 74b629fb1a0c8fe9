"""Runs a peer's own training entry point, logging each of its envs' episodes to a file.

This file runs with the peer's interpreter, in the peer's venv (bench/peer_venv.py), never
with seed's: it imports the standard library, gymnasium and the peer, nothing of seed.

  PEER_PYTHON bench/peer_launch.py sample_factory --algo=APPO --env=atari_pong ...
  PEER_PYTHON bench/peer_launch.py rl_zoo3 --algo ppo --env PongNoFrameskip-v4 ...
  PEER_PYTHON bench/peer_launch.py rl_zoo3 ... -i SAVED.zip -n REST   # a resume

The arguments after the peer's name are its own command line. With SEED_BENCH_EPISODE_DIR
set, every Atari env the peer builds with `gymnasium.make` is wrapped, right around the
emulator (inside the peer's own wrappers: frame skip, no-op starts, episodic life, reward
clipping), in `EpisodeLog`, which appends to a CSV of its own in that folder
(env_<pid>_<n>.csv; columns wall_epoch_s, env_frames, episode_return):
  * a line when the env is made (frames 0, no return);
  * a line at each game's end: the env's frames so far and the game's unclipped return
    (a lost life is not an end: the emulator ends only at game over or its time limit);
  * a line every PROGRESS_FRAMES frames with no return, so that the bench can add up all
    envs' frames at any moment (bench/peer_episodes.py).
Frames are emulator frames (NoFrameskip envs: one a step), so a frame skip of 4 counts 4,
as seed's env frames do. Each line is one write(2) on an O_APPEND descriptor: a reader
never sees half of one. CSV, not pickle: the bench reads it with another interpreter.

Why gymnasium.make is patched rather than a peer's env factory wrapped: it is the one call
both peers' Atari factories make (sf_examples.atari.atari_utils.make_atari_env,
stable_baselines3.common.env_util.make_vec_env), and it gives the emulator's own episode
ends whatever wrappers the peer puts on top (RL Zoo calls it through EnvSpec.make). Sample Factory starts its rollout workers
with multiprocessing's spawn, which imports this file again as __mp_main__ in each: the
patch at import (below) reaches them; main() only runs in the first process.
"""
import itertools
import os
import sys
import time

import gymnasium
import gymnasium.envs.registration

EPISODE_DIR_ENV = 'SEED_BENCH_EPISODE_DIR'
COLUMNS = ('wall_epoch_s', 'env_frames', 'episode_return')
# One progress line per this many of an env's frames (about 4 s of one env at seed's pace).
PROGRESS_FRAMES = 4096
PEERS = ('sample_factory', 'rl_zoo3')

_files = itertools.count()


class EpisodeLog(gymnasium.Wrapper):
  """Appends the env's frames and each game's return to `path` (see the module doc)."""

  def __init__(self, env, path: str, frames_per_step: int):
    super().__init__(env)
    self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    self._frames_per_step = frames_per_step
    self._frames = self._last_line_frames = 0
    self._return = 0.0
    self._write(','.join(COLUMNS))
    self._line('')

  def reset(self, **kwargs):
    self._return = 0.0
    return self.env.reset(**kwargs)

  def step(self, action):
    observation, reward, terminated, truncated, info = self.env.step(action)
    self._frames += self._frames_per_step
    self._return += float(reward)
    if terminated or truncated:
      self._line(f'{self._return:.6g}')
      self._return = 0.0
    elif self._frames - self._last_line_frames >= PROGRESS_FRAMES:
      self._line('')
    return observation, reward, terminated, truncated, info

  def close(self):
    if self._fd is not None:
      self._line('')  # The env's last frames count too.
      os.close(self._fd)
      self._fd = None
    return self.env.close()

  def _line(self, episode_return: str) -> None:
    self._last_line_frames = self._frames
    self._write(f'{time.time():.3f},{self._frames},{episode_return}')

  def _write(self, text: str) -> None:
    if self._fd is not None:
      os.write(self._fd, (text + '\n').encode())


def frames_per_step(env) -> int:
  """Emulator frames per step of an ALE env (its frameskip: 1 for NoFrameskip-v4)."""
  skip = getattr(env.unwrapped, '_frameskip', 1)
  if isinstance(skip, (tuple, list)):  # A random skip in [low, high): its mean.
    return max(1, round(sum(skip) / len(skip)))
  return int(skip) if isinstance(skip, (int, float)) and skip >= 1 else 1


def is_atari(env_id: str) -> bool:
  return env_id.startswith('ALE/') or 'NoFrameskip' in env_id


def install(episode_dir: str) -> None:
  """Wraps every Atari env that gymnasium.make builds from now on in EpisodeLog."""
  original = gymnasium.make
  if getattr(original, 'seed_bench_patched', False):
    return

  def make(env_id, *args, **kwargs):
    env = original(env_id, *args, **kwargs)
    name = env_id if isinstance(env_id, str) else getattr(env_id, 'id', '')
    if not is_atari(name):
      return env
    path = os.path.join(episode_dir, f'env_{os.getpid()}_{next(_files)}.csv')
    return EpisodeLog(env, path, frames_per_step(env))

  make.seed_bench_patched = True
  # Both names: gymnasium.make is what `gym.make(...)` calls, the registration module's
  # own is what EnvSpec.make calls (RL Zoo makes its envs from the spec).
  gymnasium.make = make
  gymnasium.envs.registration.make = make


def _register_atari() -> None:
  """Registers ale-py's envs with gymnasium (an import on 0.29, register_envs on 1.x)."""
  import ale_py  # pylint: disable=import-outside-toplevel
  if hasattr(gymnasium, 'register_envs'):
    gymnasium.register_envs(ale_py)


def main(argv) -> int:
  if len(argv) < 2 or argv[1] not in PEERS:
    print(f'usage: peer_launch.py {{{"|".join(PEERS)}}} [its own flags]; got {argv[1:2]}',
          file=sys.stderr)
    return 2
  peer, sys.argv = argv[1], [argv[0]] + argv[2:]
  _register_atari()
  if peer == 'sample_factory':
    from sf_examples.atari.train_atari import main as train  # pylint: disable=import-outside-toplevel
    return train()
  if {'-i', '--trained-agent'} & set(sys.argv):
    continue_step_counter()
  from rl_zoo3.train import train  # pylint: disable=import-outside-toplevel
  train()
  return 0


def continue_step_counter() -> None:
  """Makes a resumed RL Zoo run go on where it stopped.

  RL Zoo's -i loads the saved model and calls its learn(n), which starts SB3's step
  counter at 0 again, and with it the linear schedules of the learning rate and the clip
  range (they follow the fraction of the budget left). With reset_num_timesteps=False,
  SB3's own way to continue a run, the counter goes on from the save and the budget is
  n more steps: given the rest of the budget (the bench's -n), the schedules continue
  as in one unbroken run."""
  from stable_baselines3 import PPO  # pylint: disable=import-outside-toplevel
  learn = PPO.learn

  def continued(self, *args, **kwargs):
    kwargs['reset_num_timesteps'] = False
    return learn(self, *args, **kwargs)

  PPO.learn = continued


# At import, in the launching process and in every spawned child (see the module doc).
if os.environ.get(EPISODE_DIR_ENV):
  _register_atari()
  install(os.environ[EPISODE_DIR_ENV])

if __name__ == '__main__':
  sys.exit(main(sys.argv))
