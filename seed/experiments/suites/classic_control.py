"""The classic-control suite: one config on six tasks with different rewards.

  seed suite classic_control --gin_file gin/classic/vtrace.gin --agent vtrace
  seed suite classic_control --gin_file gin/classic/ppo.gin --agent ppo \
      --tasks cartpole acrobot

Each task trains from scratch through the real gRPC path (a learner process and
--num_actors actor processes, seed.experiments.suites.learning_curve.train) for its frame budget,
--seed (0 by default). A task passes when the mean return of its last 100 training
episodes (1,000 for Blackjack's short, noisy hands) reaches its target, set well above
what a uniformly random policy gets (measured here on as many episodes, seeds 0, 1,
...). Prints a Markdown table for docs/learning.md
and writes one JSON line per task to --out. Never part of CI (about 30 minutes);
tests/learning/test_learning.py runs the two quickest tasks.
"""
import argparse
import json
import os
import sys
import tempfile
import time
from typing import NamedTuple, Tuple

import numpy as np

from seed.experiments.suites import learning_curve
from seed.envs import registry
from seed.run_dir import records


class Task(NamedTuple):
  """One task of the suite."""
  key: str
  env_name: str
  options: Tuple[Tuple[str, object], ...]
  rewards: str
  """What kind of reward it has, for the table."""
  max_env_frames: int
  target_return: float
  """Mean of the last `window_episodes` training episodes that counts as learnt."""
  window_episodes: int = 100
  """Episodes the final mean (and the random policy's) is taken over: more where one
  episode's return varies much against the margin over random."""


# Targets: CartPole's 500-step limit; Acrobot's -100 is the usual 'solved' bar
# (random: about -500); FrozenLake (slippery) succeeds about 74% of the time when
# played optimally and 1.5% at random; Taxi's optimal returns average about +8
# (random: about -770); LunarLander counts as solved at +200 (random: about -180);
# Blackjack (Sutton and Barto's rules) gives -0.33 a hand at random, -0.07 sticking
# from 17 and -0.04 with the basic strategy (100K hands each).
TASKS = (
    Task('cartpole', 'CartPole-v1', (), 'dense positive: +1 a step', 300_000, 400.0),
    # V-trace leaves the uniform policy once an episode first reaches the goal, after
    # 100K-250K frames in five runs; 500K leaves room for that.
    Task('acrobot', 'gym:Acrobot-v1', (), '-1 a step until the goal', 500_000, -150.0),
    Task('frozenlake', 'gym:FrozenLake-v1', (), 'sparse goal: +1 at the goal only',
         300_000, 0.5),
    Task('taxi', 'gym:Taxi-v4', (), '-1 a step, +20 delivery, -10 illegal moves',
         1_000_000, 0.0),
    # One hand of Blackjack is 1-3 steps and its return a +-1 draw (standard deviation
    # about 0.95), so its mean is taken over 1,000 hands: +-0.03.
    Task('blackjack', 'gym:Blackjack-v1', (), 'stochastic +-1 at the end of a hand',
         300_000, -0.15, window_episodes=1000),
    Task('lunarlander', 'gym:LunarLander-v3', (),
         'shaped, continuous state (box2d): distance, speed, legs, fuel, +-100 end',
         2_000_000, 100.0),
)
TASKS_BY_KEY = {task.key: task for task in TASKS}


def random_policy_return(task: Task) -> float:
  """Mean return of a uniformly random policy over the task's window of episodes,
  seeds 0..n-1."""
  returns = []
  for seed in range(task.window_episodes):
    env = registry.make_env(task.env_name, seed=seed, **dict(task.options))
    env.action_space.seed(seed)
    env.reset()
    total, done = 0.0, False
    while not done:
      _, reward, terminated, truncated, _ = env.step(env.action_space.sample())
      total += float(reward)
      done = terminated or truncated
    env.close()
    returns.append(total)
  return float(np.mean(returns))


