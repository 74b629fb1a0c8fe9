"""--seed makes a run repeat where the environment allows: with --lockstep and one actor
stepping all its envs in one request, two runs of the same config and seed train on the
same batches and log the same losses, step for step; another seed does not."""
import csv
import os

import pytest

from tests.processes import Run

pytestmark = pytest.mark.timeout(600)

# gin/toy/vtrace.gin on CartPole: 4 envs x 20-step unrolls; a batch every 4 rounds.
TRAIN_STEPS = 6
MAX_ENV_FRAMES = (TRAIN_STEPS + 2) * 16 * 21


def _run(tmp_path, name, seed):
  with Run(tmp_path / name, 'gin/toy/vtrace.gin',
           learner_flags=[f'--seed={seed}', '--lockstep', '--log_train_steps',
                          f'--max_env_frames={MAX_ENV_FRAMES}']) as run:
    run.start_learner()
    run.start_actors(1, 4, extra_flags=[f'--seed={seed}', '--num_splits=1'])
    assert run.wait_learner(timeout_s=300) == 0, run.learner_log()
  with open(os.path.join(run.logdir, 'train_steps.csv')) as f:
    steps = list(csv.reader(f))
  with open(os.path.join(run.logdir, 'episodes.csv')) as f:
    # Frames, return, length (not wall time) of the episodes that ended before the
    # budget: once the learner stops, acting no longer waits for training.
    episodes = [row[:3] for row in list(csv.reader(f))[1:] if int(row[0]) < MAX_ENV_FRAMES]
  return steps, episodes


def test_same_seed_same_losses_step_for_step_and_another_seed_differs(tmp_path):
  first, first_episodes = _run(tmp_path, 'a', seed=7)
  again, again_episodes = _run(tmp_path, 'b', seed=7)
  other, _ = _run(tmp_path, 'c', seed=8)
  header = first[0]
  assert header[0] == 'learner_steps' and 'total_loss' in header
  assert len(first) > TRAIN_STEPS and len(again) > TRAIN_STEPS
  # Every logged number of the first train steps, to the last bit (repr of the float).
  assert first[1:TRAIN_STEPS + 1] == again[1:TRAIN_STEPS + 1]
  common = min(len(first_episodes), len(again_episodes))
  assert common > 10 and first_episodes[:common] == again_episodes[:common]
  total = header.index('total_loss')
  assert [row[total] for row in first[1:4]] != [row[total] for row in other[1:4]]


def test_lockstep_needs_the_queue_alone():
  from seed.learner import runtime as learner_runtime  # pylint: disable=g-import-not-at-top
  mixture = ('[{"kind": "queue", "capacity": 1, "sample_ratio": 0.5}, '
             '{"kind": "uniform", "capacity": 100, "sample_ratio": 0.5}]')
  options = learner_runtime.LearnerOptions(logdir='unused', lockstep=True,
                                           replay_parameters=mixture)
  with pytest.raises(ValueError, match=r'--lockstep needs the queue alone as the replay '
                     r'mixture, got queue, uniform'):
    learner_runtime._replay_mixture(None, options, None)  # pylint: disable=protected-access
