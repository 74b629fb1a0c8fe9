"""Fixed batches for every agent, and the logs their first train step gave before issue 12.

`python -m tests.train_step_golden` records tests/data/train_step_golden.json; the test
(tests/unit/test_train_step_golden.py) recomputes the logs with today's code and compares
them to 1e-6. The batches are built from one seeded NumPy generator per case, so they
do not depend on the code under test; only `make_agent` and `case_sample` adapt them to
the agents' API (the recording used the pre-issue-12 dict batches at 84551c4; ppo_atari
was added on 2026-12-06, recorded with the code before PPO's one-pass train step).
"""
import json
import os
from typing import Dict

import numpy as np

from seed.envs import spec as spec_lib

GOLDEN_PATH = os.path.join(os.path.dirname(__file__), 'data', 'train_step_golden.json')

CATCH = spec_lib.EnvSpec((10, 5), 'float32', num_actions=3)
ATARI = spec_lib.EnvSpec((4, 84, 84), 'uint8', num_actions=4, frames_per_step=4)
PENDULUM = spec_lib.EnvSpec((3,), 'float32', action_shape=(1,), action_dtype='float32',
                            action_low=(-2.0,), action_high=(2.0,))

# name -> (agent name, spec, constructor arguments under the pre-issue-12 names,
#          batch rows B, steps per row L + 1, policy outputs {name: (trailing shape, kind)}).
CASES = {
    'vtrace_mlp': ('vtrace', CATCH, dict(unroll_length=6, batch_size=4, seed=3), 4, 7,
                   {'logits': ((3,), 'normal')}),
    'vtrace_lstm_atari': ('vtrace', ATARI, dict(unroll_length=3, batch_size=2, use_lstm=True,
                                                lstm_size=16, seed=1), 2, 4,
                          {'logits': ((4,), 'normal')}),
    'r2d2_lstm': ('r2d2', CATCH, dict(burn_in=2, unroll_length=5, batch_size=3, torso='mlp',
                                      mlp_hidden_sizes=(16,), lstm_size=8,
                                      head_hidden_size=16, n_steps=2, seed=2), 3, 8,
                  {'q': ((3,), 'normal')}),
    'r2d2_atari': ('r2d2', ATARI, dict(burn_in=1, unroll_length=3, batch_size=2, lstm_size=16,
                                       head_hidden_size=16, n_steps=2, seed=4), 2, 5,
                   {'q': ((4,), 'normal')}),
    'ppo': ('ppo', PENDULUM, dict(unroll_length=4, batch_size=4, epochs=2, num_minibatches=2,
                                  hidden_sizes=(16, 16), seed=5), 4, 5,
            {'raw_action': ((1,), 'normal'), 'log_prob': ((), 'log_prob'),
             'policy_input': ((3,), 'observation')}),
    # Discrete actions on frames: one Nature-CNN torso shared by the policy and value heads
    # (recorded 2026-12-06, before the train step ran that torso once a minibatch).
    'ppo_atari': ('ppo', ATARI, dict(unroll_length=3, batch_size=4, epochs=2, num_minibatches=2,
                                     normalize_observations=False, seed=8), 4, 4,
                  {'log_prob': ((), 'log_prob')}),
    'sac': ('sac', PENDULUM, dict(n_steps=2, minibatch_size=4, updates_per_step=2,
                                  hidden_sizes=(16, 16), seed=6), 8, 3, {}),
    'ddpg': ('ddpg', PENDULUM, dict(n_steps=1, minibatch_size=4, updates_per_step=2,
                                    hidden_sizes=(16, 16), seed=7), 8, 2, {}),
}


def case_arrays(name: str) -> Dict[str, np.ndarray]:
  """The case's batch as plain arrays [B, L + 1, ...] (plus 'core_state_i', 'weights')."""
  _, spec, _, rows, steps, outputs = CASES[name]
  rng = np.random.default_rng(sum(map(ord, name)))
  shape = (rows, steps)
  if spec.observation_dtype == 'uint8':
    observation = rng.integers(0, 256, shape + spec.observation_shape).astype(np.uint8)
  else:
    observation = rng.normal(size=shape + spec.observation_shape).astype(np.float32)
  if spec.is_discrete:
    action = rng.integers(0, spec.num_actions, shape).astype(np.int32)
  else:
    action = rng.uniform(-2.0, 2.0, shape + spec.action_shape).astype(np.float32)
  arrays = {
      'observation': observation,
      'reward': rng.normal(0.0, 2.0, shape).astype(np.float32),
      'terminated': rng.random(shape) < 0.15,
      'truncated': rng.random(shape) < 0.1,
      'action': action,
      'weights': rng.uniform(0.3, 1.0, rows).astype(np.float32),
  }
  for output, (trailing, kind) in outputs.items():
    if kind == 'observation':
      arrays[output] = observation.reshape(shape + trailing).copy()
    elif kind == 'log_prob':
      arrays[output] = (rng.normal(size=shape + trailing) - 1.0).astype(np.float32)
    else:
      arrays[output] = rng.normal(size=shape + trailing).astype(np.float32)
  return arrays


def make_agent(name: str):
  """The case's agent, its arguments translated to the config's (renamed) fields."""
  from seed import agents, config  # pylint: disable=g-import-not-at-top
  agent_name, spec, kwargs, _, _, _ = CASES[name]
  agent_class = agents.agent_class(agent_name)
  config_class = agent_class.config_class
  fields = {config.renamed_binding(agent_class.__name__, key).split('.')[1]: value
            for key, value in kwargs.items()}
  return agent_class(spec, config_class(**fields))


def case_sample(name: str, agent):
  """The case's batch as the agent input hands it to a train step."""
  from seed import types  # pylint: disable=g-import-not-at-top
  arrays = case_arrays(name)
  rows = len(arrays['reward'])
  # Drawn part by part as before issue 12, when R2D2's state ended in epsilon and the
  # feed-forward agents' held an evaluation flag: the LSTM parts get the same numbers.
  rng = np.random.default_rng(99)
  core_state = tuple(rng.normal(size=x.shape).astype(np.float32)
                     for x in agent.initial_core_state(rows))
  agent_name = CASES[name][0]
  weights = arrays['weights'] if agent_name == 'r2d2' else np.ones(rows, np.float32)
  outputs = {key: arrays[key] for key in CASES[name][5]}
  steps = types.Steps(*(arrays[field] for field in types.STEP_FIELDS), policy_outputs=outputs)
  return types.Sample(ids=np.arange(rows, dtype=np.int64),
                      data=types.Unroll(steps=steps, core_state=core_state,
                                        env_id=np.arange(rows, dtype=np.int64)),
                      weights=weights)


def train_once(name: str) -> Dict[str, float]:
  """The logs (and R2D2's priorities, as 'priority_<i>') of one train step on the case."""
  agent = make_agent(name)
  result = agent.train_step(case_sample(name, agent))
  logs = {key: float(value) for key, value in result.logs.items()}
  if result.priorities is not None:
    for i, value in enumerate(np.asarray(result.priorities)):
      logs[f'priority_{i}'] = float(value)
  return logs


def record() -> None:
  golden = {name: train_once(name) for name in CASES}
  os.makedirs(os.path.dirname(GOLDEN_PATH), exist_ok=True)
  with open(GOLDEN_PATH, 'w') as f:
    json.dump(golden, f, indent=1, sort_keys=True)
  print(f'wrote {GOLDEN_PATH}: {", ".join(f"{k} ({len(v)} logs)" for k, v in golden.items())}')


if __name__ == '__main__':
  record()
