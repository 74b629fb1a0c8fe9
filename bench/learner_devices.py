"""Train steps per second of one learner on 1, 2 and 4 devices (--learner_devices).

  python -m bench.learner_devices --gin_file gin/atari/vtrace.gin --agent vtrace \
      --devices 1,2,4 [--gin_bindings ...] [--steps 10]

Each device count runs in a child process of its own (logical devices are fixed when
TensorFlow starts; naming CPU devices splits the CPU, as the learner's flag does): the
agent built under the strategy the learner would use, then --steps train steps on
random batches of the agent's shape after two to warm up. On this machine's CPU the
logical devices share the same cores: the figures measure what splitting the batch
costs, not a speed-up; on a host with several GPUs, name them (--device_kind GPU).
"""
import argparse
import json
import os
import subprocess
import sys

from bench import hardware

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_CHILD = r'''
import json, sys, time
import numpy as np
args = json.loads(sys.argv[1])
import tensorflow as tf
from seed.learner import devices as learner_devices
names = ','.join(f"{args['kind']}:{i}" for i in range(args['devices']))
if args['devices'] > 1 or args['kind'] != 'CPU':
  learner_devices.split_cpu(names)
from seed import agents, config, types
from seed.envs import EnvConfig

agents.register_gin_configurables(args['agent'])
config.parse_gin([args['gin_file']], args['gin_bindings'])
spec = EnvConfig().spec()
agent_class = agents.agent_class(args['agent'])
strategy = (learner_devices.strategy(names, args['agent'], agent_class.several_devices_refusal)
            if args['devices'] > 1 else tf.distribute.get_strategy())
with strategy.scope():
  agent = agent_class(env_spec=spec)
  agent.warm_up([1])
rng = np.random.default_rng(0)
# Several seeds in one agent (SR-SAC) train on every seed's rows, seed by seed.
rows, length = agent.num_seeds * agent.batch_unrolls, agent.unroll_length + 1
shape = (rows, length)
if spec.observation_dtype == 'uint8':
  observation = rng.integers(0, 255, shape + spec.observation_shape).astype(np.uint8)
else:
  observation = rng.normal(size=shape + spec.observation_shape).astype(spec.observation_dtype)
if spec.is_discrete:
  action = rng.integers(0, spec.num_actions, shape).astype(np.int32)
  output_shape = (spec.num_actions,)
else:
  action = rng.uniform(spec.action_low, spec.action_high,
                       shape + spec.action_shape).astype(np.float32)
  output_shape = spec.action_shape
steps = types.Steps(observation, rng.normal(size=shape).astype(np.float32),
                    rng.random(shape) < 0.01, np.zeros(shape, bool), action,
                    policy_outputs={name: rng.normal(size=shape + output_shape).astype(np.float32)
                                    for name in agent.trained_outputs})
core_state = tuple(np.asarray(x) for x in agent.initial_core_state(rows))
sample = types.Sample(np.arange(rows), types.Unroll(steps, core_state, np.arange(rows)),
                      np.ones(rows, np.float32))
for _ in range(2):
  agent.train_step(sample)
start = time.perf_counter()
for _ in range(args['steps']):
  agent.train_step(sample)
seconds = time.perf_counter() - start
print(json.dumps({'devices': args['devices'], 'steps_per_s': args['steps'] / seconds,
                  'batch': rows, 'unroll_steps': length}))
'''


def measure(gin_file: str, agent: str, devices: int, steps: int, gin_bindings, kind: str):
  args = dict(gin_file=gin_file, agent=agent, devices=devices, steps=steps,
              gin_bindings=list(gin_bindings), kind=kind)
  result = subprocess.run([sys.executable, '-c', _CHILD, json.dumps(args)],
                          capture_output=True, text=True, cwd=REPO, timeout=1800,
                          env=dict(os.environ, PYTHONPATH=REPO, TF_CPP_MIN_LOG_LEVEL='2'))
  if result.returncode != 0:
    raise RuntimeError(f'{devices} device(s): {result.stderr[-2000:]}')
  return json.loads(result.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--gin_file', default='gin/toy/vtrace.gin')
  parser.add_argument('--agent', default='vtrace')
  parser.add_argument('--gin_bindings', action='append', default=[])
  parser.add_argument('--devices', default='1,2,4')
  parser.add_argument('--device_kind', default='CPU', choices=('CPU', 'GPU'))
  parser.add_argument('--steps', type=int, default=10)
  args = parser.parse_args(argv)
  print(f'{args.agent}, {args.gin_file} {args.gin_bindings}, {args.device_kind} devices; '
        f'{hardware.describe()}')
  print('| devices | train steps/s | batch (unrolls x steps) |')
  print('|---:|---:|---|')
  for count in (int(n) for n in args.devices.split(',')):
    row = measure(args.gin_file, args.agent, count, args.steps, args.gin_bindings,
                  args.device_kind)
    print(f"| {row['devices']} | {row['steps_per_s']:.2f} | {row['batch']} x "
          f"{row['unroll_steps']} |", flush=True)
  return 0


if __name__ == '__main__':
  sys.exit(main())
