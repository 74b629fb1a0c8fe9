"""Tests for the continuous-control families: `mujoco:<id>` and `dmc:<domain>-<task>`."""
import collections
import importlib.util
import os
import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import seed.envs
from seed.envs import EnvConfig
from seed.envs import EnvSpec
from seed.envs import UnknownEnvError

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]

requires_mujoco = pytest.mark.skipif(
    importlib.util.find_spec('mujoco') is None,
    reason="mujoco is not installed: pip install 'gymnasium[mujoco]'")
requires_dm_control = pytest.mark.skipif(
    importlib.util.find_spec('dm_control') is None,
    reason="dm_control is not installed: pip install 'dm-control==1.0.50'")


@pytest.fixture(autouse=True)
def _in_tmp_dir(tmp_path, monkeypatch):
  # MuJoCo appends its compiler warnings (e.g. the deprecated settotalmass in
  # Humanoid and DMC's cheetah) to MUJOCO_LOG.TXT in the working directory;
  # keep that out of the repo. Subprocesses below run in tmp_path too.
  monkeypatch.chdir(tmp_path)


def _rollout(env, num_steps, reset_seed=None, action_seed=0):
  """Observations and rewards of `num_steps` steps under seeded random actions."""
  obs, _ = env.reset(seed=reset_seed)
  actions = np.random.default_rng(action_seed).uniform(
      -1, 1, (num_steps,) + env.action_space.shape).astype(np.float32)
  observations, rewards = [obs], []
  for action in actions:
    obs, reward, *_ = env.step(action)
    observations.append(obs)
    rewards.append(reward)
  return np.stack(observations), np.array(rewards)


# MuJoCo (gymnasium).

MUJOCO_ACTION_DIMS = {'HalfCheetah-v5': 6, 'Hopper-v5': 3, 'Walker2d-v5': 6, 'Ant-v5': 8,
                      'Humanoid-v5': 17}


@requires_mujoco
@pytest.mark.parametrize('env_id,action_dim', MUJOCO_ACTION_DIMS.items())
def test_mujoco_builds_with_float32_obs_and_unit_actions(env_id, action_dim):
  env = seed.envs.make_env(f'mujoco:{env_id}', seed=1)
  spec = seed.envs.env_spec(env)
  assert spec.action_shape == (action_dim,) and spec.action_dtype == 'float32'
  assert spec.action_low == (-1.0,) * action_dim and spec.action_high == (1.0,) * action_dim
  assert spec.observation_dtype == 'float32' and spec.frames_per_step == 1
  obs, _ = env.reset()
  assert obs.dtype == np.float32 and obs.shape == spec.observation_shape
  obs, reward, terminated, truncated, _ = env.step(env.action_space.sample())
  assert obs.dtype == np.float32 and obs.shape == spec.observation_shape
  assert np.isscalar(reward) and isinstance(terminated, bool) and isinstance(truncated, bool)
  env.close()


@requires_mujoco
def test_mujoco_humanoid_actions_rescale_to_its_native_range():
  env = seed.envs.make_env('mujoco:Humanoid-v5', seed=0)
  env.reset()
  # Humanoid's motors take [-0.4, 0.4]; the agent's +-1 must reach them as +-0.4.
  for action, expected in ((1.0, 0.4), (-1.0, -0.4), (0.0, 0.0), (0.5, 0.2)):
    env.step(np.full(17, action, np.float32))
    np.testing.assert_allclose(env.unwrapped.data.ctrl, expected, atol=1e-6)


@requires_mujoco
def test_mujoco_seeding_reproduces_trajectories():
  first = [seed.envs.make_env('mujoco:Hopper-v5', seed=s).reset()[0] for s in (7, 7, 8)]
  np.testing.assert_array_equal(first[0], first[1])
  assert not np.array_equal(first[0], first[2])
  runs = [_rollout(seed.envs.make_env('mujoco:Hopper-v5', seed=s), 30) for s in (7, 7, 8)]
  np.testing.assert_array_equal(runs[0][0], runs[1][0])
  np.testing.assert_array_equal(runs[0][1], runs[1][1])
  assert not np.array_equal(runs[0][0], runs[2][0])


