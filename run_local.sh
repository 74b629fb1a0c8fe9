#!/usr/bin/env bash
# Trains locally: one learner, NUM_ACTORS actor processes with ENVS_PER_ACTOR
# envs each, and TensorBoard on localhost:6006.
#
#   ./run_local.sh ENV AGENT NUM_ACTORS ENVS_PER_ACTOR [extra learner flags]
#   ./run_local.sh toy vtrace 2 4
#   ./run_local.sh atari vtrace 2 4 --gin_bindings="EnvConfig.name='atari:Breakout'"
#   ./run_local.sh mujoco sac 2 1        # HalfCheetah-v5; also ppo (e.g. 4 8) and ddpg
#   ./run_local.sh dmc sac 1 1           # DM Control cheetah-run
#   ./run_local.sh football vtrace 2 4   # academy_empty_goal_close; actors in .venv-football
#
# The config is gin/ENV/AGENT.gin. Extra flags go to the learner; --gin_file and
# --gin_bindings go to the actors too. The run directory is runs/ENV_AGENT
# (--logdir=DIR to change it); a checkpoint found there is resumed. Ctrl-C stops
# everything; the learner writes a checkpoint first.
# Environment: SEED_PORT (learner port, default 8686), SEED_TENSORBOARD_PORT
# (default 6006; 0 starts no TensorBoard), SEED_EVAL_ACTORS (evaluation actors
# with one env each, logging eval/episode_return; default 0).
set -euo pipefail
cd "$(dirname "$0")"

