"""The experiment runner: several experiments, in sequence, each in its own run directory.

  python -m seed.experiments --root=runs/sweep --gin_file=gin/toy/vtrace.gin \\
      --grid="VTraceConfig.entropy_cost=0.01,0.001" --seeds=0,1 --max_env_frames=200000
  python -m seed.experiments --root=runs/sweep --experiments=sweep.json

The grid is every combination of the --grid axes (gin bindings) times every seed; an
experiments file lists entries, each of which may have its own grid and seeds
(`seed/experiments/plan.py`). Each experiment runs in ROOT/<name>, the name made of
its grid point and seed (`entropy_cost=0.01__seed=0`), with a learner and
--num_actors actor processes as run_local.sh starts them, until the learner stops
at max_env_frames. A run directory whose `finished.json` (written by the learner when
it reached its --max_env_frames) shows at least this budget is skipped; any other is
started, or resumed from its checkpoint (the learner resumes by itself). Every run
directory holds its resolved config: operative_config.gin and flags.txt (the learner
writes them), and experiment.json (the runner's settings, and where each came from).

Argument priority, setting by setting (`seed/experiments/layers.py`):

  command line  >  runner overrides  >  the run directory's saved config  >  defaults

- command line: --agent, --gin_bindings, --learner_flag, --max_env_frames,
  --num_actors, --num_envs given to this command: they apply to every experiment.
- runner overrides: each experiment's own settings: its grid point's bindings, its
  seed (bound as the learner's and actors' --seed and the agent config's seed), and
  what its entry in an experiments file sets.
- saved config: a run directory that holds operative_config.gin and flags.txt (a run
  started before) keeps those values when resumed.
- defaults: the values in the gin files, the learner's flag defaults, agent vtrace,
  seed 0, 1 actor with 4 envs.

Gin files (--gin_file, or an entry's gin_file) hold default values whichever layer
names them: a resumed run's saved config wins over them; bind a value to change it.
Every experiment's gin config is checked first, as strictly as its learner will: a
binding gin rejects stops the command (exit 2) naming it and what it accepts. Exit
code 0 when every experiment is finished, 1 when one failed or stopped early.
"""
