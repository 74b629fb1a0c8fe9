"""The experiment runner (python -m seed.experiments): grids, names, argument priority,
bad bindings, and skipping finished runs while resuming unfinished ones."""
import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from seed import config
from seed.experiments import layers, plan
from tests.processes import REPO, _env

# They parse gin in this process, as evaluate and the runner's check do.
pytestmark = [pytest.mark.timeout(300), pytest.mark.usefixtures('gin_cleared')]

GIN = os.path.join(REPO, 'gin/toy/vtrace.gin')


def test_grid_values_split_at_top_level_commas_only():
  assert plan.split_values("0.01, (64, 64),'a,b',[1, 2]") == [
      '0.01', '(64, 64)', "'a,b'", '[1, 2]']
  assert plan.parse_grid_axis('VTraceConfig.mlp_hidden_sizes=(32,),(64, 64)') == (
      'VTraceConfig.mlp_hidden_sizes', ('(32,)', '(64, 64)'))
  with pytest.raises(ValueError, match="expected Configurable.parameter=v1,v2"):
    plan.parse_grid_axis('entropy_cost=0.1')
  with pytest.raises(ValueError, match='expected distinct integers >= 0'):
    plan.parse_seeds('0,0')


def test_grid_times_seeds_gives_one_readably_named_experiment_each():
  spec = plan.command_line_spec(
      ["VTraceConfig.entropy_cost=0.01,0.001", "EnvConfig.name='Catch','gym:Acrobot-v1'"],
      '0,1')
  experiments = plan.expand([spec])
  assert [e.name for e in experiments] == [
      'entropy_cost=0.01__name=Catch__seed=0', 'entropy_cost=0.01__name=Catch__seed=1',
      'entropy_cost=0.01__name=gym_Acrobot-v1__seed=0',
      'entropy_cost=0.01__name=gym_Acrobot-v1__seed=1',
      'entropy_cost=0.001__name=Catch__seed=0', 'entropy_cost=0.001__name=Catch__seed=1',
      'entropy_cost=0.001__name=gym_Acrobot-v1__seed=0',
      'entropy_cost=0.001__name=gym_Acrobot-v1__seed=1']
  last = experiments[-1].overrides
  assert last.gin_bindings == ('VTraceConfig.entropy_cost = 0.001',
                               "EnvConfig.name = 'gym:Acrobot-v1'")
  assert last.seed == 1
  # The same parameter of two configurables: the names keep the configurable.
  names = [e.name for e in plan.expand([plan.command_line_spec(
      ['VTraceConfig.seed=1', 'PPOConfig.seed=2'], None)])]
  assert names == ['VTraceConfig.seed=1__PPOConfig.seed=2']


def test_experiments_file_entries_with_their_own_grids(tmp_path):
  path = tmp_path / 'sweep.json'
  path.write_text(json.dumps([
      {'name': 'catch', 'gin_bindings': ["EnvConfig.name = 'Catch'"],
       'grid': {'VTraceConfig.mlp_hidden_sizes': [[32], [64, 64]]}, 'seeds': [3],
       'learner_flags': {'max_env_frames': 5000}, 'num_envs': 2},
      {'name': 'cartpole', 'agent': 'ppo'}]))
  experiments = plan.expand(plan.load_file(str(path)))
  assert [e.name for e in experiments] == [
      'catch__mlp_hidden_sizes=32__seed=3', 'catch__mlp_hidden_sizes=64_64__seed=3', 'cartpole']
  first = experiments[0].overrides
  assert first.gin_bindings == ("EnvConfig.name = 'Catch'", 'VTraceConfig.mlp_hidden_sizes = (32,)')
  assert (first.learner_flags, first.num_envs, first.seed) == ({'max_env_frames': '5000'}, 2, 3)
  assert experiments[2].overrides.agent == 'ppo'
  path.write_text(json.dumps([{'name': 'x', 'seed': 1}]))
  with pytest.raises(ValueError, match="entry 0: unknown key 'seed'; accepted: name, agent"):
    plan.load_file(str(path))


def test_layer_refuses_flags_the_runner_sets_and_unknown_agents():
  with pytest.raises(ValueError, match='runner-set learner flag --logdir; an experiment may set'):
    layers.Layer(learner_flags={'logdir': '/tmp/x'})
  with pytest.raises(ValueError, match="unknown agent 'r2d3'; known agents: acer, acer_continuous, ddpg, ppo"):
    layers.Layer(agent='r2d3')


