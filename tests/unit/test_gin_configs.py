"""Every shipped gin file parses strictly and builds its env and agent."""
import glob
import os

import gin
import pytest

from seed import agents, config
from seed.envs import EnvConfig
from seed.inputs import build as inputs
from seed.inputs.fresh_then_replay import FreshThenReplay
from seed.inputs.replay_input import ReplayInput
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
    # The learner's way: Football and DMLab specs come from the name (their packages
    # are the actors'), every other env's from an instance.
    agent = agent_class(EnvConfig().spec())
    assert isinstance(agent.config, agent_class.config_class)
    assert agent.batch_unrolls >= 1 and agent.unroll_length >= 1
    if agent.input_kind == 'replay':  # Its gin bindings must build too.
      replay = ReplayInput(agent.batch_unrolls, **inputs._replay_ratio(agent))
      assert replay.fill == 0.0
    if agent.input_kind == 'fresh_then_replay':  # ACER's schedule must build too.
      schedule = FreshThenReplay(agent.batch_unrolls, agent.replay_schedule)
      assert schedule.fill == 0.0
  finally:
    gin.clear_config()


def test_a_typo_in_a_binding_fails_with_gins_error():
  agents.agent_class('vtrace')
  with pytest.raises(ValueError, match='learning_rat'):
    config.parse_gin([], ['VTraceConfig.learning_rat = 0.1'])
  gin.clear_config()


@pytest.mark.parametrize('old, new', [
    ('VTraceAgent.batch_size', 'VTraceConfig.batch_unrolls'),
    ('VTraceAgent.discount', 'VTraceConfig.discount'),
    ('PPOAgent.batch_size', 'PPOConfig.batch_unrolls'),
    ('R2D2Agent.burn_in', 'R2D2Config.burn_in_steps'),
    ('R2D2Agent.unroll_length', 'R2D2Config.trained_steps'),
    ('R2D2Config.batch_size', 'R2D2Config.batch_sequences'),
    ('SACAgent.minibatch_size', 'SACConfig.minibatch_transitions'),
    ('DDPGConfig.minibatch_size', 'DDPGConfig.minibatch_transitions')])
def test_an_old_binding_name_fails_naming_the_new_one(old, new, tmp_path):
  for name in agents.AGENTS:
    agents.agent_class(name)
  with pytest.raises(ValueError, match=f'--gin_bindings: {old} was renamed; bind {new} '):
    config.parse_gin([], [f'{old} = 3'])
  path = tmp_path / 'old.gin'
  path.write_text(f'# An old file.\nEnvConfig.name = "Catch"\n{old} = 3\n')
  with pytest.raises(ValueError, match=f'old.gin: {old} was renamed; bind {new} '):
    config.parse_gin([str(path)], [])
  gin.clear_config()


def test_unknown_agent_lists_the_known_ones():
  with pytest.raises(ValueError, match="unknown agent 'nope'; known agents: acer, acer_continuous, ddpg, ppo, r2d2, r2d2_cpu, reactor, sac, sr_ddpg, sr_sac, vtrace"):
    agents.agent_class('nope')


def test_agents_that_set_the_replay_ratio_refuse_a_bound_one():
  config.parse_gin([os.path.join(REPO, 'gin', 'toy', 'sac.gin')],
                   ['ReplayInput.samples_per_insert = 4.0'])
  try:
    agent = agents.agent_class('sac')(EnvConfig().spec())
    with pytest.raises(ValueError, match=r'ReplayInput.samples_per_insert = 4.0 is bound.*'
                       r'updates_per_step \* minibatch_transitions = 256'):
      inputs._replay_ratio(agent)
  finally:
    gin.clear_config()


@pytest.mark.parametrize('agent_name, binding, message', [
    ('sr_sac', 'SACConfig.reset_interval_updates = 320000',
     r'SACConfig.reset_interval_updates = 320000 resets every 10000 env steps '
     r'\(updates_per_step = 32\), not more than the warm-up of '
     r'ReplayInput.min_fill_unrolls = 10000 uniform random steps'),
    ('sr_ddpg', 'DDPGConfig.reset_interval_env_steps = 500',
     r'DDPGConfig.reset_interval_env_steps = 500 resets every 500 env steps'),
])
def test_resets_within_the_warm_up_are_refused(agent_name, binding, message):
  config.parse_gin([os.path.join(REPO, 'gin', 'dmc', f'{agent_name}.gin')],
                   [binding, 'DDPGConfig.reset_interval_updates = None'
                    if agent_name == 'sr_ddpg' else 'SACConfig.hidden_sizes = (8,)'])
  try:
    agent = agents.agent_class(agent_name)(EnvConfig().spec())
    with pytest.raises(ValueError, match=message):
      inputs.check_resets_after_warm_up(agent, warm_up_steps=10000)
    inputs.check_resets_after_warm_up(agent, warm_up_steps=100)  # Fine.
  finally:
    gin.clear_config()


def test_sr_sac_aims_at_half_the_entropy_of_sac():
  config.parse_gin([os.path.join(REPO, 'gin', 'dmc', 'sr_sac.gin')], [])
  try:
    agent = agents.agent_class('sr_sac')(EnvConfig().spec())  # cheetah-run: |A| = 6.
    assert agent._target_entropy == -3.0
    assert agent.config.reset_interval == 2_560_000 and agent.reset_interval_env_steps == 80_000
  finally:
    gin.clear_config()


@pytest.mark.parametrize('agent_name', ['vtrace', 'ppo'])
def test_the_classic_configs_build_on_every_suite_task(agent_name):
  from seed.experiments.suites import classic_control  # pylint: disable=g-import-not-at-top
  agent_class = agents.agent_class(agent_name)
  for task in classic_control.TASKS:
    gin.clear_config()
    try:
      config.parse_gin([os.path.join(REPO, 'gin', 'classic', f'{agent_name}.gin')],
                       [f'EnvConfig.name = {task.env_name!r}'])
      agent = agent_class(EnvConfig().spec())  # Raises for a spec it cannot act in.
      assert agent.trained_outputs
    finally:
      gin.clear_config()
