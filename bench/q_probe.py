"""Does an action-value agent's network tell states and actions apart? (R2D2 checkpoints)

  python -m bench.q_probe --logdir RUN [--checkpoint RUN/ckpt/ckpt-N] [--steps 600]

Restores the checkpoint as `seed.evaluate` does (the run's saved config and agent),
plays one env for --steps steps, half of them uniformly random so the states vary and
half greedy, carrying the recurrent state, and prints: how often each action is the
greedy one, the mean Q per action, the mean spread max_a Q - min_a Q per state, and
each action's Q standard deviation across states. Q is in the agent's rescaled units
(R2D2's h). A network whose spreads and standard deviations stay near 0 has not yet
learnt what its states are worth, whatever the episode returns show (docs/learning.md,
"R2D2 on Pong").
"""
import argparse
import collections
import sys

import numpy as np


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument('--logdir', required=True)
  parser.add_argument('--checkpoint', default='')
  parser.add_argument('--steps', type=int, default=600)
  args = parser.parse_args(argv)
  from seed import types  # pylint: disable=g-import-not-at-top
  from seed.evaluation import restore  # pylint: disable=g-import-not-at-top
  run_config, agent, env, prefix, counters = restore.restore_run(args.logdir, args.checkpoint)
  policy = agent.batched_policy(1)
  acting = types.stack_acting_params([agent.acting_params(0, True)])
  num_actions = env.action_space.n
  observation, _ = env.reset(seed=0)
  core_state = agent.initial_core_state(1)
  reward, done = np.zeros(1, np.float32), np.zeros(1, bool)
  rng = np.random.default_rng(0)
  greedy, values = collections.Counter(), []
  for _ in range(args.steps):
    action, outputs, core_state = policy(observation[None], reward, done, core_state, acting)
    q = [np.asarray(v)[0] for v in (outputs.values() if hasattr(outputs, 'values') else outputs)
         if np.ndim(v) == 2 and np.shape(v)[-1] == num_actions]
    if not q:
      raise ValueError(f'{run_config.agent} gives no [1, {num_actions}] action values')
    values.append(q[0])
    greedy[int(np.asarray(action)[0])] += 1
    step_action = int(rng.integers(num_actions)) if rng.random() < 0.5 else int(action[0])
    observation, r, terminated, truncated, _ = env.step(step_action)
    reward[0], done[0] = r, False
    if terminated or truncated:
      observation, _ = env.reset()
      done[0] = True
  env.close()
  values = np.asarray(values)
  print(f'{run_config.agent}, {prefix} (env frames {counters.env_frames:,}, learner steps '
        f'{counters.learner_steps:,}), {args.steps} steps')
  print('| action | greedy | mean Q | Q std across states |')
  print('|---|---:|---:|---:|')
  for a in range(num_actions):
    print(f'| {a} | {greedy[a] / args.steps:.0%} | {values[:, a].mean():.3f} | '
          f'{values[:, a].std():.4f} |')
  print(f'mean spread max_a Q - min_a Q: {(values.max(1) - values.min(1)).mean():.4f}')
  return 0


if __name__ == '__main__':
  sys.exit(main())
