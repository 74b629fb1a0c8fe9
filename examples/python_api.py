"""seed from Python, notebook style: each `# %%` cell runs as a notebook cell would.

  python examples/python_api.py          (tests/system/test_api.py runs it as it is)

Trains V-trace on Catch for 8,000 frames with a learner and 2 actor processes, shows
the progress while it trains, then evaluates the final checkpoint.
"""
# %% Start a run: learner + 2 actors x 4 envs, the processes ./run_local.sh starts.
import time

import seed

run = seed.train(env='toy', agent='vtrace', num_actors=2, num_envs=4,
                 gin_bindings=["EnvConfig.name='Catch'"], logdir='runs/catch_api',
                 max_env_frames=8_000, seed=0)

# %% Watch it train (run.stop() would checkpoint and stop it early).
while run.running:
  progress = run.progress()
  if progress:
    print(f'{progress.env_frames:>7,} frames, {progress.learner_steps} learner steps, '
          f'{progress.env_frames_per_s:,.0f} frames/s')
  time.sleep(2)
print('learner exit code:', run.wait())

# %% What it learned: the last 100 training episodes, and the checkpoint.
episodes = run.episodes()
last = [e.episode_return for e in episodes[-100:]]
print(f'{len(episodes)} episodes; mean return of the last {len(last)}: '
      f'{sum(last) / len(last):.2f}; checkpoint {run.checkpoint}')

# %% Evaluate the checkpoint: 10 episodes with its greedy policy.
report = seed.evaluate(run.logdir, episodes=10, policy='greedy')
print(f'evaluation of {report.checkpoint}: mean return {report.mean_return:.2f} '
      f'(std {report.std_return:.2f}) over {len(report.returns)} episodes')
