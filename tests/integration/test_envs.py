"""Tests for seed.envs: names, specs, seeding, Atari preprocessing, Catch, gin."""
import subprocess
import sys
import pathlib
import textwrap

import gin
import gymnasium
import numpy as np
import pytest

import seed.envs
from seed.envs import catch
from seed.envs import EnvConfig
from seed.envs import EnvSpec
from seed.envs import UnknownEnvError

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]

# (name, options, expected spec) for every env the package promises.
EXPECTED_SPECS = [
    ('Catch', {}, EnvSpec((10, 5), 'float32', num_actions=3)),
    ('Catch', {'rows': 6, 'columns': 3}, EnvSpec((6, 3), 'float32', num_actions=3)),
    ('CartPole-v1', {}, EnvSpec((4,), 'float32', num_actions=2)),
    ('atari:Pong', {}, EnvSpec((4, 84, 84), 'uint8', num_actions=6, frames_per_step=4)),
    ('atari:Breakout', {}, EnvSpec((4, 84, 84), 'uint8', num_actions=4, frames_per_step=4)),
    ('atari:Pong', {'full_action_space': True, 'frame_stack': 2},
     EnvSpec((2, 84, 84), 'uint8', num_actions=18, frames_per_step=4)),
    ('gym:Acrobot-v1', {}, EnvSpec((6,), 'float32', num_actions=3)),
    # The classic-control suite's other tasks; state numbers arrive one-hot.
    ('gym:LunarLander-v3', {}, EnvSpec((8,), 'float32', num_actions=4)),
    ('gym:Taxi-v4', {}, EnvSpec((500,), 'float32', num_actions=6)),
    ('gym:FrozenLake-v1', {'is_slippery': False}, EnvSpec((16,), 'float32', num_actions=4)),
    ('gym:Pendulum-v1', {}, EnvSpec((3,), 'float32', action_shape=(1,), action_dtype='float32',
                                    action_low=(-2.0,), action_high=(2.0,))),
]


def _frame(env):
  return env.unwrapped.ale.getEpisodeFrameNumber()


@pytest.fixture(autouse=True)
def _clear_gin():
  gin.clear_config()
  yield
  gin.clear_config()


def test_registered_names_cover_the_plain_envs():
  assert set(seed.envs.registered_names()) == {'Catch', 'CartPole-v1', 'MemoryCue'}


@pytest.mark.parametrize('name', seed.envs.registered_names())
def test_every_registered_env_builds_and_steps(name):
  env = seed.envs.make_env(name, seed=1)
  spec = seed.envs.env_spec(env)
  obs, _ = env.reset()
  assert obs.shape == spec.observation_shape and obs.dtype == spec.observation_dtype
  obs, reward, terminated, truncated, _ = env.step(env.action_space.sample())
  assert obs.shape == spec.observation_shape and obs.dtype == spec.observation_dtype
  assert np.isscalar(reward) and isinstance(terminated, bool) and isinstance(truncated, bool)


@pytest.mark.parametrize('name,options,expected', EXPECTED_SPECS,
                         ids=[f'{n}{o or ""}' for n, o, _ in EXPECTED_SPECS])
def test_spec_matches_the_arrays(name, options, expected):
  env = seed.envs.make_env(name, seed=0, **options)
  assert seed.envs.env_spec(env) == expected
  assert EnvConfig(name, options).spec() == expected
  obs, _ = env.reset()
  assert obs.shape == expected.observation_shape
  assert obs.dtype == np.dtype(expected.observation_dtype)
  action = (env.action_space.sample() if not expected.is_discrete
            else np.int32(expected.num_actions - 1))
  obs, *_ = env.step(action)
  assert obs.shape == expected.observation_shape
  assert obs.dtype == np.dtype(expected.observation_dtype)
  env.close()


def test_state_numbers_become_one_hot_vectors():
  env = seed.envs.make_env('gym:FrozenLake-v1', seed=0, is_slippery=False)
  obs, _ = env.reset()
  np.testing.assert_array_equal(obs, np.eye(16, dtype=np.float32)[0])  # the start square
  obs, *_ = env.step(2)  # right, not slippery: square 1
  np.testing.assert_array_equal(obs, np.eye(16, dtype=np.float32)[1])


@pytest.mark.parametrize('name', ['Catch', 'CartPole-v1', 'atari:Pong', 'gym:Acrobot-v1'])
def test_same_seed_same_first_observation(name):
  first = [seed.envs.make_env(name, seed=s).reset()[0] for s in (7, 7, 8)]
  np.testing.assert_array_equal(first[0], first[1])
  if name != 'atari:Pong':  # Pong's first frames differ little; see no-op test.
    assert not np.array_equal(first[0], first[2])


