"""A run that reaches its goal ends everywhere: the learner answers each actor with
Finished, the actors exit 0 by themselves, and a learner started again on the finished
run directory (a Kubernetes restart, a Slurm requeue) trains nothing: it tells actors
that come late that the run is over, then exits 0. An actor without a learner for
--learner_lost_limit_s exits 3; a failed final checkpoint exits 1."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from tests.processes import REPO, Run, _env
from tests.server_harness import LockstepClient, ServerHarness, free_port, hello, step

pytestmark = pytest.mark.timeout(240)

def test_a_finished_service_answers_the_next_step_and_new_hellos_with_finished():
  with ServerHarness() as harness:
    client = LockstepClient(harness.address)
    client.send(hello(num_envs=2))
    assert client.recv().WhichOneof('kind') == 'welcome'
    client.send(step(num_envs=2))
    assert client.recv().WhichOneof('kind') == 'actions'
    harness.call(lambda: harness.service.finish('max_env_frames=10 reached at 12 frames'))
    client.send(step(num_envs=2))
    reply = client.recv()
    assert reply.WhichOneof('kind') == 'finished'
    assert reply.finished.reason == 'max_env_frames=10 reached at 12 frames'
    with pytest.raises(StopIteration):  # Then the stream ends, with status OK.
      client.recv()
    client.close()
    late = LockstepClient(harness.address)
    late.send(hello(num_envs=2, run_id='run-b'))
    assert late.recv().WhichOneof('kind') == 'finished'
    late.close()
    assert harness.table.num_envs == 0  # The late actor was never connected.


def test_actors_exit_when_the_learner_finishes_and_a_restart_tells_late_ones(tmp_path):
  run = Run(tmp_path / 'run', 'gin/toy/vtrace.gin', gin_bindings=["EnvConfig.name='Catch'"],
            learner_flags=['--max_env_frames=4000'])
  with run:
    run.start_learner()
    actors = run.start_actors(num_actors=2, num_envs=2)
    assert run.wait_learner(timeout_s=150) == 0, run.learner_log()
    learner_done = time.monotonic()
    for actor in actors:
      actor.wait(timeout=max(1.0, 30 - (time.monotonic() - learner_done)))
    for actor_id, actor in enumerate(actors):
      log = run.actor_log(actor_id)
      assert actor.returncode == 0, log
      assert 'the learner finished the run (max_env_frames=4000 reached at' in log, log
      assert 'retrying' not in log, log
    finished = json.loads(open(os.path.join(run.logdir, 'finished.json')).read())
    assert finished['max_env_frames'] == 4000 and finished['env_frames'] >= 4000

    # Started again on the finished run with the same goal: nothing to train, but an
    # actor that missed the notice (a re-created pod) is told the run is over.
    run.start_learner(extra_flags=['--finished_notice_s=600'])
    [late] = run.start_actors(num_actors=1, num_envs=2, first_id=5)
    assert late.wait(timeout=120) == 0, run.actor_log(5)
    assert 'the learner finished the run (the run had finished: max_env_frames=4000 reached' in (
        run.actor_log(5)), run.actor_log(5)
    run.learner.send_signal(signal.SIGTERM)  # before its notice period is over
    assert run.learner.wait(timeout=60) == 0, run.learner_log()
    with open(os.path.join(run.logdir, 'logs', 'learner.log')) as f:
      log = f.read()
    assert 'holds a finished run (finished.json, ' in log
    assert 'told 1 actor streams that the run had finished' in log, log[-3000:]
    assert log.count('resumed: ') == 1  # The restart built no learner.
    # With no notice period it exits 0 at once, as before.
    with pytest.raises(RuntimeError, match='learner exited with 0'):
      run.start_learner(extra_flags=['--finished_notice_s=0'])


def test_an_actor_without_a_learner_for_its_limit_exits_3_saying_so(tmp_path):
  # It retried for ever: on Kubernetes its Job never completed and held its CPUs. Set by
  # its variable, as the manifests set it; a learner that never answers is the case of
  # a learner that had gone (both count from the latest message, or the start).
  port = free_port()  # nobody listens there
  actor = subprocess.run(
      [sys.executable, '-m', 'seed.actors.main', '--actor_id=0', '--num_envs=2',
       f'--server_address=localhost:{port}', '--env=Catch',
       f'--gin_file={os.path.join(REPO, "gin/toy/vtrace.gin")}'],
      env=dict(_env(), SEED_LEARNER_LOST_LIMIT_S='3'), cwd=REPO, capture_output=True,
      text=True, timeout=120)
  output = actor.stdout + actor.stderr
  assert actor.returncode == 3, output[-3000:]
  assert f'no learner at localhost:{port} for ' in output, output[-3000:]
  assert 'more than --learner_lost_limit_s=3 (last: UNAVAILABLE' in output, output[-3000:]
  assert 'Traceback' not in output


def test_a_final_checkpoint_that_failed_exits_1_also_when_the_watchdog_ends_it(tmp_path):
  # The watchdog exited 0 once the final save had been *attempted*: a run whose last
  # checkpoint failed read as finished, and a Kubernetes Job completed with it.
  run = Run(tmp_path / 'run', 'gin/toy/vtrace.gin', gin_bindings=["EnvConfig.name='Catch'"],
            learner_flags=['--max_env_frames=3000', '--shutdown_limit_s=5'])
  with run:
    run.start_learner()
    # The final checkpoint is ckpt-1 (none before it): a file where its folder goes
    # makes TensorFlow's save fail (FAILED_PRECONDITION: Not a directory).
    open(os.path.join(run.logdir, 'ckpt', 'ckpt-1_temp'), 'w').close()
    # An actor that stops answering keeps its stream open: the finished learner waits
    # up to 10 s for it, past its 5 s limit, so the watchdog ends the shutdown.
    [hung] = run.start_actors(num_actors=1, num_envs=2, first_id=1)
    deadline = time.monotonic() + 120
    while 'connected to learner' not in run.actor_log(1):
      assert time.monotonic() < deadline and hung.poll() is None, run.actor_log(1)
      time.sleep(0.2)
    os.kill(hung.pid, signal.SIGSTOP)
    try:
      run.start_actors(num_actors=1, num_envs=2, first_id=0)
      code = run.wait_learner(timeout_s=180)
    finally:
      os.kill(hung.pid, signal.SIGCONT)
    log = run.learner_log(tail_chars=None)
    assert code == 1, log[-4000:]
    assert 'could not write checkpoint 1' in log, log[-4000:]
    assert 'shutdown still not finished after 5 s' in log, log[-4000:]
    assert 'final checkpoint: failed' in log, log[-4000:]
    assert not os.path.exists(os.path.join(run.logdir, 'finished.json'))  # it trains on


def test_a_tuning_trial_whose_report_fails_mid_run_stops_and_exits_1(tmp_path, monkeypatch):
  metric_file = tmp_path / 'hypertune' / 'output.metrics'
  monkeypatch.setenv('CLOUD_ML_HP_METRIC_FILE', str(metric_file))
  run = Run(tmp_path / 'run', 'gin/toy/vtrace.gin', gin_bindings=["EnvConfig.name='Catch'"],
            learner_flags=['--hypertune_metric=episode_return', '--return_window=5'])
  with run:
    run.start_learner()
    run.start_actors(num_actors=1, num_envs=2)
    deadline = time.monotonic() + 120
    while not (metric_file.exists() and metric_file.read_text()):
      assert time.monotonic() < deadline and run.learner.poll() is None, run.learner_log()
      time.sleep(0.5)
    metric_file.unlink()
    metric_file.mkdir()  # the next report cannot be written
    assert run.wait_learner(timeout_s=120) == 1, run.learner_log()
    log = run.learner_log(tail_chars=None)
    assert 'cannot report episode_return to the tuning service' in log
    assert 'checkpoint written' in log  # it stops as a signal would stop it
    assert not os.path.exists(os.path.join(run.logdir, 'finished.json'))


def test_a_learner_stopped_before_its_goal_exits_with_stopped_exit_code(tmp_path):
  # As the Kubernetes Job runs it: a preemption (SIGTERM) before --max_env_frames must
  # fail the pod, so the Job starts the learner again instead of completing.
  run = Run(tmp_path / 'run', 'gin/toy/vtrace.gin', gin_bindings=["EnvConfig.name='Catch'"],
            learner_flags=['--max_env_frames=100000000', '--stopped_exit_code=75'])
  with run:
    run.start_learner()
    run.start_actors(num_actors=1, num_envs=2)
    deadline = time.monotonic() + 120
    while not os.path.exists(os.path.join(run.logdir, 'episodes.csv')):
      assert time.monotonic() < deadline, run.learner_log()
      time.sleep(0.5)
    run.learner.send_signal(signal.SIGTERM)
    assert run.learner.wait(timeout=60) == 75, run.learner_log()
    assert 'checkpoint' in run.learner_log()
    assert os.path.exists(os.path.join(run.logdir, 'ckpt', 'checkpoint'))
    assert not os.path.exists(os.path.join(run.logdir, 'finished.json'))


@pytest.mark.parametrize('flag, message', [
    ('--stopped_exit_code=300', '--stopped_exit_code=300; expected 0-255'),
    ('--shutdown_limit_s=0', '--shutdown_limit_s=0.0; expected seconds > 0')])
def test_shutdown_settings_out_of_range_are_refused(tmp_path, flag, message):
  run = Run(tmp_path / 'run', 'gin/toy/vtrace.gin', learner_flags=[flag])
  with run:
    with pytest.raises(RuntimeError, match='learner exited with 2'):
      run.start_learner()
    assert message in run.learner_log()


def test_an_actor_keeps_its_heartbeat_fresh_while_it_retries_a_lost_learner(tmp_path):
  # The Kubernetes liveness probe's signal: fresh while the actor runs (waiting for a
  # learner is not hanging), touched from the actor's own event loop.
  port = free_port()  # nobody listens there
  heartbeat = tmp_path / 'heartbeat'
  actor = subprocess.Popen(
      [sys.executable, '-m', 'seed.actors.main', '--actor_id=0', '--num_envs=2',
       f'--server_address=localhost:{port}', '--env=Catch',
       f'--gin_file={os.path.join(REPO, "gin/toy/vtrace.gin")}', f'--heartbeat_file={heartbeat}'],
      env=_env(), cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
  try:
    deadline = time.monotonic() + 60
    while not heartbeat.exists():
      assert time.monotonic() < deadline and actor.poll() is None
      time.sleep(0.2)
    first = heartbeat.stat().st_mtime
    time.sleep(12)  # past one beat (10 s), with nobody listening at that port
    assert actor.poll() is None
    assert heartbeat.stat().st_mtime > first
  finally:
    actor.send_signal(signal.SIGTERM)
    output = actor.communicate(timeout=60)[0]
  assert 'retrying' in output, output[-2000:]
