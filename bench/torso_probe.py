"""Is a checkpoint's torso alive? (agents with seed's torso: V-trace, PPO, ACER, Reactor, R2D2)

  python -m bench.torso_probe --logdir RUN [--checkpoint RUN/ckpt/ckpt-N] [--states 200]

Restores the checkpoint as `seed.evaluate` does, plays one env (seed 0) uniformly at
random for --states steps and feeds those observations through the network's torso
one layer at a time. For each layer it prints the share of units never active over all
states (a ReLU output that is 0 in every state; for a conv layer a unit is one channel
at one position), the mean activation, and the mean over units of their standard
deviation across states: a layer whose units are silent, or the same in every state,
passes little of the frame on. With an LSTM it adds the share of the input and output
gates' inputs (W x + b from the torso's features, without the recurrent part) beyond
|5|, where sigmoid passes no gradient. It is the probe behind docs/learning.md's
"Reactor on Pong" tables (dead units of a starved or collapsed torso, saturated gates).
"""
import argparse
import sys
from typing import Dict, List, Optional, Sequence

import numpy as np

# |x| beyond which sigmoid'(x) < 0.0067: a gate input there passes almost no gradient.
SATURATED = 5.0


def layer_stats(activations: np.ndarray, relu: bool = True) -> Dict[str, Optional[float]]:
  """[N states, ...units] -> never-active share (None for a layer without ReLU, whose
  outputs may be negative), mean, mean std across states."""
  units = activations.reshape(activations.shape[0], -1)
  return {'never_active': float(np.mean(np.all(units <= 0.0, axis=0))) if relu else None,
          'mean': float(units.mean()),
          'std_across_states': float(units.std(axis=0).mean())}


def gate_saturation(gate_inputs: np.ndarray) -> Dict[str, float]:
  """[N, 4 * units] in Keras' gate order (input, forget, cell, output) -> the share of
  the input and output gates' entries beyond |SATURATED|."""
  input_gate, _, _, output_gate = np.split(gate_inputs, 4, axis=-1)
  return {'input_gate_saturated': float(np.mean(np.abs(input_gate) > SATURATED)),
          'output_gate_saturated': float(np.mean(np.abs(output_gate) > SATURATED))}


def random_play_observations(env, states: int, seed: int = 0) -> np.ndarray:
  """[states, *observation_shape]: uniformly random play from env seed `seed`."""
  rng = np.random.default_rng(seed)
  observation, _ = env.reset(seed=seed)
  observations: List[np.ndarray] = []
  while len(observations) < states:
    observations.append(np.asarray(observation))
    observation, _, terminated, truncated, _ = env.step(int(rng.integers(env.action_space.n)))
    if terminated or truncated:
      observation, _ = env.reset()
  return np.stack(observations)


def table(rows: Sequence[tuple]) -> str:
  lines = ['| layer | units never active | mean activation | std across states (mean over units) |',
           '|---|---:|---:|---:|']
  for name, stats in rows:
    never_active = '—' if stats['never_active'] is None else f'{stats["never_active"]:.0%}'
    lines.append(f'| {name} | {never_active} | {stats["mean"]:.4f} | '
                 f'{stats["std_across_states"]:.4f} |')
  return '\n'.join(lines)


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument('--logdir', required=True)
  parser.add_argument('--checkpoint', default='')
  parser.add_argument('--states', type=int, default=200)
  args = parser.parse_args(argv)
  if args.states < 2:
    raise SystemExit(f'--states={args.states}; expected at least 2')
  from seed.evaluation import restore  # pylint: disable=g-import-not-at-top
  run_config, agent, env, prefix, counters = restore.restore_run(args.logdir, args.checkpoint)
  network = agent.checkpoint_items().get('model')
  if not hasattr(network, 'layer_outputs'):
    raise SystemExit(f'{run_config.agent}\'s model has no seed torso (layer_outputs)')
  try:
    observations = random_play_observations(env, args.states)
  finally:
    env.close()
  outputs = [(name, np.asarray(value)) for name, value in network.layer_outputs(observations)]
  print(f'{run_config.agent}, {prefix} (env frames {counters.env_frames:,}, learner steps '
        f'{counters.learner_steps:,}); {args.states} states of random play\n')
  # The LSTM's input is the last ReLU layer's output, layer-normalised where the config
  # says so: then its units are not ReLUs.
  print(table([(name, layer_stats(value, relu=name != 'lstm_input'))
               for name, value in outputs if name != 'lstm_gate_inputs']))
  gates = dict(outputs).get('lstm_gate_inputs')
  if gates is not None:
    saturation = gate_saturation(gates)
    print(f'\nLSTM gates\' inputs beyond |{SATURATED:g}|: input gate '
          f'{saturation["input_gate_saturated"]:.0%}, output gate '
          f'{saturation["output_gate_saturated"]:.0%}')
  return 0


if __name__ == '__main__':
  sys.exit(main())
