"""Tests of PopArt: the statistics and the output-preserving rescale worked by hand,
and the V-trace agent's use of them."""
import numpy as np
import pytest

tf = pytest.importorskip('tensorflow')

import keras  # pylint: disable=g-import-not-at-top,g-bad-import-order

from seed.agents.common import learning as popart_agent  # pylint: disable=g-import-not-at-top
from seed.agents.vtrace import config as config_lib  # pylint: disable=g-import-not-at-top
from seed.envs import spec as spec_lib  # pylint: disable=g-import-not-at-top
from seed.losses import popart  # pylint: disable=g-import-not-at-top
from tests.unit import test_vtrace_agent as vtrace_tests  # pylint: disable=g-import-not-at-top

CARTPOLE = spec_lib.EnvSpec((4,), 'float32', num_actions=2)


def _moments(mean, second_moment):
  return popart.Moments(tf.constant(mean, tf.float32), tf.constant(second_moment, tf.float32))


def test_scale_is_the_clipped_standard_deviation():
  # nu - mu^2 = 29 - 25 = 4.
  assert float(popart.scale(_moments(5.0, 29.0))) == pytest.approx(2.0)
  # A constant target: variance 0 -> the lower clip, not a division by zero.
  assert float(popart.scale(_moments(3.0, 9.0))) == pytest.approx(popart.MIN_SCALE)
  assert float(popart.scale(_moments(0.0, 1e14))) == pytest.approx(popart.MAX_SCALE)


def test_first_update_takes_the_batch_then_averages_then_follows_the_ema():
  start = _moments(0.0, 1.0)
  # Update 1: beta = max(0.1, 1/1) = 1, the batch's own moments; the weight-0
  # target (a truncated transition) is left out.
  first = popart.updated_moments(start, [[2.0, 4.0], [100.0, 6.0]],
                                 [[1.0, 1.0], [0.0, 1.0]], 0.1, 1)
  assert float(first.mean) == pytest.approx(4.0)
  assert float(first.second_moment) == pytest.approx((4 + 16 + 36) / 3)
  # Update 2: beta = 1/2, the average of the two batches.
  second = popart.updated_moments(first, [10.0], [1.0], 0.1, 2)
  assert float(second.mean) == pytest.approx(7.0)
  assert float(second.second_moment) == pytest.approx((56 / 3 + 100) / 2)
  # Update 20: beta = max(0.1, 1/20) = 0.1.
  late = popart.updated_moments(_moments(1.0, 2.0), [11.0], [1.0], 0.1, 20)
  assert float(late.mean) == pytest.approx(0.9 * 1.0 + 0.1 * 11.0)
  assert float(late.second_moment) == pytest.approx(0.9 * 2.0 + 0.1 * 121.0)


def test_a_batch_of_weight_zero_changes_nothing():
  before = _moments(3.0, 10.0)
  after = popart.updated_moments(before, [1e6, -1e6], [0.0, 0.0], 0.5, 1)
  assert (float(after.mean), float(after.second_moment)) == (3.0, 10.0)


def test_preserved_head_by_hand():
  # sigma * (x k + b) + mu = 2 * (1 * 3 + 1) + 5 = 13 before; after, mu' = 1,
  # sigma' = 4: k' = 3 * 2 / 4 = 1.5, b' = (2 * 1 + 5 - 1) / 4 = 1.5, and
  # 4 * (1 * 1.5 + 1.5) + 1 = 13.
  kernel, bias = popart.preserved_head([[3.0]], [1.0], 5.0, 2.0, 1.0, 4.0)
  np.testing.assert_allclose(kernel, [[1.5]])
  np.testing.assert_allclose(bias, [1.5])


def test_statistics_update_preserves_a_dense_heads_unnormalised_output():
  rng = np.random.default_rng(0)
  head = keras.layers.Dense(1, kernel_initializer='glorot_uniform')
  features = rng.normal(size=(16, 8)).astype(np.float32)
  head(features)
  statistics = popart_agent.PopArtStatistics(step_size=3e-4)

  def unnormalised():
    return (float(statistics.scale()) * head(features).numpy()[:, 0] +
            float(statistics.mean))

  before = unnormalised()
  for targets in (rng.normal(-100.0, 5.0, size=(20, 4)), rng.normal(30.0, 0.5, size=7)):
    statistics.update(targets, np.ones_like(targets), head)
    np.testing.assert_allclose(unnormalised(), before, rtol=1e-4, atol=1e-3)
  assert int(statistics.updates) == 2
  # Two batches so far: their average, whatever beta.
  assert float(statistics.mean) == pytest.approx(0.5 * -100.0 + 0.5 * 30.0, abs=2.0)


