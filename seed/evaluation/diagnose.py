"""`seed diagnose RUN`: why a run does not learn, read from its checkpoint.

  seed diagnose runs/atari_vtrace
  seed diagnose runs/atari_r2d2 --checkpoint runs/atari_r2d2/ckpt/ckpt-12 --steps 600

Restores the run's agent at its latest checkpoint (or --checkpoint) as test mode does,
with the run's saved config, and plays one env (seed 0) for --steps steps, half of them
at random so that the states vary and half as its greedy policy acts, carrying the
recurrent state. Then three groups of figures, each with what it says; a figure past its
threshold is marked and listed as a warning at the end (docs/usage.md, "My run does not
learn", reads them for two runs):

  acting     the greedy policy in those states: its logits (spread, entropy, how much
             they differ between states) or its action values, and how often it picks
             the same action
  layers     each layer of the network's torso over those states: units never active,
             spread across states; with an LSTM, its saturated gates
  optimizer  Adam's step per variable as a share of its learning rate (epsilon against
             the RMS gradient), and the parameters no gradient reached

Any agent: what its checkpoint has no use for is said in a line (an MLP network has no
torso layers to probe, RMSProp no Adam steps). Exit 0 with the figures, warnings or not;
2 with one line for a run directory without a checkpoint, or a checkpoint that its
config's agent cannot read.
"""
import argparse
import os
import sys
from typing import Dict, List, NamedTuple, Optional, Tuple

import numpy as np

from seed.evaluation import diagnosis, restore
from seed.process import exit_codes
from seed.run_dir.layout import RunDir


class Played(NamedTuple):
  """What the agent did in the states played."""
  observations: np.ndarray  # [N, *observation_shape]
  outputs: Dict[str, np.ndarray]  # the policy's outputs by name, [N, ...] each
  greedy_actions: np.ndarray  # [N, ...] what the greedy policy chose