@requires_mujoco
def test_mujoco_half_cheetah_truncates_at_1000_steps():
  env = seed.envs.make_env('mujoco:HalfCheetah-v5', seed=0)
  env.reset()
  zero = np.zeros(6, np.float32)
  for step in range(1, 1001):
    _, _, terminated, truncated, _ = env.step(zero)
    if terminated or truncated:
      break
  assert (step, terminated, truncated) == (1000, False, True)


@requires_mujoco
def test_mujoco_options_reach_gym_make_and_bad_ones_are_named():
  env = seed.envs.make_env('mujoco:HalfCheetah-v5', ctrl_cost_weight=0.25)
  assert env.unwrapped._ctrl_cost_weight == 0.25  # pylint: disable=protected-access
  with pytest.raises(ValueError) as error:
    seed.envs.make_env('mujoco:HalfCheetah-v5', ctrl_cost_wieght=0.25)
  assert 'mujoco:HalfCheetah-v5' in str(error.value)
  assert 'ctrl_cost_wieght' in str(error.value)


def test_mujoco_unknown_id_names_the_v5_ids():
  with pytest.raises(UnknownEnvError) as error:
    seed.envs.make_env('mujoco:HalfChetah-v5')
  message = str(error.value)
  assert "'HalfChetah-v5'" in message and 'Did you mean mujoco:HalfCheetah-v5' in message
  for env_id in MUJOCO_ACTION_DIMS:
    assert env_id in message
  # A gymnasium id that is not a MuJoCo env is not a mujoco: member.
  with pytest.raises(UnknownEnvError, match='CartPole-v1'):
    seed.envs.make_env('mujoco:CartPole-v1')


# DM Control.


@requires_dm_control
def test_dmc_cheetah_run_builds_with_flat_float32_obs():
  env = seed.envs.make_env('dmc:cheetah-run', seed=1)
  suite_env = env.unwrapped.suite_env
  obs_size = sum(int(np.prod(s.shape)) for s in suite_env.observation_spec().values())
  assert obs_size == 17  # position 8 + velocity 9.
  expected = EnvSpec((17,), 'float32', action_shape=(6,), action_dtype='float32',
                     action_low=(-1.0,) * 6, action_high=(1.0,) * 6)
  assert seed.envs.env_spec(env) == expected
  assert EnvConfig('dmc:cheetah-run').spec() == expected
  obs, _ = env.reset()
  assert obs.shape == (17,) and obs.dtype == np.float32
  obs, reward, terminated, truncated, _ = env.step(env.action_space.sample())
  assert obs.shape == (17,) and obs.dtype == np.float32
  assert isinstance(reward, float) and (terminated, truncated) == (False, False)
  # The suite's OrderedDict order: position first, then velocity.
  np.testing.assert_allclose(obs[8:], suite_env.physics.data.qvel, rtol=1e-6)


def test_dmc_scale_action_by_hand():
  from seed.envs import dmc  # pylint: disable=g-import-not-at-top,import-outside-toplevel
  minimum, maximum = np.array([-1.0, 0.0, -0.8]), np.array([1.0, 10.0, 0.4])
  np.testing.assert_allclose(dmc.scale_action([-1, -1, -1], minimum, maximum), minimum)
  np.testing.assert_allclose(dmc.scale_action([1, 1, 1], minimum, maximum), maximum)
  np.testing.assert_allclose(dmc.scale_action([0, 0.5, 0], minimum, maximum), [0.0, 7.5, -0.2])
  # Out-of-range actions (a Gaussian policy's tails) are clipped to the bounds.
  np.testing.assert_allclose(dmc.scale_action([3, -2, 1.5], minimum, maximum), [1.0, 0.0, 0.4])


@requires_dm_control
def test_dmc_rescales_onto_bounds_that_are_not_unit():
  # quadruped's actuators span [-1, 1], [-1, 1.1] and [-0.8, 0.8] per leg.
  env = seed.envs.make_env('dmc:quadruped-walk', seed=0)
  env.reset()
  physics = env.unwrapped.suite_env.physics
  maximum = np.tile([1.0, 1.1, 0.8], 4)
  minimum = np.tile([-1.0, -1.0, -0.8], 4)
  env.step(np.ones(12, np.float32))
  np.testing.assert_allclose(physics.data.ctrl, maximum)
  env.step(-np.ones(12, np.float32))
  np.testing.assert_allclose(physics.data.ctrl, minimum)


