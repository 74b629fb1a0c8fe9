"""Updates/s of N seeds trained in one batched update against a loop over N agents.

  python -m bench.seed_scaling                      # SR-SAC, 1/4/10 seeds, RR 32 and 128
  python -m bench.seed_scaling --seeds 1 2 --replay_ratios 8 --steps 2

The agent is SR-SAC's (gin/dmc/sr_sac.gin: 256x256 MLPs, minibatches of 256) on DM
Control cheetah-run's shapes (17 observations, 6 actions). For each replay ratio U and
seed count N it times train steps (U updates of every seed each) of:
  - batched: one agent with num_seeds=N (seed.agents.common.seed_axis: one compiled call,
    one einsum per layer for all seeds);
  - loop: N one-seed agents, one train step each in turn (what N processes sharing the
    machine would do at best, without their contention).
Samples are random transitions made once: only the update is timed, not the replay.
After `--warmup_steps` untimed steps (tracing), `--steps` timed ones; updates/s counts
every seed's updates. Prints a Markdown table for docs/performance.md.
"""
import argparse
import sys
import time

import numpy as np

from bench import hardware


def _sample(agent, spec, rows: int, rng):
  from seed import types  # pylint: disable=g-import-not-at-top
  steps = agent.config.n_steps + 1
  low, high = np.array(spec.action_low), np.array(spec.action_high)
  data = types.Steps(
      observation=rng.normal(size=(rows, steps) + spec.observation_shape).astype(np.float32),
      reward=rng.normal(size=(rows, steps)).astype(np.float32),
      terminated=np.zeros((rows, steps), bool), truncated=np.zeros((rows, steps), bool),
      action=rng.uniform(low, high, size=(rows, steps) + spec.action_shape).astype(np.float32),
      policy_outputs={})
  return types.Sample(ids=np.arange(rows, dtype=np.int64),
                      data=types.Unroll(steps=data, core_state=(),
                                        env_id=np.arange(rows, dtype=np.int64)),
                      weights=np.ones(rows, np.float32))


def updates_per_s(agents, samples, warmup_steps: int, steps: int) -> float:
  """Every agent trains on its sample `steps` times in turn; all seeds' updates per second."""
  for _ in range(warmup_steps):
    for agent, sample in zip(agents, samples):
      agent.train_step(sample)
  start = time.perf_counter()
  for _ in range(steps):
    for agent, sample in zip(agents, samples):
      agent.train_step(sample)
  elapsed = time.perf_counter() - start
  updates = sum(a.num_seeds * a.config.updates_per_step for a in agents) * steps
  return updates / elapsed


def measure(num_seeds: int, replay_ratio: int, warmup_steps: int, steps: int) -> dict:
  from seed.agents.sac.agent import SACAgent  # pylint: disable=g-import-not-at-top
  from seed.agents.sac.config import SACConfig  # pylint: disable=g-import-not-at-top
  from seed.envs import spec as spec_lib  # pylint: disable=g-import-not-at-top
  spec = spec_lib.EnvSpec((17,), 'float32', action_shape=(6,), action_dtype='float32',
                          action_low=(-1.0,) * 6, action_high=(1.0,) * 6)
  fields = dict(hidden_sizes=(256, 256), minibatch_transitions=256,
                updates_per_step=replay_ratio, target_entropy_scale=0.5)
  rng = np.random.default_rng(0)
  batched = SACAgent(spec, SACConfig(num_seeds=num_seeds, **fields))
  batched_rate = updates_per_s(
      [batched], [_sample(batched, spec, num_seeds * batched.batch_transitions, rng)],
      warmup_steps, steps)
  loop = [SACAgent(spec, SACConfig(seed=k, **fields)) for k in range(num_seeds)]
  loop_rate = updates_per_s(loop, [_sample(a, spec, a.batch_transitions, rng) for a in loop],
                            warmup_steps, steps)
  return {'num_seeds': num_seeds, 'replay_ratio': replay_ratio,
          'batched_updates_per_s': batched_rate, 'loop_updates_per_s': loop_rate}


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument('--seeds', type=int, nargs='+', default=[1, 4, 10])
  parser.add_argument('--replay_ratios', type=int, nargs='+', default=[32, 128])
  parser.add_argument('--warmup_steps', type=int, default=1)
  parser.add_argument('--steps', type=int, default=3)
  args = parser.parse_args(argv)
  print(hardware.describe())
  print('| replay ratio | seeds | batched updates/s | loop updates/s | batched / loop |')
  print('|---:|---:|---:|---:|---:|')
  for replay_ratio in args.replay_ratios:
    for num_seeds in args.seeds:
      row = measure(num_seeds, replay_ratio, args.warmup_steps, args.steps)
      print(f'| {replay_ratio} | {num_seeds} | {row["batched_updates_per_s"]:,.0f} | '
            f'{row["loop_updates_per_s"]:,.0f} | '
            f'{row["batched_updates_per_s"] / row["loop_updates_per_s"]:.2f} |', flush=True)
  return 0


if __name__ == '__main__':
  sys.exit(main())
