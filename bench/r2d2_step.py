"""Where R2D2's train step goes, at the shipped batch and sequence sizes, against the CPU.

  python -m bench.r2d2_step                       # gin/atari/r2d2.gin, 3 timed steps
  python -m bench.r2d2_step --steps 5 --jit_compile

Builds the agent from the Atari config (64 sequences of 40 burn-in + 80 trained + 1
steps, Nature CNN, LSTM 512, dueling heads) and times, on random sequences:
  train step     agent.train_step: what the learner calls, host copies included;
  online burn-in the online network over the 40 burn-in steps, no gradient;
  online trained the online network over the 81 trained steps, forward only;
  target         the target network over all 121 steps;
  fwd + bwd      the online network's trained part with its gradient.
Each is a traced tf.function, timed after one warm-up call (the median of --steps).
Beside them: the step's floating-point operations counted from the layer shapes
(multiply-adds × 2; backward counted as twice its forward), the GFLOP/s that makes, and
this CPU's float32 matmul rate (2048² × 2048², the best kernel it has) as the ceiling,
and its bfloat16 rate (above float32's only where the CPU has AVX512_BF16 or AMX).
With --jit_compile the train step is traced with XLA (tf.function(jit_compile=True)).
With --gin_bindings="R2D2Config.unroll_torso_dtype='bfloat16'" the torso's products run
in bfloat16 (docs/performance.md).
"""
import argparse
import json
import statistics
import sys
import time

import numpy as np

from bench import hardware

ATARI_CONFIG = 'gin/atari/r2d2.gin'


def conv_macs(in_hw, kernel, stride, in_channels, out_channels):
  """(multiply-adds, output side) of a VALID convolution on a square input."""
  out = (in_hw - kernel) // stride + 1
  return out * out * out_channels * kernel * kernel * in_channels, out


def nature_dueling_lstm_macs(num_actions: int, lstm_size: int, head_hidden: int,
                             stack: int = 4, side: int = 84) -> int:
  """Multiply-adds of one frame through the Nature CNN, the LSTM and dueling heads."""
  total, hw = 0, side
  for kernel, stride, channels_in, channels_out in ((8, 4, stack, 32), (4, 2, 32, 64),
                                                    (3, 1, 64, 64)):
    macs, hw = conv_macs(hw, kernel, stride, channels_in, channels_out)
    total += macs
  total += hw * hw * 64 * 512                       # the torso's dense layer
  total += (512 + lstm_size) * 4 * lstm_size        # LSTM gates (the input is the torso)
  total += lstm_size * head_hidden * 2               # value and advantage hidden layers
  total += head_hidden * (1 + num_actions)
  return total


def step_flops(frames_forward: int, frames_backward: int, macs_per_frame: int) -> float:
  """FLOPs of a step: 2 per multiply-add forward, and a backward of twice its forward."""
  return 2.0 * macs_per_frame * (frames_forward + 2 * frames_backward)


def median_s(fn, steps: int) -> float:
  """The median seconds of `steps` calls of `fn`, after one call that traces it."""
  fn()  # Traces (and compiles) first.
  times = []
  for _ in range(steps):
    start = time.perf_counter()
    fn()
    times.append(time.perf_counter() - start)
  return statistics.median(times)


def matmul_gflops(tf, size: int = 2048, calls: int = 10, dtype: str = 'float32') -> float:
  a = tf.cast(tf.random.normal((size, size)), dtype)
  b = tf.cast(tf.random.normal((size, size)), dtype)
  matmul = tf.function(lambda: tf.reduce_sum(tf.matmul(a, b)))
  seconds = median_s(lambda: matmul().numpy(), calls)
  return 2 * size ** 3 / seconds / 1e9


