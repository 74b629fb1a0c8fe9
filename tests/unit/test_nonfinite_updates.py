"""A NaN or Inf loss or gradient skips that optimizer update: the parameters, the
optimizer's state (moments, iterations) and the target networks stay bit for bit,
and the train step counts the skipped updates (TrainResult.skipped_updates and the
'skipped_updates' log); the next finite batch trains as usual."""
import dataclasses

import numpy as np
import pytest

tf = pytest.importorskip('tensorflow')

import keras  # pylint: disable=g-import-not-at-top,g-bad-import-order

from seed.agents.common import learning  # pylint: disable=g-import-not-at-top
from tests import train_step_golden  # pylint: disable=g-import-not-at-top

# Checkpoint items a skipped update may move: the random streams, and the off-policy
# count of updates run (kept by OffPolicyAgent._train, which counts attempts).
_NOT_GUARDED = ('action_noise', 'train_noise', 'shuffle', 'updates', 'resets')
_SAC_CRITICS = ('critic1', 'critic2', 'target_critic1', 'target_critic2', 'critic_optimizer')
_DDPG_CRITIC = ('critic', 'target_critic', 'critic_optimizer')

# (golden case, poisoned fields, value, skipped updates expected, the checkpoint items
#  that must not move; None: all but _NOT_GUARDED).
CASES = [
    ('vtrace_mlp', ('reward',), np.nan, 1, None),
    ('vtrace_mlp', ('observation',), np.nan, 1, None),
    ('r2d2_lstm', ('reward',), np.nan, 1, None),
    ('r2d2_lstm', ('reward',), np.inf, 1, None),
    # epochs x num_minibatches = 2 x 2 updates, every one reached.
    ('ppo', ('reward',), np.nan, 4, None),
    ('ppo', ('reward',), np.inf, 4, None),
    # PPO trains on the stored policy_input; the raw observations feed the normaliser.
    ('ppo', ('observation', 'policy_input'), np.nan, 4, None),
    # updates_per_step = 2: the NaN reaches every optimizer (3 for SAC, 2 for DDPG) ...
    ('sac', ('observation',), np.nan, 6, None),
    ('ddpg', ('observation',), np.nan, 4, None),
    # ... while a NaN reward reaches only the critics' targets: the actor (and SAC's
    # temperature) update as usual, each guard on its own.
    ('sac', ('reward',), np.nan, 2, _SAC_CRITICS),
    ('ddpg', ('reward',), np.nan, 2, _DDPG_CRITIC),
]


def _agent(case):
  agent = train_step_golden.make_agent(case)
  if train_step_golden.CASES[case][0] == 'r2d2':
    # A copy due on every update: a skipped one must not count as one.
    spec = train_step_golden.CASES[case][1]
    agent = type(agent)(spec, dataclasses.replace(agent.config, target_update_period=1))
  return agent


def _poisoned(sample, fields, value):
  """`sample` with every element of `fields` (steps or policy outputs) set to `value`."""
  steps = sample.data.steps

  def poison(array):
    return np.full_like(np.asarray(array), value)

  outputs = {name: poison(array) if name in fields else array
             for name, array in steps.policy_outputs.items()}
  steps = steps._replace(policy_outputs=outputs,
                         **{field: poison(getattr(steps, field)) for field in fields
                            if field not in outputs})
  return sample._replace(data=sample.data._replace(steps=steps))


def _snapshot(agent):
  """{checkpoint item: its variables' bytes}: networks, targets, optimizers, statistics."""
  return {name: [np.asarray(variable.numpy()).tobytes() for variable in item.variables]
          for name, item in agent.checkpoint_items().items() if name not in _NOT_GUARDED}


@pytest.mark.parametrize('case, fields, value, skipped, guarded', CASES,
                         ids=[f'{c[0]}-{"+".join(c[1])}-{c[2]}' for c in CASES])
def test_nonfinite_batch_skips_its_updates(case, fields, value, skipped, guarded):
  agent = _agent(case)
  sample = train_step_golden.case_sample(case, agent)
  first = agent.train_step(sample)  # Builds the optimizer slots and makes them nonzero.
  assert first.skipped_updates == 0
  before = _snapshot(agent)
  guarded = sorted(before) if guarded is None else guarded

  result = agent.train_step(_poisoned(sample, fields, value))
  assert type(result.skipped_updates) is int  # pylint: disable=unidiomatic-typecheck
  assert result.skipped_updates == skipped
  assert result.logs['skipped_updates'] == float(skipped)
  after = _snapshot(agent)
  for name in guarded:
    assert after[name] == before[name], f'{name} moved on a skipped update'
  if train_step_golden.CASES[case][0] == 'r2d2':
    assert result.priorities is None
    assert result.logs['target_updated'] == 0.0

  result = agent.train_step(sample)
  assert result.skipped_updates == 0
  assert result.logs['skipped_updates'] == 0.0
  assert all(np.isfinite(value) for value in result.logs.values())
  trained = _snapshot(agent)
  for name in guarded:
    assert trained[name] != after[name], f'{name} did not train on a finite batch'
  if train_step_golden.CASES[case][0] == 'r2d2':
    assert np.all(np.isfinite(result.priorities))


def _toy_update(loss_scale, gradient_scale=1.0):
  """One apply_if_finite on [used, unused] variables (the unused one gets None).

  Returns (applied, [used, unused] after, optimizer iterations after).
  """
  used = tf.Variable([1.0, 2.0])
  unused = tf.Variable([3.0])
  optimizer = keras.optimizers.Adam(0.1)
  optimizer.build([used, unused])

  @tf.function
  def update():
    with tf.GradientTape() as tape:
      loss = loss_scale * tf.reduce_sum(gradient_scale * used)
    gradients = tape.gradient(loss, [used, unused])
    return learning.apply_if_finite(optimizer, gradients, [used, unused], loss,
                                    max_grad_norm=1.0)[0]

  applied = bool(update())
  return applied, [used.numpy().tolist(), unused.numpy().tolist()], int(optimizer.iterations)


@pytest.mark.filterwarnings('ignore:Gradients do not exist')  # The unused variable's.
def test_apply_if_finite_takes_none_gradients_and_skips_nonfinite_ones():
  applied, values, iterations = _toy_update(1.0)
  assert applied and iterations == 1 and values[0] != [1.0, 2.0] and values[1] == [3.0]
  assert _toy_update(np.nan) == (False, [[1.0, 2.0], [3.0]], 0)
  assert _toy_update(np.inf) == (False, [[1.0, 2.0], [3.0]], 0)
  # A finite loss and gradients (1e20) whose norm overflows float32: clipped, they
  # would be NaN.
  assert _toy_update(1.0, gradient_scale=1e20) == (False, [[1.0, 2.0], [3.0]], 0)
