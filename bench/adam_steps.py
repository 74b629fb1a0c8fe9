"""How far does Adam's epsilon shrink each layer's steps? (any agent's checkpoint)

  python -m bench.adam_steps --logdir RUN [--checkpoint RUN/ckpt/ckpt-N]

Restores the checkpoint as `seed.evaluate` does and reads, for every Adam optimizer in
it, each variable's second-moment estimate v: sqrt(v / (1 - beta_2^t)) is the RMS
gradient g of each parameter over its last ~1/(1 - beta_2) steps. Adam's step is
lr * m / (sqrt(v) + epsilon), so where g is small next to epsilon the step is
lr * g / (g + epsilon) of its nominal size: the table gives that factor's median per
variable, the median g, and the share of parameters that got no gradient at all
(g < 1e-10: units that never fire, or inputs that are always zero). It is how the
R2D2 Pong runs were found to move their LSTM and advantage head at 0.1-1% of the
learning rate (docs/learning.md, "R2D2 on Pong").

  python -m bench.adam_steps --logdir RUN --rmsprop_epsilon 1e-5

adds what RMSProp would step at the same RMS gradients: lr * g / sqrt(g^2 + epsilon),
its epsilon inside the square root as in Keras and TF1 (OpenAI baselines' ACER: 1e-5).
That comparison is why gin/atari/acer.gin trains with Adam.
"""
import argparse
import sys

import numpy as np

# An RMS gradient below this is a parameter no example reached.
_NO_GRADIENT = 1e-10


def step_factors(rms_gradients: np.ndarray, epsilon: float) -> np.ndarray:
  """g / (g + epsilon): Adam's step for RMS gradient g as a share of the learning rate."""
  return rms_gradients / (rms_gradients + epsilon)


def rmsprop_step_factors(rms_gradients: np.ndarray, epsilon: float) -> np.ndarray:
  """g / sqrt(g^2 + epsilon): RMSProp's step for RMS gradient g as a share of its learning
  rate, with epsilon inside the square root (Keras, TF1)."""
  return rms_gradients / np.sqrt(np.square(rms_gradients) + epsilon)


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument('--logdir', required=True)
  parser.add_argument('--checkpoint', default='')
  parser.add_argument('--rmsprop_epsilon', type=float, default=None,
                      help='also give RMSProp\'s step / lr at these RMS gradients, with '
                      'this epsilon inside the square root')
  args = parser.parse_args(argv)
  import keras  # pylint: disable=g-import-not-at-top
  from seed.evaluation import restore  # pylint: disable=g-import-not-at-top
  run_config, agent, env, prefix, counters = restore.restore_run(args.logdir, args.checkpoint)
  env.close()
  optimizers = {name: item for name, item in agent.checkpoint_items().items()
                if isinstance(item, keras.optimizers.Adam)}
  if not optimizers:
    raise SystemExit(f'{run_config.agent} keeps no Adam optimizer in its checkpoint')
  print(f'{run_config.agent}, {prefix} (env frames {counters.env_frames:,}, learner steps '
        f'{counters.learner_steps:,})')
  for name, optimizer in optimizers.items():
    steps = int(optimizer.iterations.numpy())
    epsilon = float(optimizer.epsilon)
    correction = 1.0 - float(optimizer.beta_2) ** max(steps, 1)
    print(f'\n{name}: {steps:,} steps, epsilon {epsilon:g}\n')
    rmsprop = args.rmsprop_epsilon
    print('| variable | shape | median RMS gradient | median step / lr | no gradient |'
          + (f' median RMSProp step / lr (epsilon {rmsprop:g}) |' if rmsprop else ''))
    print('|---|---|---:|---:|---:|' + ('---:|' if rmsprop else ''))
    for velocity in optimizer._velocities:  # pylint: disable=protected-access
      rms = np.sqrt(np.asarray(velocity.numpy(), np.float64) / correction)
      label = velocity.name.removesuffix('_velocity')
      print(f'| {label} | {tuple(velocity.shape)} | {np.median(rms):.1e} | '
            f'{np.median(step_factors(rms, epsilon)):.3f} | '
            f'{np.mean(rms < _NO_GRADIENT):.0%} |'
            + (f' {np.median(rmsprop_step_factors(rms, rmsprop)):.4f} |' if rmsprop else ''))
  return 0


if __name__ == '__main__':
  sys.exit(main())
