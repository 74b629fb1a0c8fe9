"""Bring your own environment: a package this test writes registers gymnasium envs on
import (`gym:<module>:<id>`) and defines a dm_env factory (`dm_env:<module>:<factory>`);
observations of every dtype gymnasium spaces use reach the network as their values."""
import os
import textwrap

import numpy as np
import pytest

import seed.envs
from seed.envs import registry

PACKAGE = 'seed_test_own_envs'

# The task: an observation carries a bit; the reward is 1 when the action equals it.
_PACKAGE_SOURCE = '''
"""A third-party env package as a user would write it (made by tests/integration/test_own_envs.py)."""
import dm_env
from dm_env import specs
import gymnasium
from gymnasium import spaces
import numpy as np

EPISODE_STEPS = 20
BOX_KINDS = {'bool': (0, 1), 'uint8': (0, 255), 'int64': (-10, 10), 'float64': (-1.0, 1.0)}


class CopyBit(gymnasium.Env):
  """Each step shows a random bit in the observation's first place (the rest is noise);
  the reward is 1 when the action equals the bit. 20 steps an episode."""

  def __init__(self, kind='bool'):
    self.kind = kind
    if kind in BOX_KINDS:
      low, high = BOX_KINDS[kind]
      self.observation_space = spaces.Box(low, high, (4,), np.dtype(kind))
    elif kind == 'multi_discrete':
      self.observation_space = spaces.MultiDiscrete([2, 3, 3])
    elif kind == 'dict':
      self.observation_space = spaces.Dict(
          {'bit': spaces.Discrete(2), 'noise': spaces.Box(-1, 1, (2,), np.float32)})
    else:
      raise ValueError(f'unknown kind {kind!r}')
    self.action_space = spaces.Discrete(2)

  def _observe(self):
    self._bit = int(self.np_random.integers(2))
    noise = self.np_random.integers(0, 2, 3)
    if self.kind == 'multi_discrete':
      return np.array([self._bit, noise[0], noise[1] + 1])
    if self.kind == 'dict':
      return {'bit': self._bit, 'noise': noise[:2].astype(np.float32)}
    low, high = BOX_KINDS[self.kind]
    values = np.where(np.concatenate([[self._bit], noise]) == 1, high, low)
    return values.astype(self.observation_space.dtype)

  def reset(self, *, seed=None, options=None):
    super().reset(seed=seed)
    self._steps = 0
    return self._observe(), {}

  def step(self, action):
    reward = float(int(action) == self._bit)
    self._steps += 1
    return self._observe(), reward, False, self._steps >= EPISODE_STEPS, {}


gymnasium.register('OwnEnvs/CopyBit-v0', entry_point=CopyBit)


class Corridor(dm_env.Environment):
  """Walk right (action 1) from cell 0 to the last cell; 10 steps at most."""

  def __init__(self, seed, length):
    self._rng, self._length = np.random.default_rng(seed), length

  def _observation(self):
    return np.array([self._position, self._rng.normal()], np.float32)

  def reset(self):
    self._position, self._steps = 0, 0
    return dm_env.restart(self._observation())

  def step(self, action):
    self._position = max(0, self._position + (1 if int(action) == 1 else -1))
    self._steps += 1
    if self._position == self._length - 1:
      return dm_env.termination(1.0, self._observation())
    if self._steps == 10:
      return dm_env.truncation(0.0, self._observation())
    return dm_env.transition(0.0, self._observation())

  def observation_spec(self):
    return specs.Array((2,), np.float32, name='position_and_noise')

  def action_spec(self):
    return specs.DiscreteArray(2, name='left_right')


def make_corridor(seed, length=4):
  return Corridor(seed, length)


def make_without_seed(length=4):
  return Corridor(0, length)


def make_not_a_dm_env(seed):
  return object()


NOT_CALLABLE = 3
'''


@pytest.fixture(scope='module')
def package_dir(tmp_path_factory):
  root = tmp_path_factory.mktemp('own_envs')
  os.makedirs(root / PACKAGE)
  (root / PACKAGE / '__init__.py').write_text(textwrap.dedent(_PACKAGE_SOURCE))
  return str(root)