def run(steps: int, jit_compile: bool, intra_op_threads: int, gin_bindings=()) -> dict:
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  if intra_op_threads:
    tf.config.threading.set_intra_op_parallelism_threads(intra_op_threads)
  from seed import agents, config, types  # pylint: disable=g-import-not-at-top
  from seed.envs.spec import EnvSpec  # pylint: disable=g-import-not-at-top

  agents.register_gin_configurables('r2d2')
  config.parse_gin([ATARI_CONFIG], list(gin_bindings))
  spec = EnvSpec((4, 84, 84), 'uint8', num_actions=6, frames_per_step=4)  # Pong's
  agent = agents.agent_class('r2d2')(env_spec=spec)
  if jit_compile:
    agent._train_function = tf.function(agent._train, jit_compile=True)  # pylint: disable=protected-access
  cfg = agent.config
  rows, length = agent.batch_unrolls, agent.unroll_length + 1
  rng = np.random.default_rng(0)
  shape = (rows, length)
  steps_data = types.Steps(
      observation=rng.integers(0, 256, shape + spec.observation_shape, dtype=np.uint8),
      reward=rng.normal(size=shape).astype(np.float32),
      terminated=rng.random(shape) < 0.01, truncated=np.zeros(shape, bool),
      action=rng.integers(0, spec.num_actions, shape).astype(np.int32), policy_outputs={})
  core_state = tuple(np.zeros_like(x) for x in agent.initial_core_state(rows))
  sample = types.Sample(ids=np.arange(rows, dtype=np.int64),
                        data=types.Unroll(steps_data, core_state,
                                          env_id=np.arange(rows, dtype=np.int64)),
                        weights=np.ones(rows, np.float32))

  observation = tf.convert_to_tensor(np.swapaxes(steps_data.observation, 0, 1))
  done = tf.convert_to_tensor(np.swapaxes(steps_data.terminated, 0, 1))
  state = tuple(tf.convert_to_tensor(x) for x in core_state)
  burn = cfg.burn_in_steps
  online, target = agent.network, agent.target_network

  @tf.function
  def burn_in():
    return online.unroll(observation[:burn], done[:burn], state)[1]

  @tf.function
  def trained_forward():
    return online.unroll(observation[burn:], done[burn:], state)[0]

  @tf.function
  def target_all():
    return target.unroll(observation, done, state)[0]

  @tf.function
  def forward_backward():
    with tf.GradientTape() as tape:
      q = online.unroll(observation[burn:], done[burn:], state)[0]
      loss = tf.reduce_mean(tf.square(q))
    return tape.gradient(loss, online.trainable_variables)

  def numpy_of(fn):
    return lambda: tf.nest.map_structure(lambda t: t.numpy(), fn())

  timings = {
      'train step': median_s(lambda: agent.train_step(sample), steps),
      'online burn-in': median_s(numpy_of(burn_in), steps),
      'online trained': median_s(numpy_of(trained_forward), steps),
      'target': median_s(numpy_of(target_all), steps),
      'fwd + bwd': median_s(numpy_of(forward_backward), steps),
  }
  macs = nature_dueling_lstm_macs(spec.num_actions, cfg.lstm_size, cfg.head_hidden_size)
  trained_frames = rows * (length - burn)
  flops = step_flops(frames_forward=2 * rows * length, frames_backward=trained_frames,
                     macs_per_frame=macs)
  return {
      'config': f'{rows} sequences x ({burn} burn-in + {length - burn} trained) steps, '
                f'lstm {cfg.lstm_size}, jit_compile={jit_compile}, '
                f'intra-op threads {intra_op_threads or "default"}, torso in the unrolls '
                f'{cfg.unroll_torso_dtype}',
      'seconds': timings,
      'steps_per_s': 1 / timings['train step'],
      'mflop_per_frame_forward': 2 * macs / 1e6,
      'gflop_per_step': flops / 1e9,
      'gflops_achieved': flops / timings['train step'] / 1e9,
      'matmul_gflops': matmul_gflops(tf),
      'matmul_gflops_bfloat16': matmul_gflops(tf, dtype='bfloat16'),
  }


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--steps', type=int, default=3, help='timed calls of each part')
  parser.add_argument('--jit_compile', action='store_true')
  parser.add_argument('--tf_intra_op_threads', type=int, default=0)
  parser.add_argument('--gin_bindings', action='append', default=[],
                      help="e.g. R2D2Config.unroll_torso_dtype='bfloat16'")
  args = parser.parse_args(argv)
  if args.steps < 1:
    parser.error(f'--steps {args.steps}: at least 1')
  result = run(args.steps, args.jit_compile, args.tf_intra_op_threads, args.gin_bindings)
  print(json.dumps({**result, 'cpu': hardware.describe()}, indent=1))
  return 0


if __name__ == '__main__':
  sys.exit(main())
