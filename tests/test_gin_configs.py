"""Every shipped gin file parses strictly and builds its env and agent."""
import glob
import os

import gin
import pytest

from seed import agents, config, learner_runtime
from seed.envs import EnvConfig, env_spec
from seed.replay.replay_input import ReplayInput
from tests.processes import REPO

GIN_FILES = sorted(glob.glob(os.path.join(REPO, 'gin', '*', '*.gin')))


def test_there_are_configs():
  assert len(GIN_FILES) >= 2


@pytest.mark.parametrize('path', GIN_FILES, ids=lambda p: os.path.relpath(p, REPO))
def test_config_builds(path):
  agent_name = os.path.splitext(os.path.basename(path))[0]
  agent_class = agents.agent_class(agent_name)
  gin.clear_config()
  try:
    config.parse_gin([path], [])
    env = EnvConfig().make(seed=0)
    spec = env_spec(env)
    env.close()
    agent = agent_class(env_spec=spec)
    assert agent.batch_size >= 1 and agent.unroll_length >= 1
    if agent.input_kind == 'replay':  # Its gin bindings must build too.
      replay = ReplayInput(agent.batch_size, **learner_runtime._replay_ratio(agent))
      assert replay.replay.capacity >= 1
  finally:
    gin.clear_config()


def test_a_typo_in_a_binding_fails_with_gins_error():
  agents.agent_class('vtrace')
  with pytest.raises(ValueError, match='learning_rat'):
    config.parse_gin([], ['VTraceAgent.learning_rat = 0.1'])
  gin.clear_config()


def test_unknown_agent_lists_the_known_ones():
  with pytest.raises(ValueError, match="unknown agent 'nope'; known agents: ddpg, ppo, r2d2, sac, vtrace"):
    agents.agent_class('nope')


def test_agents_that_set_the_replay_ratio_refuse_a_bound_one():
  config.parse_gin([os.path.join(REPO, 'gin', 'toy', 'sac.gin')],
                   ['ReplayInput.samples_per_insert = 4.0'])
  try:
    env = EnvConfig().make(seed=0)
    agent = agents.agent_class('sac')(env_spec=env_spec(env))
    env.close()
    with pytest.raises(ValueError, match=r'ReplayInput.samples_per_insert = 4.0 is bound.*'
                       r'updates_per_step \* minibatch_size = 256'):
      learner_runtime._replay_ratio(agent)
  finally:
    gin.clear_config()