def test_first_reset_uses_seed_later_resets_continue_the_stream():
  env = seed.envs.make_env('Catch', seed=3)
  balls = []
  for _ in range(20):
    env.reset()
    balls.append(env.unwrapped.ball[1])
  again = seed.envs.make_env('Catch', seed=3)
  again.reset()
  assert again.unwrapped.ball[1] == balls[0]
  assert len(set(balls)) > 1  # Not reseeded to the same start every episode.
  env.reset(seed=3)  # An explicit seed still wins.
  assert env.unwrapped.ball[1] == balls[0]


def test_unknown_name_lists_valid_names():
  with pytest.raises(UnknownEnvError) as error:
    seed.envs.make_env('Cach')
  message = str(error.value)
  assert "'Cach'" in message
  for accepted in ('Catch', 'CartPole-v1', 'atari:<Game>', 'gym:<gymnasium id>'):
    assert accepted in message
  assert isinstance(error.value, ValueError)


def test_unknown_gym_id_is_unknown_env():
  with pytest.raises(UnknownEnvError, match='NoSuchEnv-v0'):
    seed.envs.make_env('gym:NoSuchEnv-v0')


@pytest.mark.parametrize('name,option', [
    ('Catch', 'row'), ('atari:Pong', 'sticky'), ('CartPole-v1', 'rows'),
    ('gym:CartPole-v1', 'bogus')])
def test_unknown_option_names_env_and_option(name, option):
  with pytest.raises(ValueError) as error:
    seed.envs.make_env(name, **{option: 1})
  assert name in str(error.value) and option in str(error.value)


def test_register_rejects_duplicates_and_family_prefixes():
  with pytest.raises(ValueError, match='already registered'):
    seed.envs.register('Catch', catch.make_catch)
  with pytest.raises(ValueError, match='family'):
    seed.envs.register('atari:Mine', catch.make_catch)


# Atari.


def test_atari_step_is_four_frames():
  # SEED once shipped action repeat 1 and Pong stopped learning.
  env = seed.envs.make_env('atari:Pong', seed=0)
  env.reset()
  for _ in range(3):
    before = _frame(env)
    obs, *_ = env.step(0)
    assert _frame(env) - before == 4
  assert obs.shape == (4, 84, 84) and obs.dtype == np.uint8
  assert env.frames_per_step == 4


def test_atari_noop_starts_vary_and_are_single_frames():
  # AtariPreprocessing's no-ops step the frameskip=1 ALE env directly, so each
  # is one frame: 1..30 frames after reset, not up to 30 * 4.
  env = seed.envs.make_env('atari:Pong', seed=0)
  starts = []
  for s in range(8):
    env.reset(seed=s)
    starts.append(_frame(env))
  assert len(set(starts)) > 1
  assert all(1 <= f <= 30 for f in starts)
  no_noops = seed.envs.make_env('atari:Pong', seed=0, noop_max=0)
  no_noops.reset()
  assert _frame(no_noops) == 0


def test_atari_sticky_actions_reach_the_ale():
  for p in (0.0, 0.25):
    env = seed.envs.make_env('atari:Pong', seed=0, sticky_action_probability=p)
    assert env.unwrapped.ale.getFloat('repeat_action_probability') == pytest.approx(p)


def test_atari_episode_cap_truncates():
  env = seed.envs.make_env('atari:Pong', seed=0, noop_max=0, max_episode_frames=40)
  env.reset()
  for step in range(1, 11):
    _, _, terminated, truncated, _ = env.step(0)
    if truncated:
      break
  assert (step, terminated, truncated) == (10, False, True)


def test_atari_episodic_life_marks_each_lost_life_and_plays_the_whole_game():
  # Breakout's 5 lives: 4 lost while the game goes on, each marked once; the 5th ends it.
  from seed.envs.batch import LIFE_LOST  # pylint: disable=g-import-not-at-top
  from seed.evaluation.episodes import run_episodes  # pylint: disable=g-import-not-at-top
  env = seed.envs.make_env('atari:Breakout', seed=0, episodic_life=True)
  _, info = env.reset()
  assert info[LIFE_LOST] is False and env.unwrapped.ale.lives() == 5
  rng, marked = np.random.default_rng(0), 0
  for _ in range(5000):
    _, _, terminated, truncated, info = env.step(int(rng.integers(4)))
    marked += info[LIFE_LOST]
    assert env.unwrapped.ale.lives() == 5 - marked or terminated
    if terminated or truncated:
      break
  assert (terminated, marked) == (True, 4)
  plain = seed.envs.make_env('atari:Breakout', seed=0)
  plain.reset()
  assert LIFE_LOST not in plain.step(1)[4]

  # Evaluation plays whole games, the policy's done marking the lives as in training.
  dones = []
  def policy(observation, reward, done, core_state, acting):
    del observation, reward, acting
    dones.append(bool(done[0]))
    return np.array([int(rng.integers(4))]), {}, core_state
  (episode,) = run_episodes(policy, lambda n: (), [env], 1, acting=None)
  assert episode.length_steps == len(dones) and sum(dones[1:]) == 4


