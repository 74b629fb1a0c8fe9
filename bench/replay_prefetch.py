"""Train steps/s of V-trace on a replay mixture, with and without batches prepared ahead.

  python -m bench.replay_prefetch                      # Atari-sized, elite, 0 and 2 ahead
  python -m bench.replay_prefetch --env cartpole --steps 200

The learner's trainer loop without actors: a V-trace agent (the shipped config's
network: Nature CNN on [4, 84, 84] frames for `atari`, the MLP for `cartpole`) trains
from a ReplayMixture of a queue and an elite replay (`--mixture`), which a feeder
thread keeps supplied with synthetic unrolls (random frames and logits, the agent's
own shapes) as fast as the queue takes them. For each `--prefetch` depth it times
`--steps` train steps after `--warmup` steps and prints steps/s and the time a step
waited for its batch. With depth 0 the trainer draws each batch itself (elite ranks
its candidates with the network first); with depth k a background thread draws up to
k ahead (seed/inputs/prefetch.py). On a machine with few cores both threads share
them, so report the core count beside the figures.
"""
import argparse
import json
import os
import threading
import time

import numpy as np

from bench import hardware

ELITE = ('[{"kind": "queue", "capacity": 2, "sample_ratio": 0.5}, '
         '{"kind": "elite", "capacity": 2000, "sample_ratio": 0.5, "strategy": 3, '
         '"lambda_batch_multiplier": 6, "lambda_annealing_steps": 1000000}]')
SPECS = {
    'atari': dict(observation_shape=(4, 84, 84), observation_dtype='uint8', num_actions=6,
                  gin_file='gin/atari/vtrace.gin'),
    'cartpole': dict(observation_shape=(4,), observation_dtype='float32', num_actions=2,
                     gin_file='gin/classic/vtrace.gin'),
}


def _unroll(rng, spec, steps: int):
  from seed import types  # pylint: disable=g-import-not-at-top
  shape = (steps,) + spec['observation_shape']
  if spec['observation_dtype'] == 'uint8':
    observation = rng.integers(0, 256, shape, dtype=np.uint8)
  else:
    observation = rng.normal(size=shape).astype(np.float32)
  return types.Unroll(
      steps=types.Steps(observation=observation,
                        reward=rng.normal(size=steps).astype(np.float32),
                        terminated=np.zeros(steps, bool), truncated=np.zeros(steps, bool),
                        action=rng.integers(0, spec['num_actions'], steps).astype(np.int32),
                        policy_outputs={'logits': rng.normal(
                            size=(steps, spec['num_actions'])).astype(np.float32)}),
      core_state=(), env_id=np.int64(0))


def measure(env: str, mixture_json: str, prefetch: int, steps: int, warmup: int) -> dict:
  """One timing: train steps/s and the mean wait for a batch, in ms."""
  import gin  # pylint: disable=g-import-not-at-top
  from seed.agents.vtrace import agent as agent_lib  # pylint: disable=g-import-not-at-top
  from seed.envs import spec as spec_lib  # pylint: disable=g-import-not-at-top
  from seed.inputs import mixture_spec  # pylint: disable=g-import-not-at-top
  from seed.inputs.mixture import ReplayMixture  # pylint: disable=g-import-not-at-top
  from seed.inputs.prefetch import PrefetchingInput  # pylint: disable=g-import-not-at-top

  spec = SPECS[env]
  gin.clear_config()
  gin.parse_config_files_and_bindings([spec['gin_file']], [])
  env_spec = spec_lib.EnvSpec(spec['observation_shape'], spec['observation_dtype'],
                              num_actions=spec['num_actions'])
  agent = agent_lib.VTraceAgent(env_spec)
  stop = threading.Event()
  mixture = ReplayMixture(mixture_spec.parse_json(mixture_json), agent.batch_unrolls, stop,
                          features=agent.replay_features, feature_output=agent.feature_output)
  source = (PrefetchingInput(mixture, agent.batch_unrolls, prefetch, stop) if prefetch
            else mixture)
  rng = np.random.default_rng(0)
  pool = [_unroll(rng, spec, agent.unroll_length + 1) for _ in range(64)]

  def feed():
    i = 0
    while not stop.is_set():
      if not source.put(pool[i % len(pool)]):
        return
      i += 1

  feeder = threading.Thread(target=feed, daemon=True)
  feeder.start()
  waited_s, started = 0.0, None
  try:
    for step in range(warmup + steps):
      if step == warmup:
        started, waited_s = time.perf_counter(), 0.0
      before = time.perf_counter()
      sample = None
      while sample is None:
        sample = source.sample(agent.batch_unrolls)
      waited_s += time.perf_counter() - before
      result = agent.train_step(sample)
      source.update_priorities(sample.ids, result.priorities)
    elapsed_s = time.perf_counter() - started
  finally:
    stop.set()
  return {'env': env, 'prefetch': prefetch, 'steps': steps,
          'steps_per_s': steps / elapsed_s, 'batch_wait_ms': 1000 * waited_s / steps}


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument('--env', choices=sorted(SPECS), default='atari')
  parser.add_argument('--mixture', default=ELITE, help='replay mixture JSON')
  parser.add_argument('--prefetch', type=int, nargs='+', default=[0, 2])
  parser.add_argument('--steps', type=int, default=30)
  parser.add_argument('--warmup', type=int, default=5)
  parser.add_argument('--json', help='also append the rows to this JSON-lines file')
  args = parser.parse_args(argv)
  print(f'# {hardware.describe()}')
  print(f'# V-trace train steps/s from {args.mixture}, env {args.env}, {os.cpu_count()} cores, '
        f'load average {os.getloadavg()[0]:.1f}')
  print('| prefetch (batches ahead) | train steps/s | batch wait (ms/step) |')
  print('|---:|---:|---:|')
  for depth in args.prefetch:
    row = measure(args.env, args.mixture, depth, args.steps, args.warmup)
    print(f'| {depth} | {row["steps_per_s"]:.2f} | {row["batch_wait_ms"]:.1f} |', flush=True)
    if args.json:
      with open(args.json, 'a') as f:
        f.write(json.dumps(row) + '\n')
  return 0


if __name__ == '__main__':
  raise SystemExit(main())