def test_agent_trains_with_popart_and_checkpoints_the_statistics(tmp_path):
  fields = dict(unroll_length=3, batch_unrolls=2, value_normalization='popart')
  agent = vtrace_tests._agent(CARTPOLE, **fields)  # pylint: disable=protected-access
  rng = np.random.default_rng(1)
  sample = vtrace_tests._random_sample(agent, CARTPOLE, rng, done_probability=0.0)  # pylint: disable=protected-access
  sample = vtrace_tests._with_reward(sample, np.full((2, 4), -1.0, np.float32))  # pylint: disable=protected-access
  logs = agent.train_step(sample).logs
  # The targets of rewards -1 lie below 0: mu moved down from 0 on the first step.
  assert logs['popart_mean'] < -0.5 and logs['popart_scale'] > 0
  assert int(agent.checkpoint_items()['popart'].updates) == 1
  path = tf.train.Checkpoint(**agent.checkpoint_items()).write(str(tmp_path / 'ckpt'))
  restored = vtrace_tests._agent(CARTPOLE, **fields)  # pylint: disable=protected-access
  restored.warm_up([2])
  tf.train.Checkpoint(**restored.checkpoint_items()).read(path).assert_consumed()
  assert float(restored.checkpoint_items()['popart'].mean) == pytest.approx(
      logs['popart_mean'])
  assert restored.train_step(sample).logs == pytest.approx(agent.train_step(sample).logs,
                                                           rel=1e-5)


def test_skipped_step_leaves_the_statistics_alone():
  agent = vtrace_tests._agent(CARTPOLE, unroll_length=3, batch_unrolls=2,  # pylint: disable=protected-access
                              value_normalization='popart')
  sample = vtrace_tests._random_sample(agent, CARTPOLE, np.random.default_rng(2))  # pylint: disable=protected-access
  nan_rewards = np.full((2, 4), np.nan, np.float32)
  logs = agent.train_step(vtrace_tests._with_reward(sample, nan_rewards)).logs  # pylint: disable=protected-access
  assert logs['skipped_updates'] == 1.0
  statistics = agent.checkpoint_items()['popart']
  assert int(statistics.updates) == 0 and float(statistics.mean) == 0.0


@pytest.mark.parametrize('fields, match', [
    (dict(value_normalization='popart', normalize_advantages=True),
     "normalize_advantages = True and VTraceConfig.value_normalization = 'popart'"),
    (dict(value_normalization='pop_art'),
     "VTraceConfig.value_normalization = 'pop_art'; accepted: one of None, 'popart'"),
    (dict(reward_scale=0.0), 'VTraceConfig.reward_scale = 0.0; accepted: a number > 0'),
    (dict(reward_scale=-0.1), 'VTraceConfig.reward_scale = -0.1; accepted: a number > 0'),
    (dict(popart_step_size=0.0), 'VTraceConfig.popart_step_size = 0.0; accepted: a number > 0'),
    (dict(popart_step_size=1.5), r'VTraceConfig.popart_step_size = 1.5; accepted: a number in'),
])
def test_config_rejects_bad_normalisations(fields, match):
  with pytest.raises(ValueError, match=match):
    config_lib.VTraceConfig(**fields)


def test_reward_scale_multiplies_rewards_in_the_loss():
  agent = vtrace_tests._agent(CARTPOLE, unroll_length=3, batch_unrolls=2)  # pylint: disable=protected-access
  sample = vtrace_tests._random_sample(agent, CARTPOLE, np.random.default_rng(3))  # pylint: disable=protected-access
  reward = sample.data.steps.reward
  scaled = vtrace_tests._first_step_loss(sample, reward_scale=0.5)  # pylint: disable=protected-access
  halved = vtrace_tests._first_step_loss(vtrace_tests._with_reward(sample, reward / 2))  # pylint: disable=protected-access
  assert scaled == pytest.approx(halved, rel=1e-6)
