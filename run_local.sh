#!/usr/bin/env bash
# Trains locally: one learner, NUM_ACTORS actor processes with ENVS_PER_ACTOR
# envs each, and TensorBoard on localhost:6006. The same as `seed train`, after
# making the virtual environment on first use (and Football's, for football).
#
#   ./run_local.sh ENV AGENT NUM_ACTORS ENVS_PER_ACTOR [extra learner flags]
#   ./run_local.sh toy vtrace 2 4
#   ./run_local.sh atari vtrace 2 4 --gin_bindings="EnvConfig.name='atari:Breakout'"
#   ./run_local.sh mujoco sac 2 1        # HalfCheetah-v5; also ppo (e.g. 4 8) and ddpg
#   ./run_local.sh dmc sac 1 1           # DM Control cheetah-run
#   ./run_local.sh football vtrace 2 4   # academy_empty_goal_close; actors in .venv-football
#
# `seed train --help` (or ./run_local.sh --help) says the rest: the config, the run
# directory, what goes to the actors, Ctrl-C, the SEED_* environment variables, and
# every learner and actor flag.
set -euo pipefail
cd "$(dirname "$0")"

source scripts/venv.sh
ensure_venv
# Football's actors get a venv of their own from `seed train` on first use.
exec python -m seed train "$@"
