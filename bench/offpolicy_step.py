"""An off-policy agent's train step (SAC, SR-SAC, DDPG), timed alone.

  python -m bench.offpolicy_step --gin_file gin/toy/sr_sac.gin --agent sr_sac
  python -m bench.offpolicy_step --gin_file gin/toy/sr_sac.gin --agent sr_sac \
      --gin_bindings "SACConfig.xla_train_step = False"

Builds the agent as the learner does (gin, the env's spec), then calls
`agent.train_step` (what the learner calls: `updates_per_step` updates of
`minibatch_transitions`, host copies included) on random transitions of the replay's
shape, `--steps` times after `--warmup_steps` (the first traces and, with XLA,
compiles), and prints one JSON line: wall and CPU milliseconds per train step (CPU
counts every TensorFlow thread of the process) and per update.
"""
import argparse
import json
import sys
import time

import numpy as np

from bench import hardware
from bench import model_cost
from tests import agent_inputs


def measure(gin_file: str, agent_name: str, steps: int, warmup_steps: int,
            intra_op_threads: int, gin_bindings=()):
  """{'xla_train_step', 'updates_per_step', 'wall_ms', 'cpu_ms', 'first_step_s'}."""
  agent = model_cost.build_agent(gin_file, agent_name, [1], intra_op_threads, gin_bindings)
  rng = np.random.default_rng(0)
  sample = agent_inputs.random_transition_sample(agent, agent.env_spec, rng)
  first = time.perf_counter()
  agent.train_step(sample)
  first_step_s = time.perf_counter() - first
  for _ in range(warmup_steps - 1):
    agent.train_step(sample)
  wall, cpu = time.perf_counter(), time.process_time()
  for _ in range(steps):
    agent.train_step(sample)  # Returns Python floats: each step has finished.
  updates = agent.config.updates_per_step
  wall_ms = 1000 * (time.perf_counter() - wall) / steps
  cpu_ms = 1000 * (time.process_time() - cpu) / steps
  return {'agent': agent_name, 'xla_train_step': agent.config.xla_train_step,
          'updates_per_step': updates, 'minibatch_transitions': agent.config.minibatch_transitions,
          'wall_ms': round(wall_ms, 2), 'cpu_ms': round(cpu_ms, 2),
          'wall_ms_per_update': round(wall_ms / updates, 3),
          'first_step_s': round(first_step_s, 1)}


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--gin_file', required=True)
  parser.add_argument('--gin_bindings', action='append', default=[])
  parser.add_argument('--agent', default='sac')
  parser.add_argument('--steps', type=int, default=100)
  parser.add_argument('--warmup_steps', type=int, default=3)
  parser.add_argument('--tf_intra_op_threads', type=int, default=0)
  args = parser.parse_args(argv)
  if args.steps < 1 or args.warmup_steps < 1:
    parser.error(f'--steps {args.steps} and --warmup_steps {args.warmup_steps}: each >= 1')
  print(json.dumps({**measure(args.gin_file, args.agent, args.steps, args.warmup_steps,
                             args.tf_intra_op_threads, args.gin_bindings),
                    'cpu': hardware.describe()}))
  return 0


if __name__ == '__main__':
  sys.exit(main())