class _FakeSuite:
  """Stands in for dm_control.suite: one task that ends with discount 0 after 3 steps."""
  ALL_TASKS = (('fake', 'stop'),)
  BENCHMARKING = ALL_TASKS

  class _Env:

    def __init__(self):
      import dm_env  # pylint: disable=g-import-not-at-top,import-outside-toplevel
      from dm_env import specs  # pylint: disable=g-import-not-at-top,import-outside-toplevel
      self._dm_env, self._steps, self.actions = dm_env, 0, []
      self._action_spec = specs.BoundedArray((2,), np.float64, [0.0, -4.0], [10.0, 4.0])
      self._obs_spec = collections.OrderedDict(
          [('b', specs.Array((), np.float64)), ('a', specs.Array((2, 2), np.float64))])

    def action_spec(self):
      return self._action_spec

    def observation_spec(self):
      return self._obs_spec

    def _obs(self):
      return collections.OrderedDict([('b', np.float64(self._steps)),
                                      ('a', np.arange(4.0).reshape(2, 2) + 10)])

    def reset(self):
      self._steps = 0
      return self._dm_env.restart(self._obs())

    def step(self, action):
      self.actions.append(np.array(action))
      self._steps += 1
      if self._steps == 3:
        return self._dm_env.termination(1.0, self._obs())
      return self._dm_env.transition(0.5, self._obs())

    def close(self):
      pass

  def load(self, domain, task, task_kwargs, environment_kwargs):
    del domain, task, task_kwargs, environment_kwargs
    return self._Env()


def test_dmc_adapter_on_a_fake_suite(monkeypatch):
  from seed.envs import dmc  # pylint: disable=g-import-not-at-top,import-outside-toplevel
  monkeypatch.setattr(dmc, '_suite', _FakeSuite)
  env = dmc.make_dmc('fake', 'stop', seed=0, action_repeat=2)
  assert env.frames_per_step == 2 and env.observation_space.shape == (5,)
  obs, _ = env.reset()
  # Flattened in the spec's order ('b' before 'a'), float32.
  np.testing.assert_array_equal(obs, np.float32([0, 10, 11, 12, 13]))
  assert obs.dtype == np.float32
  assert env.step(np.float32([1, 0]))[1:4] == (1.0, False, False)  # 0.5 + 0.5.
  np.testing.assert_allclose(env.unwrapped.suite_env.actions[-1], [10.0, 0.0])
  # The third physics step ends the episode (discount 0): the repeat stops early.
  obs, reward, terminated, truncated, _ = env.step(np.float32([-1, -1]))
  assert (obs[0], reward, terminated, truncated) == (3.0, 1.0, True, False)
  assert len(env.unwrapped.suite_env.actions) == 3
  np.testing.assert_allclose(env.unwrapped.suite_env.actions[-1], [0.0, -4.0])
  with pytest.raises(RuntimeError, match='reset'):
    env.step(np.float32([0, 0]))


@requires_dm_control
def test_dmc_seeding_reproduces_episodes():
  runs = [_rollout(seed.envs.make_env('dmc:walker-walk', seed=s), 20) for s in (3, 3, 4)]
  np.testing.assert_array_equal(runs[0][0], runs[1][0])
  np.testing.assert_array_equal(runs[0][1], runs[1][1])
  assert not np.array_equal(runs[0][0][0], runs[2][0][0])
  env = seed.envs.make_env('dmc:walker-walk', seed=3)
  later = [_rollout(env, 5)[0][0] for _ in range(2)]
  # Unseeded resets continue the stream; an explicit seed replays the episode.
  assert not np.array_equal(later[0], later[1])
  again = _rollout(env, 20, reset_seed=3)
  np.testing.assert_array_equal(again[0], runs[0][0])
  np.testing.assert_array_equal(again[1], runs[0][1])