def saved_run(run_dir, entropy_cost, return_window):
  """A run directory as a learner leaves it: operative_config.gin and flags.txt."""
  os.makedirs(run_dir)
  with open(os.path.join(run_dir, 'operative_config.gin'), 'w') as f:
    f.write(f'VTraceConfig.entropy_cost = {entropy_cost}\nVTraceConfig.seed = 7\n')
  with open(os.path.join(run_dir, 'flags.txt'), 'w') as f:
    f.write(f'--agent=vtrace\n--seed=7\n--return_window={return_window}\n--notrain\n'
            f'--logdir={run_dir}\n--gin_file={GIN}\n')
  return str(run_dir)


def entropy_cost_and_seed(resolved):
  """What a learner parsing the resolved gin would use."""
  import gin  # pylint: disable=g-import-not-at-top
  from seed import agents  # pylint: disable=g-import-not-at-top
  agents.register_gin_configurables('vtrace')
  with gin.unlock_config():
    gin.clear_config()
    config.parse_gin(resolved.gin_files, resolved.gin_bindings)
  from seed.agents.vtrace.config import VTraceConfig  # pylint: disable=g-import-not-at-top
  made = VTraceConfig()
  with gin.unlock_config():
    gin.clear_config()  # Later tests build configs from gin's defaults.
  return made.entropy_cost, made.seed


def test_argument_priority_command_line_then_overrides_then_saved_then_defaults(tmp_path):
  # Each layer sets the entropy cost (gin), --return_window (a learner flag), the
  # seed and the envs per actor; take the top layer away, one at a time.
  defaults = layers.Layer(agent='vtrace', gin_files=(GIN,), seed=0, num_actors=1, num_envs=4)
  saved = layers.saved_layer(saved_run(tmp_path / 'run', 0.02, 2))
  overrides = layers.Layer(gin_bindings=('VTraceConfig.entropy_cost = 0.03',), seed=3,
                           learner_flags={'return_window': '3'}, num_envs=3)
  command_line = layers.Layer(gin_bindings=('VTraceConfig.entropy_cost = 0.04',),
                              learner_flags={'return_window': '4'}, num_envs=5)
  empty = layers.Layer()
  cases = [((defaults, saved, overrides, command_line), 0.04, '4', 3, 5),
           ((defaults, saved, overrides, empty), 0.03, '3', 3, 3),
           ((defaults, saved, empty, empty), 0.02, '2', 7, 4),
           ((defaults, empty, empty, empty), 0.01, None, 0, 4)]  # 0.01: the gin file's
  for stack, entropy_cost, return_window, seed, num_envs in cases:
    resolved = layers.resolve(*stack)
    assert entropy_cost_and_seed(resolved) == (pytest.approx(entropy_cost), seed)
    assert resolved.learner_flags.get('return_window') == return_window
    assert (resolved.seed, resolved.num_envs) == (seed, num_envs)
    assert f'--seed={seed}' in resolved.learner_args()
  # The saved layer carries experiment flags only, booleans included; not --logdir.
  assert saved.learner_flags == {'return_window': '2', 'train': 'false'}
  assert layers.resolve(defaults, saved, empty, empty).sources['flag:return_window'] == 'saved'
  # Without any learner flag the learner's own defaults apply.
  assert layers.resolve(defaults, empty, empty, empty).learner_flags == {}


def run_experiments(*args, timeout_s=240):
  return subprocess.run([sys.executable, '-m', 'seed.experiments', *args], capture_output=True,
                        text=True, env=_env(), cwd=REPO, timeout=timeout_s)


@pytest.mark.parametrize('grid, message', [
    ('VTraceConfig.entropy_cst=0.1', "gin rejects the binding 'VTraceConfig.entropy_cst = 0.1': "
     "Configurable 'VTraceConfig' doesn't have a parameter named 'entropy_cst'; VTraceConfig "
     'takes unroll_length, batch_unrolls,'),
    ('VTraceConfg.entropy_cost=0.1', "No configurable matching 'VTraceConfg'; the learner's "
     'configurables include EnvConfig, VTraceConfig (agent vtrace) and ReplayInput'),
    ('VTraceConfig.entropy_cost=0.1,-1', 'experiment entropy_cost=-1: VTraceConfig.entropy_cost '
     '= -1; accepted: a number >= 0'),
])
def test_a_grid_binding_gin_rejects_stops_before_any_run(tmp_path, grid, message):
  root = tmp_path / 'sweep'
  result = run_experiments(f'--root={root}', f'--gin_file={GIN}', f'--grid={grid}',
                           '--max_env_frames=1000')
  assert result.returncode == 2, result.stderr[-3000:]
  assert message in result.stderr.strip().splitlines()[-1]
  assert not root.exists()