def parse_args(argv: Optional[List[str]]) -> argparse.Namespace:
  parser = argparse.ArgumentParser(prog='seed diagnose', description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument('run', metavar='RUN', help='the run directory')
  parser.add_argument('--checkpoint', default='',
                      help='a checkpoint prefix (RUN/ckpt/ckpt-7); default: the latest')
  parser.add_argument('--steps', type=int, default=400, help='env steps to play (>= 2)')
  return parser.parse_args(argv)


def check_args(args: argparse.Namespace) -> None:
  """ValueError naming the bad argument and what is accepted."""
  if args.steps < 2:
    raise ValueError(f'--steps={args.steps}; expected at least 2')
  if not os.path.isdir(args.run):
    raise ValueError(f'{args.run} is not a directory; expected a run directory')
  if not args.checkpoint and RunDir(args.run).latest_checkpoint() is None:
    raise ValueError(f'{args.run} has no checkpoint ({RunDir(args.run).checkpoints} lists '
                     'none): its learner writes the first after --checkpoint_interval_s')


def play(agent, env, steps: int, seed: int = 0) -> Played:
  """`steps` steps of `env` from seed `seed`: each step the greedy policy's outputs and
  action; the step taken is that action or, every other step on average, a random one."""
  from seed import types  # pylint: disable=g-import-not-at-top
  policy = agent.batched_policy(1)
  acting = types.stack_acting_params([agent.acting_params(0, True)])
  core_state = agent.initial_core_state(1)
  rng = np.random.default_rng(seed)
  env.action_space.seed(seed)
  observation, _ = env.reset(seed=seed)
  reward, done = np.zeros(1, np.float32), np.zeros(1, bool)
  observations, outputs, greedy = [], [], []
  for _ in range(steps):
    observations.append(np.asarray(observation))
    action, step_outputs, core_state = policy(np.asarray(observation)[None], reward, done,
                                              core_state, acting)
    outputs.append({name: np.asarray(value)[0] for name, value in step_outputs.items()})
    greedy.append(np.asarray(action)[0])
    taken = env.action_space.sample() if rng.random() < 0.5 else greedy[-1]
    observation, step_reward, terminated, truncated, _ = env.step(taken)
    reward[0], done[0] = step_reward, False
    if terminated or truncated:
      observation, _ = env.reset()
      done[0] = True
  return Played(np.stack(observations),
                {name: np.stack([o[name] for o in outputs]) for name in outputs[0]},
                np.stack(greedy))


def acting_figures(played: Played, num_actions: int) -> Tuple[List[diagnosis.Figure], str]:
  """The policy's figures, and a line for what its outputs do not have."""
  if not num_actions:
    return [], 'continuous actions: no logits or action values to read'
  figures = [diagnosis.greedy_figure(played.greedy_actions, num_actions)]
  if 'logits' in played.outputs:
    figures += diagnosis.logit_figures(played.outputs['logits'])
  elif 'q' in played.outputs:
    figures += diagnosis.q_figures(played.outputs['q'])
  else:
    return figures, f'its policy outputs ({", ".join(played.outputs)}) hold no logits or Q'
  return figures, ''


def layer_figures(model, observations: np.ndarray) -> Tuple[List[diagnosis.Figure], str]:
  """Each torso layer's figures (the LSTM's gates'), or why there are none."""
  outputs = model.layer_outputs(observations) if hasattr(model, 'layer_outputs') else []
  if not outputs:
    return [], 'its network has no torso layers to probe (MLPs of its own)'
  figures = []
  for name, value in outputs:
    value = np.asarray(value)
    if name == 'lstm_gate_inputs':
      figures += diagnosis.gate_figures(value)
    else:  # The LSTM's input may be layer-normalised: no ReLU there.
      figures += diagnosis.layer_figures(name, value, relu=name != 'lstm_input')
  return figures, ''


def optimizer_figures(items: Dict[str, object]) -> Tuple[List[diagnosis.Figure], str]:
  """Every Adam optimizer's figures per variable, or why there are none."""
  import keras  # pylint: disable=g-import-not-at-top
  optimizers = {name: item for name, item in items.items()
                if isinstance(item, keras.optimizers.Adam)}
  if not optimizers:
    return [], 'no Adam optimizer in the checkpoint: no step figures'
  figures, untrained = [], []
  for name, optimizer in optimizers.items():
    steps = int(optimizer.iterations.numpy())
    if not steps:  # Its moments are still zeros: nothing to read.
      untrained.append(name)
      continue
    for variable in optimizer.variables:
      if variable.name.endswith('_velocity'):
        label = f'{name}/{variable.name[:-len("_velocity")]} {tuple(variable.shape)}'
        figures += diagnosis.adam_figures(label, variable.numpy(), steps,
                                          float(optimizer.beta_2), float(optimizer.epsilon))
  return figures, (f'{", ".join(untrained)}: no step yet, no figures' if untrained else '')


def report(args: argparse.Namespace) -> str:
  """Restores, plays and measures (imports TensorFlow); ValueError for what it cannot read."""
  from seed.envs import env_spec  # pylint: disable=g-import-not-at-top
  run = restore.restore_run(args.run, args.checkpoint,
                            flag='--checkpoint' if args.checkpoint else 'seed diagnose')
  try:
    spec = env_spec(run.env)
    played = play(run.agent, run.env, args.steps)
  finally:
    run.env.close()
  groups = [
      ('Acting: the greedy policy in the states played',
       acting_figures(played, spec.num_actions if spec.is_discrete else 0)),
      ('Layers: the torso over those states',
       layer_figures(run.agent.checkpoint_items().get('model'), played.observations)),
      ('Optimizer: Adam\'s steps', optimizer_figures(run.agent.checkpoint_items())),
  ]
  counters = run.counters
  parts = [f'{run.run_config.agent} on {spec.describe()}, checkpoint {run.prefix} (env frames '
           f'{counters.env_frames:,}, learner steps {counters.learner_steps:,}); {args.steps} '
           'steps of env seed 0, half of them random']
  every = []
  for title, (figures, missing) in groups:
    parts.append(diagnosis.table(title, figures) if figures else f'{title}: {missing}')
    if figures and missing:
      parts.append(missing)
    every += figures
  parts.append(diagnosis.warnings_text(every))
  return '\n\n'.join(parts)


def main(argv: Optional[List[str]] = None) -> int:
  args = parse_args(argv)
  try:
    check_args(args)
    print(report(args))
  except (ValueError, SyntaxError, FileNotFoundError) as e:
    # ValueError: no checkpoint, one of another network, an unknown agent or binding;
    # SyntaxError: gin that does not parse.
    print(f'seed diagnose: {e}', file=sys.stderr)
    return exit_codes.BAD_SETTINGS
  return 0


if __name__ == '__main__':
  sys.exit(main())
