"""Pong env steps per second and per CPU-second: EnvPool against seed's ale-py path.

  python -m bench.env_rate --backend ale --envs 4
  python -m bench.env_rate --backend envpool --envs 16 --threads 2    (pip install envpool)

Random actions, one process, --seconds of stepping after the resets. `ale` is what a
seed actor steps: ale-py through gymnasium's AtariPreprocessing (frame skip 4 with
max-pooling, 84 x 84 grayscale, up to 30 no-ops) and a 4-frame stack, k envs in turn;
`envpool` is EnvPool's C++ vectorised Atari with the same preprocessing (no fire reset,
no life loss, unclipped rewards), k envs stepped in one call by its --threads.
"""
import argparse
import sys
import time

import numpy as np

FRAME_SKIP = 4


def _envpool_stepper(num_envs: int, threads: int):
  import envpool  # pylint: disable=g-import-not-at-top
  pool = envpool.make('Pong-v5', env_type='gymnasium', num_envs=num_envs, batch_size=num_envs,
                      num_threads=threads, seed=0, episodic_life=False, reward_clip=False,
                      repeat_action_probability=0.0, noop_max=30, use_fire_reset=False,
                      stack_num=4, frame_skip=FRAME_SKIP, img_height=84, img_width=84)
  pool.reset()
  return lambda actions: pool.step(actions)


def _ale_stepper(num_envs: int):
  from seed.envs import atari  # pylint: disable=g-import-not-at-top
  envs = [atari.make_atari('Pong', seed=i) for i in range(num_envs)]
  for env in envs:
    env.reset()

  def step(actions):
    for env, action in zip(envs, actions):
      _, _, terminated, truncated, _ = env.step(int(action))
      if terminated or truncated:
        env.reset()
  return step


def measure(backend: str, num_envs: int, threads: int, seconds: float) -> dict:
  step = (_envpool_stepper(num_envs, threads) if backend == 'envpool'
          else _ale_stepper(num_envs))
  rng = np.random.default_rng(0)
  steps, start, cpu_start = 0, time.perf_counter(), time.process_time()
  while time.perf_counter() - start < seconds:
    step(rng.integers(0, 6, num_envs))
    steps += num_envs
  wall, cpu = time.perf_counter() - start, time.process_time() - cpu_start
  return {'backend': backend, 'envs': num_envs, 'threads': threads,
          'env_steps_per_s': steps / wall, 'frames_per_s': FRAME_SKIP * steps / wall,
          'cpu_pct': 100 * cpu / wall, 'env_steps_per_cpu_s': steps / cpu}


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--backend', choices=('ale', 'envpool'), default='ale')
  parser.add_argument('--envs', type=int, default=4)
  parser.add_argument('--threads', type=int, default=1, help="EnvPool's worker threads")
  parser.add_argument('--seconds', type=float, default=10.0)
  args = parser.parse_args(argv)
  row = measure(args.backend, args.envs, args.threads, args.seconds)
  print(f"| {row['backend']} | {row['envs']} | {row['threads']} | "
        f"{row['env_steps_per_s']:,.0f} | {row['frames_per_s']:,.0f} | {row['cpu_pct']:.0f} | "
        f"{row['env_steps_per_cpu_s']:,.0f} |")
  return 0


if __name__ == '__main__':
  sys.exit(main())