def test_atari_life_loss_options_exclude_each_other():
  with pytest.raises(ValueError, match='terminal_on_life_loss.*episodic_life.*exclude'):
    seed.envs.make_env('atari:Breakout', terminal_on_life_loss=True, episodic_life=True)


def test_atari_unknown_game():
  with pytest.raises(UnknownEnvError) as error:
    seed.envs.make_env('atari:NoSuchGame')
  assert 'NoSuchGame' in str(error.value)
  assert "'atari:<Game>'" in str(error.value) and 'Pong' in str(error.value)


def test_atari_bad_option_value():
  with pytest.raises(ValueError, match='sticky_action_probability.*1.5'):
    seed.envs.make_env('atari:Pong', sticky_action_probability=1.5)


# Catch.


def _play_catch(policy, seed_value, rows=10, columns=5):
  env = seed.envs.make_env('Catch', seed=seed_value, rows=rows, columns=columns)
  obs, _ = env.reset()
  game = env.unwrapped
  steps, total = 0, 0.0
  while True:
    ball_row, ball_column = game.ball
    assert ball_row == steps
    assert obs[ball_row, ball_column] == 1.0
    assert obs[-1, game.paddle_column] == 1.0
    assert obs.sum() == 2.0
    obs, reward, terminated, truncated, _ = env.step(policy(ball_column, game.paddle_column))
    steps += 1
    total += reward
    assert not truncated
    if terminated:
      return steps, total, reward
    assert reward == 0.0


def _toward(ball, paddle):
  return catch.STAY if ball == paddle else (catch.LEFT if ball < paddle else catch.RIGHT)


def _away(ball, paddle):
  return catch.RIGHT if ball <= paddle else catch.LEFT


@pytest.mark.parametrize('rows,columns', [(10, 5), (6, 3)])
def test_catch_optimal_policy_always_wins(rows, columns):
  for s in range(20):
    assert _play_catch(_toward, s, rows, columns) == (rows - 1, 1.0, 1.0)


def test_catch_moving_away_always_loses():
  for s in range(20):
    assert _play_catch(_away, s) == (9, -1.0, -1.0)


def test_catch_ball_column_is_random_and_step_after_end_fails():
  env = seed.envs.make_env('Catch', seed=0)
  columns = {(env.reset(), env.unwrapped.ball[1])[1] for _ in range(50)}
  assert columns == set(range(5))
  for _ in range(9):
    env.step(catch.STAY)
  with pytest.raises(RuntimeError, match='reset'):
    env.step(catch.STAY)
  env.reset()
  with pytest.raises(ValueError, match='got 3'):
    env.step(3)


# gin.


def test_gin_binds_env_config():
  gin.parse_config("EnvConfig.name = 'Catch'\nEnvConfig.options = {'rows': 7}")
  config = EnvConfig()
  assert config == EnvConfig('Catch', {'rows': 7})
  env = config.make(seed=0)
  assert isinstance(env.unwrapped, catch.Catch)
  assert env.reset()[0].shape == (7, 5)


def test_gin_atari_options():
  gin.parse_config("EnvConfig.name = 'atari:Pong'\n"
                   "EnvConfig.options = {'sticky_action_probability': 0.25}")
  env = EnvConfig().make(seed=0)
  assert env.unwrapped.ale.getFloat('repeat_action_probability') == pytest.approx(0.25)


def test_gin_unknown_binding_fails():
  with pytest.raises(ValueError, match="EnvConfig.*doesn't have a parameter named 'nme'"):
    gin.parse_config("EnvConfig.nme = 'Catch'")


def test_env_config_checks_name_and_options_early():
  with pytest.raises(UnknownEnvError, match='Cach'):
    EnvConfig('Cach')
  with pytest.raises(ValueError, match="'Catch' has no option row"):
    EnvConfig('Catch', {'row': 3})
  with pytest.raises(ValueError, match='seed'):
    EnvConfig('Catch', {'seed': 3})
  assert EnvConfig().name == 'CartPole-v1'


def test_env_spec_rejects_unsupported_spaces():
  env = gymnasium.make('CartPole-v1')
  env.action_space = gymnasium.spaces.MultiDiscrete([2, 2])
  with pytest.raises(ValueError, match='Discrete or Box.*MultiDiscrete'):
    seed.envs.env_spec(env)


def test_envs_do_not_import_tensorflow():
  code = textwrap.dedent("""
      import sys
      import seed.envs
      env = seed.envs.make_env('Catch')
      env.reset()
      env.step(1)
      seed.envs.make_env('atari:Pong').reset()
      seed.envs.EnvConfig('CartPole-v1').spec()
      assert 'tensorflow' not in sys.modules, 'seed.envs imported TensorFlow'
      """)
  result = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                          timeout=60, check=False, cwd=REPO_ROOT)
  assert result.returncode == 0, result.stderr
