"""Atari env steps per second and per CPU-second: EnvPool against seed's ale-py path.

  python -m bench.env_rate --backend gymnasium --envs 4
  python -m bench.env_rate --backend envpool --envs 16 --threads 2
  python -m bench.env_rate --backend envpool --game Breakout

Random actions, one process, --seconds of stepping after the resets, through what an
actor steps (`EnvConfig.make_batch`, seed/envs/batch.py): `gymnasium` is ale-py through
gymnasium's AtariPreprocessing (frame skip 4 with max-pooling, 84 x 84 grayscale, up to
30 no-ops) and a 4-frame stack, k envs in turn; `envpool` is EnvPool's C++ Atari with the
same preprocessing, k envs stepped in one call by its --threads. CPU counts every thread
of the process.
"""
import argparse
import sys
import time

import numpy as np

from seed.envs import EnvConfig

from bench import hardware


def measure(backend: str, game: str, num_envs: int, threads: int, seconds: float) -> dict:
  envs = EnvConfig(name=f'atari:{game}', backend=backend,
                   envpool_threads=threads).make_batch(0, num_envs)
  envs.reset()
  rng = np.random.default_rng(0)
  steps, start, cpu_start = 0, time.perf_counter(), time.process_time()
  while time.perf_counter() - start < seconds:
    envs.step(rng.integers(0, envs.spec.num_actions, num_envs, dtype=np.int32))
    steps += num_envs
  wall, cpu = time.perf_counter() - start, time.process_time() - cpu_start
  envs.close()
  return {'backend': backend, 'envs': num_envs, 'threads': threads,
          'env_steps_per_s': steps / wall,
          'frames_per_s': envs.spec.frames_per_step * steps / wall,
          'cpu_pct': 100 * cpu / wall, 'env_steps_per_cpu_s': steps / cpu}


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--backend', choices=('gymnasium', 'envpool'), default='gymnasium')
  parser.add_argument('--game', default='Pong')
  parser.add_argument('--envs', type=int, default=4)
  parser.add_argument('--threads', type=int, default=1,
                      help="EnvPool's worker threads (EnvConfig.envpool_threads)")
  parser.add_argument('--seconds', type=float, default=10.0)
  args = parser.parse_args(argv)
  row = measure(args.backend, args.game, args.envs, args.threads, args.seconds)
  print(f'# {hardware.describe()}')
  print(f"| {row['backend']} | {row['envs']} | {row['threads']} | "
        f"{row['env_steps_per_s']:,.0f} | {row['frames_per_s']:,.0f} | {row['cpu_pct']:.0f} | "
        f"{row['env_steps_per_cpu_s']:,.0f} |")
  return 0


if __name__ == '__main__':
  sys.exit(main())
