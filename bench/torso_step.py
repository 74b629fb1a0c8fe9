"""Where a V-trace update's time goes on this CPU: the Nature torso layer by layer, the
first layer's kernel gradient both ways, and the whole train step.

  python -m bench.torso_step                 # everything, about a minute on 2 cores
  python -m bench.torso_step --parts layers  # matmul, layers, kernel gradient only
  python -m bench.torso_step --parts profile # the train step's ops, by TensorFlow's profiler

Prints one JSON line: the CPU (bench/hardware.py), a float32 matmul's GFLOP/s (2048^3),
each torso layer's forward and forward+backward milliseconds on a minibatch of 256
frames (one of V-trace's 16 updates per batch in gin/atari/vtrace.gin), the first
layer's kernel gradient as TensorFlow's Conv2DBackpropFilter and as
seed.agents.common.strided_conv computes it, and the median of `--steps` V-trace train
steps (gin/atari/vtrace.gin, 8 unrolls of 129 random Pong-sized frames, 18 actions).
The profile part runs `--steps` train steps under TensorFlow's profiler and gives each op
its thread-milliseconds per step (summed over TensorFlow's compute threads, so they add
up to about the step's wall time times the threads busy), the `--top` largest; an op
inside the updates' loop is named without the loop's prefix.
Run it with nothing else on the machine: docs/performance.md, "The first layer's kernel
gradient".
"""
import argparse
import collections
import glob
import json
import re
import tempfile
import time

import numpy as np

from bench import hardware
from bench.r2d2_step import matmul_gflops, median_s

MINIBATCH_FRAMES = 256
CALLS = 10  # timed calls of each piece (their median)


def layer_ms():
  """{layer: (forward ms, forward + backward ms)} for the Nature torso's layers."""
  import tensorflow as tf  # pylint: disable=import-outside-toplevel
  n = MINIBATCH_FRAMES
  layers = [('conv_0', tf.keras.layers.Conv2D(32, 8, 4, activation='relu'), [n, 84, 84, 4]),
            ('conv_1', tf.keras.layers.Conv2D(64, 4, 2, activation='relu'), [n, 20, 20, 32]),
            ('conv_2', tf.keras.layers.Conv2D(64, 3, 1, activation='relu'), [n, 9, 9, 64]),
            ('fc', tf.keras.layers.Dense(512, activation='relu'), [n, 3136])]
  result = {}
  for name, layer, shape in layers:
    x = tf.random.uniform(shape)
    layer(x)
    forward = tf.function(lambda x=x, layer=layer: tf.reduce_sum(layer(x)))

    def both(x=x, layer=layer, first=(name == 'conv_0')):
      with tf.GradientTape() as tape:
        if not first:  # the first layer's input is the frames: no gradient for it
          tape.watch(x)
        y = tf.reduce_sum(layer(x))
      return tape.gradient(y, layer.trainable_variables + ([] if first else [x]))

    both = tf.function(both)
    result[name] = (round(1e3 * median_s(lambda: forward().numpy(), CALLS), 1),
                    round(1e3 * median_s(lambda: [g.numpy() for g in both()], CALLS), 1))
  return result


def kernel_gradient_ms():
  """The first layer's kernel gradient on 256 frames: (TensorFlow's op, strided_conv) ms."""
  import tensorflow as tf  # pylint: disable=import-outside-toplevel
  from seed.agents.common import strided_conv  # pylint: disable=import-outside-toplevel
  x = tf.random.uniform([MINIBATCH_FRAMES, 84, 84, 4])
  dy = tf.random.normal([MINIBATCH_FRAMES, 20, 20, 32])
  tensorflows = tf.function(lambda: tf.raw_ops.Conv2DBackpropFilter(
      input=x, filter_sizes=[8, 8, 4, 32], out_backprop=dy, strides=[1, 4, 4, 1],
      padding='VALID'))
  forward = tf.function(lambda: strided_conv.kernel_gradient(x, dy, (8, 8), 4))
  return (round(1e3 * median_s(lambda: tensorflows().numpy(), CALLS), 1),
          round(1e3 * median_s(lambda: forward().numpy(), CALLS), 1))


