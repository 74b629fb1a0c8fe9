"""How large and how state-dependent a network's torso features, logits and values are,
per checkpoint (V-trace, ACER and PPO networks with a torso: mlp or image).

  python -m bench.feature_scale --gin_file gin/toy/vtrace.gin \
      --gin_bindings "EnvConfig.name='gym:Acrobot-v1'" --checkpoint_dir RUN/ckpt
  python -m bench.feature_scale --gin_file gin/atari/ppo.gin --agent ppo \
      --checkpoint_dir RUN/ckpt --states 300
  python -m bench.feature_scale --gin_file gin/atari/acer.gin --agent acer \
      --checkpoint_dir RUN/ckpt --states 300     # value: E_pi Q(x, .)

The diagnoses behind docs/learning.md ("Why V-trace failed on Acrobot", "Pong"): it
walks the env with uniformly random actions (seed 1, --states states), then prints for
the initial weights and for every checkpoint in the directory: the mean L2 norm of the
torso features, the mean logit spread (max - min), the mean policy entropy, the mean
value, the norms of the two heads' kernels, the fraction of first-layer units that
never fire on these states, the torso features' per-unit standard deviation across
states and the logits' (how much the network tells the states apart). Features that
grow while the policy head does not mean the value's scale is setting the policy's;
features that do not vary across states leave the policy nothing to act on.
"""
import argparse
import glob
import os
import re
import sys
from typing import Callable, NamedTuple

import gin
import numpy as np

from bench import torso_probe


class _Probe(NamedTuple):
  """The parts of a V-trace, ACER or PPO network that the report reads."""
  network: object
  torso_name: str
  torso_layers: list
  heads: Callable  # features [N, F] -> (logits [N, A], value [N])
  policy_head: object
  value_head: object


def _probe(agent_name: str, agent) -> _Probe:
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  # pylint: disable=protected-access
  if agent_name == 'vtrace':
    network = agent.network
    return _Probe(network, network.torso, list(network._torso_layers), network._heads,
                  network._policy_head, network.baseline_head)
  if agent_name == 'acer':
    network = agent._network

    def policy_value(features):  # ACER's second head is Q(x, .): the value is E_pi Q.
      logits, q_values = network._heads(features)
      return logits, tf.reduce_sum(tf.nn.softmax(logits) * q_values, axis=-1)

    return _Probe(network, network.torso, list(network._torso_layers), policy_value,
                  network._policy_head, network.baseline_head)
  network = agent._network
  if network._torso_name == 'mlp':
    raise ValueError('PPO on vector observations keeps separate policy and value MLPs; this '
                     'probe reads a shared torso (image observations)')

  def heads(features):
    return network._policy_head(features), tf.squeeze(network._value_head(features), -1)

  layers = [getattr(network, f'_torso_layer_{i}') for i in range(network._num_torso_layers)]
  return _Probe(network, network._torso_name, layers, heads, network._policy_head,
                network._value_head)


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument('--gin_file', required=True)
  parser.add_argument('--gin_bindings', action='append', default=[])
  parser.add_argument('--agent', choices=('vtrace', 'acer', 'ppo'), default='vtrace')
  parser.add_argument('--checkpoint_dir', required=True)
  parser.add_argument('--states', type=int, default=400)
  args = parser.parse_args(argv)
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from seed import agents  # pylint: disable=g-import-not-at-top
  from seed.agents.common import torsos  # pylint: disable=g-import-not-at-top
  from seed.envs import registry  # pylint: disable=g-import-not-at-top

  agent_class = agents.agent_class(args.agent)
  gin.parse_config_files_and_bindings([args.gin_file], args.gin_bindings)
  env_config = registry.EnvConfig()
  probe = _probe(args.agent, agent_class(env_config.spec()))
  observations = torso_probe.random_play_observations(env_config.make(seed=1), args.states,
                                                      seed=1)

  def report(label: str) -> None:
    # The torso as apply_torso runs it (no LSTM in these configs).
    outputs = torsos.torso_layer_outputs(probe.torso_layers, probe.torso_name, observations)
    first = tf.reshape(outputs[0][1], [len(observations), -1]).numpy()
    x = outputs[-1][1]
    features = x.numpy()
    logits, value = probe.heads(x)
    logits = logits.numpy()
    log_probs = tf.nn.log_softmax(logits).numpy()
    entropy = -(np.exp(log_probs) * log_probs).sum(-1).mean()
    print(f'| {label} | {np.linalg.norm(features, axis=-1).mean():.2f} | '
          f'{(logits.max(-1) - logits.min(-1)).mean():.2f} | {entropy:.3f} | '
          f'{np.asarray(value).mean():.2f} | '
          f'{np.linalg.norm(probe.policy_head.kernel.numpy()):.2f} | '
          f'{np.linalg.norm(probe.value_head.kernel.numpy()):.2f} | '
          f'{100 * (first.max(0) <= 0).mean():.0f}% | {features.std(0).mean():.4f} | '
          f'{logits.std(0).mean():.4f} |')

  print('| weights | feature L2 | logit spread | entropy | value head | policy kernel | '
        'value kernel | first layer never active | feature std across states | '
        'logit std across states |')
  print('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|')
  report('init')
  paths = glob.glob(os.path.join(args.checkpoint_dir, 'ckpt-*.index'))
  for path in sorted(paths, key=lambda p: int(re.search(r'ckpt-(\d+)', p).group(1))):
    prefix = path[:-len('.index')]
    tf.train.Checkpoint(model=probe.network).restore(prefix).expect_partial()
    report(os.path.basename(prefix))
  return 0


if __name__ == '__main__':
  sys.exit(main())
