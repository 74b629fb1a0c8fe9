"""N seeds in one agent (seed.agents.common.seed_axis, OffPolicyConfig.num_seeds): seed k of an
N-seed agent is a one-seed agent of seed k, computed in one batched pass."""
import numpy as np
import pytest
import tensorflow as tf

from seed import types
from seed.agents.common import mlp
from seed.agents.common import seed_axis
from seed.agents.ddpg.agent import DDPGAgent
from seed.agents.sac.agent import SACAgent
from seed.agents.sac.config import SACConfig
from tests.unit.test_continuous_agents import PENDULUM, SMALL, _make, _replay_sample, _sample

SIZES = dict(minibatch_transitions=8, updates_per_step=2, n_steps=2, **SMALL)


def test_a_stacked_mlp_computes_each_seeds_own_mlp():
  streams = [mlp.SeedStream(5), mlp.SeedStream(6), mlp.SeedStream(7)]
  stacked = seed_axis.StackedMLP(3, (16, 16), 2, seeds=streams)
  x = np.random.default_rng(0).normal(size=(3, 4, 3)).astype(np.float32)
  y = stacked(x)
  for k, seed in enumerate((5, 6, 7)):
    alone = mlp.MLP(3, (16, 16), 2, seeds=mlp.SeedStream(seed))
    np.testing.assert_allclose(y[k], alone(x[k]), rtol=1e-6, atol=1e-7)
  assert [w.shape for w in stacked.weights][:2] == [(3, 3, 16), (3, 16)]


def _stack_samples(samples):
  """One-seed samples -> the seed-by-seed sample an N-seed agent trains on."""
  steps = tf.nest.map_structure(lambda *parts: np.concatenate(parts),
                                *[s.data.steps for s in samples])
  return _sample(sum(s.ids.size for s in samples), steps)


@pytest.mark.parametrize('agent_class', [SACAgent, DDPGAgent])
def test_seed_k_trains_as_a_one_seed_agent_of_seed_k(agent_class):
  together = _make(agent_class, num_seeds=2, seed=3, **SIZES)
  alone = [_make(agent_class, seed=seed, **SIZES) for seed in (3, 4)]
  rng = np.random.default_rng(9)
  for _ in range(3):
    samples = [_replay_sample(agent, PENDULUM, rng) for agent in alone]
    together_logs = together.train_step(_stack_samples(samples)).logs
    alone_logs = [agent.train_step(sample).logs for agent, sample in zip(alone, samples)]
    # Logged losses are the seeds' mean.
    assert together_logs['critic_loss'] == pytest.approx(
        np.mean([logs['critic_loss'] for logs in alone_logs]), rel=1e-4)
  assert together.updates == 6 and together.num_seeds == 2
  for name in ('actor', 'critic1' if agent_class is SACAgent else 'critic', 'target_actor'
               if agent_class is DDPGAgent else 'temperature'):
    for stacked, *singles in zip(getattr(together, name).weights,
                                 *(getattr(agent, name).weights for agent in alone)):
      for k, single in enumerate(singles):
        np.testing.assert_allclose(stacked.numpy()[k], single.numpy()[0], rtol=2e-5,
                                   atol=2e-6, err_msg=f'{name} seed {k}')
  # Different seeds, different weights.
  first = together.actor.weights[0].numpy()
  assert not np.allclose(first[0], first[1])


def test_each_env_acts_with_its_seed():
  together = _make(SACAgent, num_seeds=2, seed=3, **SIZES)
  alone = [_make(SACAgent, seed=seed, **SIZES) for seed in (3, 4)]
  rng = np.random.default_rng(2)
  samples = [_replay_sample(agent, PENDULUM, rng) for agent in alone]
  together.train_step(_stack_samples(samples))
  for agent, sample in zip(alone, samples):
    agent.train_step(sample)
  assert [together.acting_params(k, False).seed_index for k in range(5)] == [0, 1, 0, 1, 0]
  observation = rng.normal(size=(4, 3)).astype(np.float32)
  acting = types.ActingParams(epsilon=np.zeros(4, np.float32), evaluation=np.ones(4, bool),
                              seed_index=np.array([0, 1, 1, 0], np.int32))
  args = (observation, np.zeros(4, np.float32), np.zeros(4, bool), ())
  actions = together.inference(*args, acting)[0].numpy()
  for k, agent in enumerate(alone):
    mine = acting.seed_index == k
    single = agent.inference(*args, acting._replace(seed_index=np.zeros(4, np.int32)))[0]
    np.testing.assert_allclose(actions[mine], single.numpy()[mine], rtol=1e-5, atol=1e-6)