@pytest.fixture
def own_package(package_dir, monkeypatch):
  """The package importable here and, through PYTHONPATH, in processes tests start."""
  monkeypatch.syspath_prepend(package_dir)
  monkeypatch.setenv('PYTHONPATH', package_dir + os.pathsep + os.environ.get('PYTHONPATH', ''))
  return package_dir


COPY_BIT = f'gym:{PACKAGE}:OwnEnvs/CopyBit-v0'


@pytest.mark.parametrize('kind', ['bool', 'uint8', 'int64', 'float64'])
def test_a_package_that_registers_on_import_works_and_box_dtypes_stay(own_package, kind):
  env = seed.envs.make_env(COPY_BIT, seed=3, kind=kind)
  spec = seed.envs.env_spec(env)
  assert spec.observation_dtype == kind and spec.observation_shape == (4,)
  assert spec.num_actions == 2
  observation, _ = env.reset()
  assert observation.dtype == np.dtype(kind) and observation.shape == (4,)
  # Seeded like every other env: the same seed gives the same episode.
  again, _ = seed.envs.make_env(COPY_BIT, seed=3, kind=kind).reset()
  np.testing.assert_array_equal(observation, again)


@pytest.mark.parametrize('kind, expected', [
    # MultiDiscrete [2, 3, 3]: a one-hot block per part.
    ('multi_discrete', lambda bit: [1 - bit, bit]),
    # Dict, in key order: 'bit' one-hot, then 'noise'.
    ('dict', lambda bit: [1 - bit, bit])])
def test_other_observation_spaces_arrive_flattened_to_float32(own_package, kind, expected):
  env = seed.envs.make_env(COPY_BIT, seed=0, kind=kind)
  spec = seed.envs.env_spec(env)
  assert spec.observation_dtype == 'float32'
  assert spec.observation_shape == ((8,) if kind == 'multi_discrete' else (4,))
  observation, _ = env.reset()
  bit = env.unwrapped._bit  # pylint: disable=protected-access
  np.testing.assert_array_equal(observation[:2], expected(bit))


def test_a_module_that_does_not_import_or_register_the_id_is_named(own_package):
  with pytest.raises(registry.UnknownEnvError,
                     match=r"cannot import module 'no_such_pkg_1234.envs' .* PYTHONPATH"):
    seed.envs.EnvConfig(name='gym:no_such_pkg_1234.envs:Thing-v0')
  with pytest.raises(registry.UnknownEnvError,
                     match=rf"Unknown gymnasium id 'OwnEnvs/CopyBits-v0' in env name "
                     rf"'gym:{PACKAGE}:OwnEnvs/CopyBits-v0'. Did you mean "
                     rf'gym:OwnEnvs/CopyBit-v0'):
    seed.envs.EnvConfig(name=f'gym:{PACKAGE}:OwnEnvs/CopyBits-v0')


def test_a_dm_env_factory_by_import_path(own_package):
  name = f'dm_env:{PACKAGE}:make_corridor'
  env = seed.envs.make_env(name, seed=5, length=3)
  spec = seed.envs.env_spec(env)
  assert (spec.observation_shape, spec.observation_dtype, spec.num_actions) == ((2,), 'float32', 2)
  first, _ = env.reset()
  assert first[0] == 0 and first.dtype == np.float32
  # Two steps right reach the last of 3 cells: a real end (discount 0).
  assert env.step(1)[1:4] == (0.0, False, False)
  observation, reward, terminated, truncated, _ = env.step(1)
  assert (observation[0], reward, terminated, truncated) == (2.0, 1.0, True, False)
  with pytest.raises(RuntimeError, match='reset'):
    env.step(1)
  # Left forever: the factory's 10-step limit ends with discount 1, a truncation.
  env.reset()
  ends = [env.step(0)[2:4] for _ in range(10)]
  assert ends[-1] == (False, True) and ends[:-1] == [(False, False)] * 9
  # Seeded: a reset with the first seed replays its noise; the factory took the seed.
  np.testing.assert_array_equal(env.reset(seed=5)[0], first)
  assert not np.array_equal(seed.envs.make_env(name, seed=6, length=3).reset()[0], first)


