"""The `seed` command (seed/cli.py): its subcommands, their help, bad input; and what
`seed train` makes of its arguments (seed.process.local_run.Plan)."""
import subprocess
import sys

import pytest

from seed import cli, settings
from seed.process import local_run
from tests.processes import REPO


def _seed(*args):
  return subprocess.run([sys.executable, '-m', 'seed', *args], capture_output=True, text=True,
                        cwd=REPO, timeout=120)


def test_seed_alone_lists_every_command():
  result = _seed()
  assert result.returncode == 0
  for command in cli.COMMANDS:
    assert f'seed {command}' in result.stdout


def test_an_unknown_command_is_named_with_the_accepted_ones():
  result = _seed('fly')
  assert result.returncode == 2
  assert ("unknown command 'fly'; accepted: train, eval, diagnose, plot, experiments, suite, submit"
          in result.stderr)


def test_train_help_lists_every_learner_and_actor_setting():
  result = _seed('train', '--help')
  assert result.returncode == 0 and result.stdout.startswith(local_run.USAGE)
  for setting in settings.LEARNER + settings.ACTOR:
    assert f'--{setting.name}=' in result.stdout, setting.name


@pytest.mark.parametrize('command', ['eval', 'diagnose', 'plot', 'experiments', 'suite dmc15',
                                     'suite classic_control', 'suite learning_curve', 'suite atari5'])
def test_each_command_has_its_help(command):
  result = _seed(*command.split(), '--help')
  assert result.returncode == 0, result.stderr
  assert 'usage' in result.stdout.lower() or '--' in result.stdout


def test_suite_names_the_suites():
  refused = _seed('suite', 'atari57')
  assert refused.returncode == 2
  assert "seed suite: 'atari57'; accepted: dmc15, classic_control, learning_curve, atari5" in refused.stderr


def test_submit_names_the_platforms_and_runs_the_repository_submitter():
  refused = _seed('submit', 'aws')
  assert refused.returncode == 2
  assert "platform 'aws'; accepted: vertex, slurm" in refused.stderr
  vertex = _seed('submit', 'vertex', '--help')
  assert vertex.returncode == 0 and '--project' in vertex.stdout


def test_train_sends_the_shared_flags_to_the_actors_too(monkeypatch):
  monkeypatch.chdir(REPO)
  monkeypatch.setenv('SEED_PORT', '9000')
  plan = local_run.Plan(['toy', 'vtrace', '2', '4', '--seed=3', '--env=Catch',
                         '--logdir=/tmp/somewhere', '--target_return=0.9',
                         "--gin_bindings=VTraceConfig.entropy_cost=0.01"])
  assert (plan.num_actors, plan.envs_per_actor, plan.logdir, plan.port) == (
      2, 4, '/tmp/somewhere', '9000')
  assert plan.actor_flags == ['--seed=3', '--env=Catch',
                              '--gin_bindings=VTraceConfig.entropy_cost=0.01']
  assert plan.gin_file == 'gin/toy/vtrace.gin'
  assert local_run.Plan(['toy', 'vtrace', '1', '1', '--server_address=localhost:7000']).port \
      == '7000'


def test_train_finds_the_configs_from_another_folder(monkeypatch, tmp_path):
  monkeypatch.chdir(tmp_path)
  plan = local_run.Plan(['toy', 'vtrace', '1', '1'])
  assert plan.gin_file == f'{REPO}/gin/toy/vtrace.gin'
  assert plan.logdir == 'runs/toy_vtrace'


@pytest.mark.parametrize('args, message', [
    (['toy'], 'usage: seed train ENV AGENT NUM_ACTORS ENVS_PER_ACTOR'),
    (['nope', 'vtrace', '1', '1'], "unknown env 'nope'; valid envs: atari classic dmc"),
    (['toy', 'nope', '1', '1'], "unknown agent 'nope' for env 'toy'; valid agents: acer"),
    (['toy', 'vtrace', '1', 'x'], "must be positive integers, got 'x'"),
])
def test_train_refuses_bad_arguments_naming_what_is_accepted(args, message):
  with pytest.raises(local_run.UsageError, match=message):
    local_run.Plan(args)


def test_football_without_its_actor_venv_names_the_way_to_make_one(tmp_path, monkeypatch):
  # An installed wheel: no scripts/ beside the package's gin files, nothing to build with.
  monkeypatch.setenv('SEED_FOOTBALL_VENV', str(tmp_path / 'missing-venv'))
  plan = local_run.Plan(['football', 'vtrace', '1', '1', f'--logdir={tmp_path}'])
  monkeypatch.setattr(local_run.config, 'gin_root', lambda: str(tmp_path / 'seed' / 'gin'))
  with pytest.raises(local_run.UsageError, match='SEED_FOOTBALL_VENV .*install_football.sh'):
    plan.ensure_actor_python()


def test_envs_other_than_football_act_in_this_interpreter():
  plan = local_run.Plan(['toy', 'vtrace', '1', '1'])
  assert plan.actor_python() == sys.executable
  plan.ensure_actor_python()  # Nothing to build.


def test_a_config_sized_for_an_accelerator_names_its_cpu_sibling_on_a_host_without_one():
  # gin/atari/r2d2.gin has gin/atari/r2d2_cpu.gin beside it; vtrace has no such sibling.
  notice = local_run.accelerator_notice('atari', 'r2d2', has_gpu=lambda: False)
  assert 'gin/atari/r2d2.gin is sized for an accelerator' in notice
  assert './run_local.sh atari r2d2_cpu' in notice and 'Going on with r2d2' in notice
  assert local_run.accelerator_notice('atari', 'r2d2', has_gpu=lambda: True) is None
  assert local_run.accelerator_notice('atari', 'vtrace', has_gpu=lambda: False) is None
  assert local_run.accelerator_notice('atari', 'r2d2_cpu', has_gpu=lambda: False) is None
