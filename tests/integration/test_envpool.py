"""EnvConfig.backend = 'envpool': EnvPool's C++ Atari gives what seed's ale-py path gives.

With one no-op frame after each reset and no sticky actions nothing random is left, so
the two backends must agree bit for bit: observations, rewards, lost lives, episode ends,
the restart in the same step, the spec. A real actor process then streams EnvPool envs to a
learner.
"""
import numpy as np
import pytest

from seed.actors.client import make_env_batches
from seed.envs import EnvConfig, env_spec, make_env
from tests.integration.test_actor import start_actor
from tests.server_harness import ServerHarness

pytest.importorskip('envpool', reason="EnvConfig.backend = 'envpool' needs the envpool package "
                    "(pip install 'seed-rl[envpool]'); ./run_tests.sh installs it")

pytestmark = pytest.mark.timeout(300)


def _both(game, first_seed, num_envs, **options):
  """The same envs from both backends, as an actor makes them."""
  batches = {}
  for backend in ('gymnasium', 'envpool'):
    config = EnvConfig(name=f'atari:{game}', options={'noop_max': 1, **options},
                       backend=backend)
    (batches[backend],) = make_env_batches(config, num_envs, 1, actor_id=0, seed=first_seed)
  return batches['gymnasium'], batches['envpool']


@pytest.mark.parametrize('game,steps,options', [
    ('Breakout', 700, {}),  # random play loses its 5 lives in about 200 steps
    ('Pong', 400, {}),
    ('SpaceInvaders', 300, {}),  # rewards of 5 to 30: unclipped on both sides
    ('Breakout', 300, {'max_episode_frames': 400, 'frame_stack': 2}),  # time limit
    ('Breakout', 700, {'episodic_life': True}),  # 4 lives lost a game, the game goes on
    ('Pong', 200, {'episodic_life': True}),  # no lives: nothing marked
])
def test_envpool_steps_exactly_as_the_ale_py_path(game, steps, options):
  ale, pool = _both(game, first_seed=11, num_envs=3, **options)
  try:
    assert pool.spec == ale.spec
    np.testing.assert_array_equal(pool.reset(), ale.reset())
    rng = np.random.default_rng(0)
    ended = lives_lost = 0
    for t in range(steps):
      actions = rng.integers(ale.spec.num_actions, size=3).astype(np.int32)
      want, got = ale.step(actions), pool.step(actions)
      # Past an episode's end both already show the next episode's first frame.
      np.testing.assert_array_equal(got.observations, want.observations, err_msg=f'step {t}')
      np.testing.assert_array_equal(got.rewards, want.rewards, err_msg=f'step {t}')
      np.testing.assert_array_equal(got.terminated, want.terminated, err_msg=f'step {t}')
      np.testing.assert_array_equal(got.truncated, want.truncated, err_msg=f'step {t}')
      np.testing.assert_array_equal(got.life_lost, want.life_lost, err_msg=f'step {t}')
      assert got.episodes_ended == want.episodes_ended
      assert got.observations.dtype == np.uint8 and got.rewards.dtype == np.float32
      ended += got.episodes_ended
      lives_lost += int(np.count_nonzero(got.life_lost))
    if game == 'Breakout':
      assert ended >= 3  # the restart in the same step was compared too
    # Marked only with episodic_life, and only where a game has lives to lose: 4 of each
    # ended game's 5 (the 5th ends it), up to 4 more of each of the 3 games still going.
    if options.get('episodic_life') and game == 'Breakout':
      assert 4 * ended <= lives_lost <= 4 * ended + 3 * 4, (lives_lost, ended)
    else:
      assert lives_lost == 0
  finally:
    ale.close()
    pool.close()


@pytest.mark.parametrize('options', [{}, {'full_action_space': True, 'frame_stack': 3}])
def test_the_learner_s_spec_is_the_envpool_actor_s(options):
  # The learner reads its spec from an ale-py env (it needs no envpool); the hello of an
  # EnvPool actor must match it.
  config = EnvConfig(name='atari:Pong', options=options, backend='envpool')
  (pool,) = make_env_batches(config, 2, 1, actor_id=0, seed=0)
  try:
    assert pool.spec == config.spec() == env_spec(make_env('atari:Pong', **options))
  finally:
    pool.close()


@pytest.mark.parametrize('kwargs,words', [
    ({'backend': 'envpol'}, ["EnvConfig.backend", "'envpol'", "'gymnasium'", "'envpool'"]),
    ({'name': 'CartPole-v1', 'backend': 'envpool'}, ['atari:<Game>', "'CartPole-v1'"]),
    ({'options': {'terminal_on_life_loss': True}, 'backend': 'envpool'},
     ['terminal_on_life_loss', "'gymnasium' backend"]),
    ({'options': {'noop_max': 0}, 'backend': 'envpool'}, ['noop_max', '>= 1', '0']),
    ({'options': {'noop_max': -1}, 'backend': 'envpool'}, ['noop_max', '-1']),
    ({'envpool_threads': 0, 'backend': 'envpool'}, ['envpool_threads', '>= 1', '0']),
])
def test_a_config_envpool_cannot_follow_is_refused_by_name(kwargs, words):
  with pytest.raises(ValueError) as e:
    EnvConfig(**{'name': 'atari:Pong', **kwargs})
  for word in words:
    assert word in str(e.value), str(e.value)


def test_an_actor_process_streams_envpool_envs_to_the_learner():
  spec = env_spec(make_env('atari:Pong'))
  with ServerHarness(spec=spec, env_name='atari:Pong') as harness:
    actor = start_actor(harness.address, '--max_steps=50', '--num_splits=2',
                        "--gin_bindings=EnvConfig.backend='envpool'", num_envs=4,
                        env='atari:Pong')
    output, _ = actor.communicate(timeout=200)
  assert actor.returncode == 0, output
  assert 'backend envpool' in output and 'NO_TENSORFLOW' in output, output
  assert harness.table.num_ordinals == 4  # two pools of 2 envs, a stream each
  assert harness.counters.get('env_steps') >= 4 * 49