@requires_dm_control
def test_dmc_time_limit_truncates_and_action_repeat_sums_rewards():
  action = np.full(6, 0.3, np.float32)
  lengths, rewards = {}, {}
  for repeat in (1, 2):
    env = seed.envs.make_env('dmc:cheetah-run', seed=5, action_repeat=repeat)
    assert seed.envs.env_spec(env).frames_per_step == repeat
    env.reset()
    rewards[repeat] = []
    while True:
      _, reward, terminated, truncated, _ = env.step(action)
      rewards[repeat].append(reward)
      if terminated or truncated:
        break
    assert (terminated, truncated) == (False, True)
    lengths[repeat] = len(rewards[repeat])
    with pytest.raises(RuntimeError, match='reset'):
      env.step(action)
  assert lengths == {1: 1000, 2: 500}
  single = np.array(rewards[1])
  np.testing.assert_allclose(rewards[2], single[0::2] + single[1::2], rtol=1e-12)


@requires_dm_control
@pytest.mark.parametrize('name,options,match', [
    ('dmc:cheetah-rn', {}, 'Did you mean dmc:cheetah-run'),
    ('dmc:chetah-run', {}, 'walker-walk'),
    ('dmc:cheetah', {}, 'cheetah-run'),
])
def test_dmc_unknown_task_lists_benchmarking_names(name, options, match):
  with pytest.raises(UnknownEnvError, match=match):
    seed.envs.make_env(name, **options)


@requires_dm_control
@pytest.mark.parametrize('options,match', [
    ({'bogus': 1}, 'no option bogus.*action_repeat'),
    ({'action_repeat': 0}, 'action_repeat.*got 0'),
    ({'task_kwargs': {'bogus': 1}}, 'task_kwargs.*bogus'),
    ({'task_kwargs': {'random': 1}}, "'random'"),
])
def test_dmc_bad_options_are_named(options, match):
  with pytest.raises(ValueError, match=match):
    seed.envs.make_env('dmc:cheetah-run', **options)


@requires_dm_control
def test_dmc_task_kwargs_reach_the_task():
  env = seed.envs.make_env('dmc:finger-turn_hard', task_kwargs={'time_limit': 0.2})
  env.reset()
  steps = 0
  while not any(env.step(env.action_space.sample())[2:4]):
    steps += 1
  assert steps + 1 == 10  # 0.2 s at finger's 0.02 s control step.


def test_missing_packages_say_how_to_install(monkeypatch):
  # A None entry in sys.modules makes the import fail, as if not installed.
  monkeypatch.setitem(sys.modules, 'mujoco', None)
  with pytest.raises(ImportError, match=r"pip install 'gymnasium\[mujoco\]'"):
    seed.envs.make_env('mujoco:HalfCheetah-v5')
  monkeypatch.setitem(sys.modules, 'dm_control', None)
  with pytest.raises(ImportError, match="pip install 'dm-control"):
    seed.envs.make_env('dmc:cheetah-run')


def test_importing_the_registry_loads_neither_mujoco_nor_dm_control(tmp_path):
  code = textwrap.dedent("""
      import sys
      import seed.envs.registry
      assert 'mujoco' not in sys.modules and 'dm_control' not in sys.modules
      # Naming a mujoco: env checks the id without loading mujoco either.
      seed.envs.EnvConfig('mujoco:HalfCheetah-v5')
      assert 'mujoco' not in sys.modules, 'resolving mujoco:<id> imported mujoco'
      """)
  result = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                          timeout=60, check=False, cwd=tmp_path,
                          env={**os.environ, 'PYTHONPATH': str(REPO_ROOT)})
  assert result.returncode == 0, result.stderr


@requires_mujoco
@requires_dm_control
def test_continuous_envs_do_not_import_tensorflow(tmp_path):
  code = textwrap.dedent("""
      import sys
      import seed.envs
      for name in ('mujoco:HalfCheetah-v5', 'dmc:cheetah-run'):
        env = seed.envs.make_env(name)
        env.reset()
        env.step(env.action_space.sample())
      assert 'tensorflow' not in sys.modules, 'seed.envs imported TensorFlow'
      """)
  result = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                          timeout=60, check=False, cwd=tmp_path,
                          env={**os.environ, 'PYTHONPATH': str(REPO_ROOT)})
  assert result.returncode == 0, result.stderr
