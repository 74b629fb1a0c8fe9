"""How large a V-trace network's torso features, logits and values are, per checkpoint.

  python -m bench.feature_scale --gin_file gin/toy/vtrace.gin \
      --gin_bindings "EnvConfig.name='gym:Acrobot-v1'" --checkpoint_dir RUN/ckpt

The diagnosis behind docs/learning.md ("Why V-trace failed on Acrobot"): it walks the
env with uniformly random actions (seed 1, --states states), then prints for the
initial weights and for every checkpoint in the directory the mean L2 norm of the
torso features, the mean logit spread (max - min), the mean policy entropy, the mean
value head output and the norms of the two heads' kernels. Features that grow while
the policy head does not mean the value's scale is setting the policy's.
"""
import argparse
import glob
import os
import re
import sys

import gin
import numpy as np


def _walk(env, states: int) -> np.ndarray:
  rng = np.random.default_rng(1)
  observation, _ = env.reset(seed=1)
  observations = []
  for _ in range(states):
    observations.append(observation)
    observation, _, terminated, truncated, _ = env.step(int(rng.integers(env.action_space.n)))
    if terminated or truncated:
      observation, _ = env.reset()
  return np.asarray(observations)


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument('--gin_file', required=True)
  parser.add_argument('--gin_bindings', action='append', default=[])
  parser.add_argument('--checkpoint_dir', required=True)
  parser.add_argument('--states', type=int, default=400)
  args = parser.parse_args(argv)
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from seed.agents.vtrace import agent as agent_lib  # pylint: disable=g-import-not-at-top
  from seed.envs import registry  # pylint: disable=g-import-not-at-top

  gin.parse_config_files_and_bindings([args.gin_file], args.gin_bindings)
  env_config = registry.EnvConfig()
  agent = agent_lib.VTraceAgent(env_config.spec())
  network = agent.network
  observations = _walk(env_config.make(seed=1), args.states)

  def report(label: str) -> None:
    # The network's own step, split where the heads start (no LSTM in these configs).
    features, _ = network._core_step(observations, np.zeros(len(observations), bool), ())  # pylint: disable=protected-access
    logits, value = network._heads(features)  # pylint: disable=protected-access
    logits = logits.numpy()
    log_probs = tf.nn.log_softmax(logits).numpy()
    entropy = -(np.exp(log_probs) * log_probs).sum(-1).mean()
    print(f'| {label} | {np.linalg.norm(features, axis=-1).mean():.2f} | '
          f'{(logits.max(-1) - logits.min(-1)).mean():.2f} | {entropy:.3f} | '
          f'{value.numpy().mean():.2f} | '
          f'{np.linalg.norm(network._policy_head.kernel.numpy()):.2f} | '  # pylint: disable=protected-access
          f'{np.linalg.norm(network.baseline_head.kernel.numpy()):.2f} |')

  print('| weights | feature L2 | logit spread | entropy | value head | policy kernel | '
        'value kernel |')
  print('|---|---:|---:|---:|---:|---:|---:|')
  report('init')
  paths = glob.glob(os.path.join(args.checkpoint_dir, 'ckpt-*.index'))
  for path in sorted(paths, key=lambda p: int(re.search(r'ckpt-(\d+)', p).group(1))):
    prefix = path[:-len('.index')]
    tf.train.Checkpoint(model=network).restore(prefix).expect_partial()
    report(os.path.basename(prefix))
  return 0


if __name__ == '__main__':
  sys.exit(main())
