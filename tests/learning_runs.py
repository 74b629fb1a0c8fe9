"""Learning runs for tests: train a learner with an actor process until a target return,
and find where episodes.csv first reached it (as the learner's own target check does).

Every run is in lockstep (--lockstep, seed.inputs.lockstep): one actor steps all its envs
in one request and each unroll waits until the batches it made ready are trained, so a
run with the same seeds repeats exactly (tests/system/test_seeding.py) and the frames a
test states are the frames it takes, every time.
"""
import numpy as np

from tests.processes import Run

LOCKSTEP_FLAGS = ('--lockstep', '--seed=0')


def train_until(tmp_path, gin_file, target, max_frames, window, num_envs=8, bindings=None,
                agent='vtrace', learner_flags=()):
  with Run(tmp_path / 'run', gin_file, agent=agent, gin_bindings=bindings,
           learner_flags=[f'--target_return={target}', f'--max_env_frames={max_frames}',
                          f'--return_window={window}', *LOCKSTEP_FLAGS, *learner_flags]) as run:
    run.start_learner()
    run.start_actors(1, num_envs, extra_flags=['--seed=0', '--num_splits=1'])
    assert run.wait_learner(timeout_s=840) == 0, run.learner_log()
    episodes = run.episodes()
  return first_solved(episodes, target, window, label=bindings or gin_file)


def first_solved(episodes, target, window, label):
  """(frames, mean) where the mean return of `window` consecutive episodes first
  reached `target`, computed from episodes.csv; (last frame, best mean) if never."""
  frames = np.array([f for f, _ in episodes])
  returns = np.array([r for _, r in episodes])
  # Sum, then divide, as the learner's target check (Metrics.mean_recent_return) does:
  # convolving with ones/window rounds 90 returns of 1 over 100 to 0.8999999999999999,
  # below a target of 0.9 the learner had already counted as reached.
  if len(returns) >= window:
    means = np.lib.stride_tricks.sliding_window_view(returns, window).sum(axis=1) / window
  else:
    means = np.array([])
  solved = np.flatnonzero(means >= target)
  if len(solved):
    i = solved[0]
    result = frames[i + window - 1], means[i]
  else:
    result = frames[-1], means.max() if len(means) else float('nan')
  print(f'{label}: mean return over {window} episodes {result[1]:.2f} at {result[0]} frames '
        f'({len(episodes)} episodes in all)')
  return result
