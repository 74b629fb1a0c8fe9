"""The Python API (seed/api.py) as a notebook would use it: train a small run with
learner and actor processes, watch its progress, stop it, resume it, evaluate it."""
import os
import subprocess
import sys
import time

import pytest

import seed
from seed import api
from tests.processes import REPO, _env

pytestmark = pytest.mark.timeout(600)


def test_importing_seed_and_its_api_loads_no_tensorflow():
  code = ('import sys, seed; seed.train; seed.evaluate; import seed.api; '
          'assert "tensorflow" not in sys.modules, "tensorflow imported"; '
          'assert callable(seed.evaluate) and callable(seed.train)')
  subprocess.run([sys.executable, '-c', code], check=True, env=_env(), cwd=REPO)


def test_unknown_configs_are_named_before_anything_starts(tmp_path):
  with pytest.raises(ValueError, match=r"no config gin/atari/reactorr.gin; env families "
                     r"with a 'reactorr' config: none"):
    seed.train('atari', 'reactorr', logdir=str(tmp_path))
  with pytest.raises(ValueError, match=r"no config gin/dmc/vtrace.gin; env families with a "
                     r"'vtrace' config: atari, classic, dmlab, football, toy"):
    seed.train('dmc', 'vtrace', logdir=str(tmp_path))
  with pytest.raises(ValueError, match=r'num_actors=0, num_envs=4; both must be >= 1'):
    seed.train('toy', 'vtrace', num_actors=0, logdir=str(tmp_path))
  # A learner that refuses its settings: the reason, from its log.
  with pytest.raises(RuntimeError, match=r"exited with 2 before serving: .*learning_rat"):
    seed.train('toy', 'vtrace', logdir=str(tmp_path / 'bad'),
               gin_bindings=['VTraceConfig.learning_rat = 0.1'])


def test_train_watch_stop_resume_and_evaluate(tmp_path):
  # The README's example, on Catch: a run with no budget stopped by stop(), resumed
  # for 2,000 more frames, then evaluated.
  logdir = str(tmp_path / 'catch')
  run = seed.train('toy', 'vtrace', num_actors=1, num_envs=4, logdir=logdir,
                   gin_bindings=["EnvConfig.name='Catch'"],
                   learner_flags=['--progress_interval_s=0.5'])
  with run:
    while run.running and not (run.progress() and run.progress().env_frames >= 500):
      time.sleep(0.2)
    assert run.stop() == 0 and not run.running  # SIGTERM: a checkpoint, then exit 0
  first = run.checkpoint
  assert first and os.path.exists(first + '.index')
  frames_at_stop = run.progress().env_frames

  budget = frames_at_stop + 2000
  resumed = seed.train('toy', 'vtrace', num_actors=1, num_envs=4, logdir=logdir,
                       gin_bindings=["EnvConfig.name='Catch'"], max_env_frames=budget)
  with resumed:
    assert resumed.wait(timeout_s=300) == 0
  assert resumed.progress().env_frames >= budget
  assert resumed.checkpoint != first
  episodes = resumed.episodes()
  assert len(episodes) > 100 and {e.episode_return for e in episodes} <= {-1.0, 1.0}
  assert episodes[-1].env_frames >= frames_at_stop

  report = seed.evaluate(logdir, episodes=5, policy='sample', seed=3)
  assert isinstance(report, api.EvaluationReport)
  assert report.checkpoint == resumed.checkpoint and report.policy == 'sample'
  assert len(report.returns) == 5 and set(report.returns) <= {-1.0, 1.0}
  assert report.mean_return == pytest.approx(sum(report.returns) / 5)
  assert os.path.exists(report.report_path)
  with pytest.raises(ValueError, match=r"unknown --policy 'best'; accepted: greedy, sample"):
    seed.evaluate(logdir, policy='best')


def test_the_notebook_example_runs(tmp_path):
  # examples/python_api.py as a user runs it, from a directory of their own.
  done = subprocess.run([sys.executable, os.path.join(REPO, 'examples', 'python_api.py')],
                        capture_output=True, text=True, env=_env(), cwd=tmp_path, timeout=500)
  assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
  assert 'learner exit code: 0' in done.stdout
  assert 'evaluation of ' in done.stdout and 'over 10 episodes' in done.stdout
  assert os.path.isdir(tmp_path / 'runs' / 'catch_api' / 'ckpt')


def test_wait_says_when_every_actor_exits(tmp_path):
  # Actors told to stop after 200 steps leave a learner without a budget nothing to do.
  run = seed.train('toy', 'vtrace', num_actors=1, num_envs=2, logdir=str(tmp_path / 'run'),
                   actor_flags=['--max_steps=200'])
  with pytest.raises(RuntimeError, match=r'every actor exited \(codes 0\) while the learner '
                     r'still ran; see .*/logs/actor_\*\.log'):
    run.wait(timeout_s=300)
  assert not run.running and run.checkpoint  # stopped, with its checkpoint