@pytest.mark.parametrize('name, message', [
    ('dm_env:no_such_pkg_1234:make', r"cannot import module 'no_such_pkg_1234'"),
    (f'dm_env:{PACKAGE}:make_maze', rf"module '{PACKAGE}' has no callable 'make_maze'"),
    (f'dm_env:{PACKAGE}:NOT_CALLABLE', r"has no callable 'NOT_CALLABLE'"),
    (f'dm_env:{PACKAGE}', r'name a factory as dm_env:<module>:<callable>'),
    (f'dm_env:{PACKAGE}:make_without_seed', r'the factory takes no seed keyword')])
def test_dm_env_names_that_cannot_work_are_refused_with_the_reason(own_package, name, message):
  with pytest.raises(registry.UnknownEnvError, match=message):
    seed.envs.EnvConfig(name=name)


def test_a_dm_env_factory_that_returns_something_else_or_rejects_options(own_package):
  with pytest.raises(ValueError, match=r'returned <object .*>, not a dm_env.Environment'):
    seed.envs.make_env(f'dm_env:{PACKAGE}:make_not_a_dm_env', seed=0)
  with pytest.raises(ValueError, match=r"rejected options \['width'\]"):
    seed.envs.make_env(f'dm_env:{PACKAGE}:make_corridor', seed=0, width=3)


@pytest.mark.parametrize('dtype, scale', [('bool', 1.0), ('int64', 1.0), ('float64', 1.0),
                                          ('uint8', 1 / 255)])
def test_every_box_dtype_reaches_the_network_as_its_values(dtype, scale):
  # The same network (same seed) given the observation in its own dtype and as float32
  # values computes the same logits: nothing is lost or reinterpreted on the way. uint8
  # (frames) is scaled by 1/255, as documented.
  pytest.importorskip('tensorflow')
  from seed.agents.vtrace import agent as agent_lib  # pylint: disable=g-import-not-at-top
  from seed.agents.vtrace import config as config_lib  # pylint: disable=g-import-not-at-top
  from seed.envs import spec as spec_lib  # pylint: disable=g-import-not-at-top
  from tests.agent_inputs import infer  # pylint: disable=g-import-not-at-top
  values = {'bool': [[1, 0, 1, 1], [0, 0, 1, 0]], 'int64': [[-7, 3, 0, 10], [5, -2, 1, 9]],
            'float64': [[0.25, -1.5, 3.0, 0.0], [1e-3, 2.0, -0.5, 7.0]],
            'uint8': [[0, 255, 17, 128], [3, 9, 200, 64]]}[dtype]
  observation = np.array(values, dtype)
  logits = {}
  for name, spec_dtype, batch in [('own', dtype, observation),
                                  ('float32', 'float32', observation.astype(np.float32) * scale)]:
    agent = agent_lib.VTraceAgent(spec_lib.EnvSpec((4,), spec_dtype, num_actions=2),
                                  config_lib.VTraceConfig(torso='mlp', mlp_hidden_sizes=(8,)))
    _, outputs, _ = infer(agent, batch, [True, True], agent.initial_core_state(2))
    logits[name] = np.asarray(outputs['logits'])
  np.testing.assert_allclose(logits['own'], logits['float32'], rtol=1e-6, atol=1e-6)
  assert not np.allclose(logits['own'][0], logits['own'][1])


def test_a_packaged_env_with_bool_observations_learns_through_grpc(own_package, tmp_path):
  # Learner and actors import the package through PYTHONPATH and send bool
  # observations over the wire; the policy can only score by reading the bit: a policy
  # blind to it averages 10 of 20 (a 20-episode mean has a spread of about 0.5). In
  # lockstep (tests.learning_runs), seed 0 passes 14 at 20,472 frames.
  from tests.learning_runs import train_until  # pylint: disable=g-import-not-at-top
  frames, mean_return = train_until(
      tmp_path, 'gin/classic/vtrace.gin', target=14.0, max_frames=40_000, window=20,
      bindings=[f'EnvConfig.name={COPY_BIT!r}', "EnvConfig.options={'kind': 'bool'}"])
  assert mean_return >= 14.0, f'best mean return over 20 episodes: {mean_return}'
  assert frames <= 40_000
