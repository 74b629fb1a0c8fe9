"""--seed makes a run repeat where the environment allows: with --lockstep and one actor
stepping all its envs in one request, two runs of the same config and seed train on the
same batches and log the same losses, step for step; another seed does not. So for every
input kind: the queue (V-trace), replay at a ratio (R2D2, SAC), ACER's fresh batches then
replayed ones."""
import csv
import os

import pytest

from tests.processes import Run

pytestmark = pytest.mark.timeout(600)

# gin/toy/vtrace.gin on CartPole: 4 envs x 20-step unrolls; a batch every 4 rounds.
TRAIN_STEPS = 6
MAX_ENV_FRAMES = (TRAIN_STEPS + 2) * 16 * 21


def _run(tmp_path, name, seed, gin_file='gin/toy/vtrace.gin', agent='vtrace',
         max_env_frames=MAX_ENV_FRAMES):
  with Run(tmp_path / name, gin_file, agent=agent,
           learner_flags=[f'--seed={seed}', '--lockstep', '--log_train_steps',
                          f'--max_env_frames={max_env_frames}']) as run:
    run.start_learner()
    run.start_actors(1, 4, extra_flags=[f'--seed={seed}', '--num_splits=1'])
    assert run.wait_learner(timeout_s=300) == 0, run.learner_log()
  with open(os.path.join(run.logdir, 'train_steps.csv')) as f:
    steps = list(csv.reader(f))
  with open(os.path.join(run.logdir, 'episodes.csv')) as f:
    # Frames, return, length (not wall time) of the episodes that ended before the
    # budget: once the learner stops, acting no longer waits for training.
    episodes = [row[:3] for row in list(csv.reader(f))[1:] if int(row[0]) < max_env_frames]
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


# Frames that take each past its warm-up into several train steps: R2D2's 64 unrolls
# of MemoryCue, SAC's 1,000 random steps (then one update per step), ACER's 100 traces
# before replayed batches (16 x 20-step unrolls a fresh batch, then Poisson(4) replayed).
@pytest.mark.parametrize('agent, max_env_frames', [('r2d2', 2_000), ('sac', 1_300),
                                                   ('acer', 3_000)])
def test_an_agent_that_replays_repeats_too(tmp_path, agent, max_env_frames):
  first, first_episodes = _run(tmp_path, 'a', 5, f'gin/toy/{agent}.gin', agent, max_env_frames)
  again, again_episodes = _run(tmp_path, 'b', 5, f'gin/toy/{agent}.gin', agent, max_env_frames)
  # The last steps, as the learner stops at its budget, may be cut at another one.
  common = min(len(first), len(again)) - 1
  assert common > 5, (len(first), len(again))
  assert first[:common] == again[:common]
  episodes = min(len(first_episodes), len(again_episodes))
  assert episodes > 3 and first_episodes[:episodes] == again_episodes[:episodes]