def wait_for(predicate, what, timeout_s=180):
  deadline = time.monotonic() + timeout_s
  while not predicate():
    if time.monotonic() > deadline:
      raise TimeoutError(f'{what} did not happen within {timeout_s} s')
    time.sleep(0.5)


def test_runner_resumes_an_unfinished_run_and_skips_a_finished_one(tmp_path):
  root = tmp_path / 'sweep'
  args = [f'--root={root}', f'--gin_file={GIN}', '--grid=VTraceConfig.entropy_cost=0.02',
          '--seeds=5', '--num_envs=2', '--learner_flag=--progress_interval_s=1']
  run_dir = root / 'entropy_cost=0.02__seed=5'
  learner_log = run_dir / 'logs' / 'learner.log'
  # A budget it will not reach: stopped (as by Ctrl-C) once it trains, it is unfinished.
  runner = subprocess.Popen([sys.executable, '-m', 'seed.experiments', *args,
                             '--max_env_frames=1000000000'],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=_env(), cwd=REPO, start_new_session=True)
  try:
    wait_for(lambda: runner.poll() is not None or learner_log.exists() and re.search(
        r'learner [1-9]\d* steps', learner_log.read_text()), 'a train step')
    runner.send_signal(signal.SIGTERM)
    output, _ = runner.communicate(timeout=120)
  finally:
    if runner.poll() is None:
      os.killpg(runner.pid, signal.SIGKILL)  # The runner, its learner and actors.
      runner.wait()
  assert runner.returncode == 128 + signal.SIGTERM, output[-3000:]
  assert (run_dir / 'ckpt' / 'checkpoint').exists(), learner_log.read_text()[-3000:]
  assert not (run_dir / 'finished.json').exists()
  stopped_at = json.loads((run_dir / 'experiment.json').read_text())
  assert stopped_at['gin_bindings'] == ['VTraceConfig.entropy_cost = 0.02', 'VTraceConfig.seed = 5']

  # Run again with a budget it already passed (the command line wins over the run's
  # saved --max_env_frames): it resumes, and stops at once, finished.
  result = run_experiments(*args, '--max_env_frames=1')
  assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
  assert 'resuming entropy_cost=0.02__seed=5' in result.stdout
  assert '| entropy_cost=0.02__seed=5 | finished |' in result.stdout
  log = learner_log.read_text()
  assert log.count('resumed: False') == 1 and log.count('resumed: True') == 1
  finished = json.loads((run_dir / 'finished.json').read_text())
  assert finished['max_env_frames'] == 1 and finished['learner_steps'] >= 1
  resolved = json.loads((run_dir / 'experiment.json').read_text())
  assert resolved['sources']['flag:max_env_frames'] == 'command_line'
  assert resolved['sources']['flag:progress_interval_s'] == 'command_line'
  assert resolved['sources']['flag:return_window'] == 'saved'
  assert resolved['gin_files'] == [GIN, str(run_dir / 'operative_config.gin')]
  assert '--max_env_frames=1\n' in (run_dir / 'flags.txt').read_text()

  # And again: finished, so skipped; no learner starts.
  result = run_experiments(*args, '--max_env_frames=1')
  assert result.returncode == 0, result.stderr[-3000:]
  assert '| entropy_cost=0.02__seed=5 | skipped |' in result.stdout
  assert 'skipped (finished before at' in result.stdout
  assert learner_log.read_text() == log


def test_sigterm_inside_sigterm_raises_runs_the_cleanup(tmp_path):
  # How seed.experiments and the learning_curve suite stop their learner and actors when
  # they are sent SIGTERM (Python's default would leave them running).
  marker = tmp_path / 'cleaned'
  script = ('import sys, time\n'
            'from seed.process.local_processes import sigterm_raises\n'
            'with sigterm_raises():\n'
            '  try:\n'
            '    print("ready", flush=True)\n'
            '    time.sleep(60)\n'
            '  finally:\n'
            '    open(sys.argv[1], "w").write("stopped")\n')
  child = subprocess.Popen([sys.executable, '-c', script, str(marker)], stdout=subprocess.PIPE,
                           text=True, env=_env(), cwd=REPO)
  try:
    assert child.stdout.readline().strip() == 'ready'
    child.send_signal(signal.SIGTERM)
    assert child.wait(timeout=30) == 128 + signal.SIGTERM
  finally:
    if child.poll() is None:
      child.kill()
      child.wait()
  assert marker.read_text() == 'stopped'