valid_envs() { (cd gin && ls -d */ | tr -d / | tr '\n' ' '); }
valid_agents() { (cd "gin/$1" && ls ./*.gin | sed 's|./||; s|.gin$||' | tr '\n' ' '); }

if [ $# -lt 4 ]; then
  echo "usage: $0 ENV AGENT NUM_ACTORS ENVS_PER_ACTOR [extra learner flags]" >&2
  echo "  ENV: $(valid_envs)" >&2
  exit 2
fi
ENV_NAME="$1"; AGENT="$2"; NUM_ACTORS="$3"; ENVS_PER_ACTOR="$4"; shift 4
if [ ! -d "gin/$ENV_NAME" ]; then
  echo "unknown env '$ENV_NAME'; valid envs: $(valid_envs)" >&2; exit 2
fi
if [ ! -f "gin/$ENV_NAME/$AGENT.gin" ]; then
  echo "unknown agent '$AGENT' for env '$ENV_NAME'; valid agents: $(valid_agents "$ENV_NAME")" >&2
  exit 2
fi
for n in "$NUM_ACTORS" "$ENVS_PER_ACTOR"; do
  if ! [[ "$n" =~ ^[1-9][0-9]*$ ]]; then
    echo "NUM_ACTORS and ENVS_PER_ACTOR must be positive integers, got '$n'" >&2; exit 2
  fi
done

LOGDIR="runs/${ENV_NAME}_${AGENT}"
PORT="${SEED_PORT:-8686}"
ACTOR_FLAGS=()
for arg in "$@"; do
  case "$arg" in
    --logdir=*) LOGDIR="${arg#--logdir=}" ;;
    --server_address=*) PORT="${arg##*:}" ;;
    # --seed also seeds the actors' envs (env i of actor a: seed + 1000·a + i); --env
    # names the env both sides must build (the learner refuses actors of another).
    --gin_file=*|--gin_bindings=*|--seed=*|--env=*) ACTOR_FLAGS+=("$arg") ;;
  esac
done

source scripts/venv.sh
ensure_venv
# Football actors run in a venv of their own (gfootball needs the old gym API), built
# by scripts/install_football.sh on first use; the learner stays in this one.
ACTOR_PYTHON=python
if [ "$ENV_NAME" = football ]; then
  ACTOR_PYTHON="${SEED_FOOTBALL_VENV:-$(pwd)/.venv-football}/bin/python"
  if ! "$ACTOR_PYTHON" -c "import gfootball.env" 2>/dev/null; then
    scripts/install_football.sh
  fi
fi
export TF_CPP_MIN_LOG_LEVEL="${TF_CPP_MIN_LOG_LEVEL:-2}"

mkdir -p "$LOGDIR/logs"
rm -f "$LOGDIR/port"
GIN="gin/$ENV_NAME/$AGENT.gin"
PIDS=()

cleanup() {
  trap - INT TERM EXIT
  echo "seed: stopping (the learner checkpoints first)..."
  for pid in "${PIDS[@]:1}"; do kill -TERM "$pid" 2>/dev/null || true; done
  # SIGTERM, not SIGINT: background jobs of a script start with SIGINT ignored,
  # so a learner still warming up would not hear it. It checkpoints on either.
  kill -TERM "${PIDS[0]}" 2>/dev/null || true
  wait "${PIDS[0]}" 2>/dev/null || true
  for pid in "${PIDS[@]:1}"; do wait "$pid" 2>/dev/null || true; done
  # The log pipeline ends by itself once the learner has: tail --pid prints the
  # learner's last lines (the checkpoint) first. Killing it at once could lose them.
  if [ -n "${TAIL_PID:-}" ]; then
    for _ in {1..50}; do kill -0 "$TAIL_PID" 2>/dev/null || break; sleep 0.1; done
    kill "$TAIL_PID" 2>/dev/null || true
  fi
  echo "seed: stopped. Run directory: $LOGDIR"
}
# On a signal: clean up, then end here (not where the signal interrupted us).
trap 'cleanup; exit 130' INT TERM
trap cleanup EXIT

echo "seed: $ENV_NAME/$AGENT with $NUM_ACTORS actors x $ENVS_PER_ACTOR envs; run directory $LOGDIR"
python -m seed.learner.main --logdir="$LOGDIR" --agent="$AGENT" --gin_file="$GIN" \
  --server_address="localhost:$PORT" "$@" > "$LOGDIR/logs/learner.log" 2>&1 &
PIDS+=($!)
# --pid: tail ends with the learner (killing grep alone would leave tail behind).
tail --pid="${PIDS[0]}" -n +1 -F "$LOGDIR/logs/learner.log" 2>/dev/null | grep --line-buffered -vE \
  "^(WARNING: All log messages before absl|I0000 00:00)|oneDNN|cpu_feature_guard|rebuild TensorFlow" &
TAIL_PID=$!

# Actors connect once the learner has warmed up and bound its port.
until [ -f "$LOGDIR/port" ]; do
  if ! kill -0 "${PIDS[0]}" 2>/dev/null; then
    echo "seed: the learner exited during start-up; see $LOGDIR/logs/learner.log" >&2
    exit 1
  fi
  sleep 0.5
done
for ((i = 0; i < NUM_ACTORS; i++)); do
  "$ACTOR_PYTHON" -m seed.actors.main --actor_id="$i" --num_envs="$ENVS_PER_ACTOR" --gin_file="$GIN" \
    --server_address="localhost:$PORT" "${ACTOR_FLAGS[@]}" > "$LOGDIR/logs/actor_$i.log" 2>&1 &
  PIDS+=($!)
done
for ((i = NUM_ACTORS; i < NUM_ACTORS + ${SEED_EVAL_ACTORS:-0}; i++)); do
  "$ACTOR_PYTHON" -m seed.actors.main --actor_id="$i" --num_envs=1 --eval --gin_file="$GIN" \
    --server_address="localhost:$PORT" "${ACTOR_FLAGS[@]}" > "$LOGDIR/logs/actor_$i.log" 2>&1 &
  PIDS+=($!)
done
TB_PORT="${SEED_TENSORBOARD_PORT:-6006}"
if [ "$TB_PORT" != "0" ] && command -v tensorboard >/dev/null; then
  tensorboard --logdir "$LOGDIR" --host localhost --port "$TB_PORT" \
    > "$LOGDIR/logs/tensorboard.log" 2>&1 &
  PIDS+=($!)
  echo "seed: TensorBoard at http://localhost:$TB_PORT"
fi
# Runs until the learner stops (Ctrl-C, or a stop condition such as --target_return).
wait "${PIDS[0]}" || true