def test_an_n_seed_checkpoint_resumes_every_seed(tmp_path):
  def make():
    return _make(DDPGAgent, num_seeds=3, seed=1, **SIZES)

  trained = make()
  rng = np.random.default_rng(4)

  def three_seeds_sample():
    return _stack_samples([_replay_sample(trained, PENDULUM, rng) for _ in range(3)])

  trained.train_step(three_seeds_sample())
  path = tf.train.Checkpoint(**trained.checkpoint_items()).write(str(tmp_path / 'ckpt'))
  restored = make()
  restored.warm_up([1])
  tf.train.Checkpoint(**restored.checkpoint_items()).read(path).assert_consumed()
  restored.on_restored()
  assert {'action_noise_2', 'train_noise_1'} <= set(trained.checkpoint_items())
  sample = three_seeds_sample()
  assert restored.train_step(sample).logs == pytest.approx(trained.train_step(sample).logs,
                                                           rel=1e-5)


def test_num_seeds_below_one_is_refused():
  with pytest.raises(ValueError, match=r'SACConfig.num_seeds = 0; accepted: an int >= 1'):
    SACConfig(num_seeds=0)


def test_num_seeds_flag_binds_the_agents_config_or_is_refused():
  from seed.learner import launch as learner_launch  # pylint: disable=g-import-not-at-top
  assert learner_launch._num_seeds_bindings('sr_sac', 1) == []
  assert learner_launch._num_seeds_bindings('ddpg', 4) == ['DDPGConfig.num_seeds = 4']
  with pytest.raises(ValueError, match=r"--num_seeds=2: agent 'vtrace' trains one seed per "
                     r'learner; agents that train several: ddpg, sac, sr_ddpg, sr_sac'):
    learner_launch._num_seeds_bindings('vtrace', 2)
  # --num_seeds=0 is refused before this, by its setting's check (tests/integration/test_settings.py).


def test_a_replay_per_seed_fed_by_env_and_sampled_seed_by_seed(tmp_path):
  from seed.inputs.replay_input import ReplayInput  # pylint: disable=g-import-not-at-top
  from tests.unit.test_replay import make_unroll  # pylint: disable=g-import-not-at-top
  replays = ReplayInput(2, capacity_unrolls=10, min_fill_unrolls=2, samples_per_insert=1.0,
                        priority_exponent=0.0, importance_exponent=0.0, num_seeds=2)
  for env_id in (0, 1, 2, 3, 4):  # Seed 0 gets envs 0, 2, 4; seed 1 envs 1, 3.
    assert replays.put(make_unroll(np.full((2, 1), env_id, np.float32), env_id=env_id))
  assert [len(r) for r in replays.replays] == [3, 2]
  sample = replays.sample(2)
  assert [env_id % 2 for env_id in sample.data.env_id] == [0, 0, 1, 1]
  path = str(tmp_path / 'ckpt-1')
  replays.save(path)
  assert sorted(p.name for p in tmp_path.iterdir()) == ['ckpt-1.replay.npz',
                                                      'ckpt-1.seed_1.replay.npz']
  restored = ReplayInput(2, capacity_unrolls=10, min_fill_unrolls=2, num_seeds=2,
                         priority_exponent=0.0, importance_exponent=0.0)
  assert restored.restore(path) and [len(r) for r in restored.replays] == [3, 2]
  ReplayInput.prune(str(tmp_path), [str(tmp_path / 'ckpt-2')])
  assert not list(tmp_path.iterdir())


def test_seed_flag_binds_the_agents_config_seed():
  # Before the user's bindings in launch(): a binding of <Config>.seed wins over --seed.
  from seed.learner import launch as learner_launch  # pylint: disable=g-import-not-at-top
  assert learner_launch._seed_bindings('vtrace', 7) == ['VTraceConfig.seed = 7']
  assert learner_launch._seed_bindings('sr_sac', 0) == ['SACConfig.seed = 0']