def vtrace_agent_and_sample():
  """A V-trace agent of gin/atari/vtrace.gin for 18 actions and a sample of one batch of
  random Pong-sized frames (agent, types.Sample)."""
  from seed import agents, config as config_lib, types  # pylint: disable=import-outside-toplevel
  from seed.envs import spec as spec_lib  # pylint: disable=import-outside-toplevel
  agents.register_gin_configurables('vtrace')
  config_lib.parse_gin(['gin/atari/vtrace.gin'], [])
  spec = spec_lib.EnvSpec((4, 84, 84), 'uint8', num_actions=18, frames_per_step=4)
  agent = agents.agent_class('vtrace')(env_spec=spec)
  config = agent.config
  rng = np.random.default_rng(0)
  shape = (config.batch_unrolls, config.unroll_length + 1)
  data = types.Steps(
      observation=rng.integers(0, 256, shape + spec.observation_shape).astype(np.uint8),
      reward=rng.normal(size=shape).astype(np.float32),
      terminated=np.zeros(shape, bool), truncated=np.zeros(shape, bool),
      action=rng.integers(0, spec.num_actions, shape).astype(np.int32),
      policy_outputs={'logits': rng.normal(size=shape + (spec.num_actions,)).astype(np.float32)})
  rows = shape[0]
  sample = types.Sample(
      ids=np.arange(rows, dtype=np.int64),
      data=types.Unroll(steps=data, core_state=tuple(
          np.asarray(x) for x in agent.initial_core_state(rows)),
                        env_id=np.arange(rows, dtype=np.int64)),
      weights=np.ones(rows, np.float32))
  return agent, sample


def vtrace_step_s(steps: int):
  """Seconds of each of `steps` V-trace train steps of gin/atari/vtrace.gin (one traced first)."""
  agent, sample = vtrace_agent_and_sample()
  agent.train_step(sample)
  return [round(t, 3) for t in _step_times(agent, sample, steps)]


def _step_times(agent, sample, steps: int):
  """Seconds of each of `steps` calls of agent.train_step(sample)."""
  times = []
  for _ in range(steps):
    start = time.perf_counter()
    agent.train_step(sample)
    times.append(time.perf_counter() - start)
  return times


# The updates' loop names its ops 'while/body/_<k>/while/...' and their gradients
# '.../gradient_tape/while/...' (the first update, outside it, plainly): dropped, so an
# op reads the same in and out of the loop.
_LOOP_SCOPES = re.compile(r'while/body/_\d+/|while/')


def op_profile_ms(steps: int, top: int):
  """(median step seconds while profiled, {op: thread-ms per step}) of `steps` V-trace
  train steps under TensorFlow's profiler, the `top` largest ops."""
  import tensorflow as tf  # pylint: disable=import-outside-toplevel
  # The profile's own format (XSpace); read here without TensorBoard's profile plugin.
  from tensorflow.tsl.profiler.protobuf import xplane_pb2  # pylint: disable=import-outside-toplevel
  agent, sample = vtrace_agent_and_sample()
  agent.train_step(sample)
  with tempfile.TemporaryDirectory() as logdir:
    tf.profiler.experimental.start(logdir)
    times = _step_times(agent, sample, steps)
    tf.profiler.experimental.stop()
    space = xplane_pb2.XSpace()
    with open(glob.glob(f'{logdir}/**/*.xplane.pb', recursive=True)[0], 'rb') as f:
      space.ParseFromString(f.read())
  ms = collections.Counter()
  for plane in space.planes:
    for line in plane.lines:
      if not line.name.startswith('tf_Compute'):
        continue
      for event in line.events:
        name = plane.event_metadata[event.metadata_id].name
        if ':' in name and '::' not in name:  # an op ('scope/name:Type'), not the executor
          ms[_LOOP_SCOPES.sub('', name)] += event.duration_ps / 1e9 / steps
  return float(np.median(times)), {name: round(value, 1) for name, value in ms.most_common(top)}


def main(argv=None) -> None:
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--parts', default='layers,step',
                      help='comma-separated: layers, step, profile')
  parser.add_argument('--steps', type=int, default=5, help='V-trace train steps timed')
  parser.add_argument('--top', type=int, default=25, help='ops the profile part lists')
  args = parser.parse_args(argv)
  parts = set(args.parts.split(','))
  unknown = parts - {'layers', 'step', 'profile'}
  if unknown:
    parser.error(f'--parts {args.parts}: unknown {", ".join(sorted(unknown))}; '
                 'accepted: layers, step, profile')
  result = {'cpu': hardware.describe()}
  if 'layers' in parts:
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    result['matmul_gflops'] = round(matmul_gflops(tf), 1)
    result['layer_ms_forward_and_both'] = layer_ms()
    result['kernel_gradient_ms_tensorflow_and_strided_conv'] = kernel_gradient_ms()
  if 'step' in parts:
    times = vtrace_step_s(args.steps)
    result['vtrace_step_s'] = times
    result['vtrace_step_median_s'] = float(np.median(times))
  if 'profile' in parts:
    step_s, ops = op_profile_ms(args.steps, args.top)
    result['profiled_step_median_s'] = round(step_s, 3)
    result['op_thread_ms_per_step'] = ops
  print(json.dumps(result))


if __name__ == '__main__':
  main()