def run_task(task: Task, args, logdir: str) -> dict:
  """Trains on `task` and returns its row of the table."""
  bindings = [f'EnvConfig.name={task.env_name!r}',
              f'EnvConfig.options={dict(task.options)!r}'] + args.gin_bindings
  train_args = argparse.Namespace(
      gin_file=args.gin_file, agent=args.agent, gin_bindings=bindings,
      learner_flag=args.learner_flag, seed=args.seed, num_actors=args.num_actors,
      num_envs=args.num_envs, max_env_frames=args.max_env_frames or task.max_env_frames)
  started = time.monotonic()
  code = learning_curve.train(train_args, logdir)
  wall_s = time.monotonic() - started
  episodes = records.read_training_episodes(logdir)
  last = [e.episode_return for e in episodes[-task.window_episodes:]]
  final = float(np.mean(last)) if last else float('nan')
  frames = episodes[-1].env_frames if episodes else 0
  return {'task': task.key, 'env': task.env_name, 'rewards': task.rewards,
          'window_episodes': task.window_episodes,
          'frames': frames, 'episodes': len(episodes), 'final_return': final,
          'target_return': task.target_return,
          'random_return': random_policy_return(task),
          'passed': bool(final >= task.target_return), 'wall_s': wall_s,
          'frames_per_s': frames / wall_s if wall_s else 0.0,
          'learner_exit': code, 'logdir': logdir}


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument('--gin_file', required=True)
  parser.add_argument('--agent', required=True)
  parser.add_argument('--tasks', nargs='+', choices=sorted(TASKS_BY_KEY),
                      default=[task.key for task in TASKS])
  parser.add_argument('--max_env_frames', type=int,
                      help="every task's frame budget instead of its own (a quick look)")
  parser.add_argument('--num_actors', type=int, default=2)
  parser.add_argument('--num_envs', type=int, default=4)
  parser.add_argument('--gin_bindings', action='append', default=[])
  parser.add_argument('--learner_flag', action='append', default=[])
  parser.add_argument('--seed', type=int, default=0, help="learner's and actors' --seed")
  parser.add_argument('--logdir', help='one run directory per task under it '
                      '(default: a temporary one, kept)')
  parser.add_argument('--out', help='JSON lines, one per task (default: <logdir>/suite.jsonl)')
  args = parser.parse_args(argv)
  logdir = args.logdir or tempfile.mkdtemp(prefix='seed-classic-')
  out = args.out or os.path.join(logdir, 'suite.jsonl')
  rows = []
  for key in args.tasks:
    row = run_task(TASKS_BY_KEY[key], args, os.path.join(logdir, key))
    rows.append(row)
    with open(out, 'a') as f:
      f.write(json.dumps(row) + '\n')
    print(f'{key}: {row["final_return"]:.2f} (target {row["target_return"]:g}, random '
          f'{row["random_return"]:.2f}) after {row["frames"]:,} frames', flush=True)
  print(f'\n# {args.gin_file} ({args.agent}), {args.num_actors} actors x {args.num_envs} '
        f'envs, seed {args.seed}')
  print('| task | rewards | frames | random | mean of the last episodes | target | '
        'pass | wall | frames/s |')
  print('|---|---|---:|---:|---:|---:|---|---:|---:|')
  for row in rows:
    print(f'| {row["env"]} | {row["rewards"]} | {row["frames"]:,} | '
          f'{row["random_return"]:.2f} | {row["final_return"]:.2f} | '
          f'{row["target_return"]:g} | {"yes" if row["passed"] else "NO"} | '
          f'{row["wall_s"] / 60:.1f} min | {row["frames_per_s"]:,.0f} |')
  print(f'rows: {out}')
  return 0 if all(row['passed'] and row['learner_exit'] == 0 for row in rows) else 1


if __name__ == '__main__':
  sys.exit(main())
