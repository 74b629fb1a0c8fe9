#!/usr/bin/env bash
# Submits one training run to Slurm: the learner on the first node of the
# allocation, NUM_ACTORS actors (ENVS_PER_ACTOR envs each) across all its nodes.
# Same arguments as ./run_local.sh; checks them all before anything is submitted.
#
#   slurm/submit.sh ENV AGENT NUM_ACTORS ENVS_PER_ACTOR [options] [learner/actor flags]
#   slurm/submit.sh toy vtrace 2 4 --env=Catch --target_return=0.9 --return_window=100
#   slurm/submit.sh atari vtrace 64 4 --nodes=4 --cpus_per_task=2 --time=2-00:00:00 \
#       --env=atari:Breakout --run_dir=/shared/runs/breakout --sbatch=--partition=cpu
#
# Options (--NAME=VALUE or --NAME VALUE):
#   --nodes=N              nodes to spread over (default 1; more than one: TLS + token);
#                          with --het, the actors' nodes (the learner has one of its own)
#   --cpus_per_task=C      CPUs for the learner and for each actor (default 1)
#   --learner_cpus=C, --actor_cpus=C   the two apart (default --cpus_per_task each)
#   --learner_gpus=G       GPUs for the learner's step only (default 0); the actors' step
#                          takes none (srun would give it every GPU of the job)
#   --het                  a heterogeneous job: the learner (1 node, its CPUs and GPUs,
#                          --learner_sbatch options) and the actors (--nodes, their CPUs)
#                          as two components, so they can come from different partitions;
#                          needed for learner and actor CPUs or GPUs that differ across
#                          nodes. Slurm puts the two components on different nodes.
#   --learner_sbatch=OPTION   passed to sbatch for the learner's component (with --het)
#   --time=LIMIT           the job's time limit, as sbatch --time takes it
#   --run_dir=DIR          run directory on a file system every node sees (default
#                          runs/ENV_AGENT under the repository); resumed if it has a checkpoint
#   --port=P               the learner's port (default 20000 + job id % 10000)
#   --runtime=R            venv (default: the repository's .venv), podman or apptainer
#                          (the images of docker/; default from SEED_SLURM_RUNTIME)
#   --learner_image=REF, --actor_image=REF   images for podman/apptainer
#   --stop_before_limit_s=S   SIGUSR1 this long before the time limit: the learner
#                          checkpoints and the job requeues itself (default 300)
#   --job_name=NAME        (default seed-ENV-AGENT)
#   --sbatch=OPTION        passed to sbatch as it is (repeat it), e.g. --sbatch=--mem=16G;
#                          with --het, to both components (--learner_sbatch comes after)
#   --dry_run              print the sbatch command and the SEED_* settings; submit nothing
#                          (needs neither sbatch nor the venv: any python3 checks the flags)
# Any other --FLAG=VALUE is a flag of the learner or the actors (seed.learner.main,
# seed.actors.main) or of seed-job, and reaches them as SEED_FLAG in the job's
# environment; each process reads its own. SEED_* variables set here pass on too
# (SEED_TLS=always: TLS even on one node).
set -euo pipefail
REPO="$(cd "$(dirname "$0")/.." && pwd)"

die() { echo "slurm/submit.sh: $*" >&2; exit 2; }
valid_envs() { (cd "$REPO/gin" && ls -d */ | tr -d / | tr '\n' ' '); }
valid_agents() { (cd "$REPO/gin/$1" && ls ./*.gin | sed 's|./||; s|.gin$||' | tr '\n' ' '); }
positive() { [[ "$1" =~ ^[1-9][0-9]*$ ]]; }

if [ $# -lt 4 ]; then
  echo "usage: slurm/submit.sh ENV AGENT NUM_ACTORS ENVS_PER_ACTOR [options] [flags]" >&2
  echo "  ENV: $(valid_envs)" >&2
  exit 2
fi
ENV_NAME="$1"; AGENT="$2"; NUM_ACTORS="$3"; ENVS_PER_ACTOR="$4"; shift 4
[ -d "$REPO/gin/$ENV_NAME" ] || die "unknown env '$ENV_NAME'; valid envs: $(valid_envs)"
[ -f "$REPO/gin/$ENV_NAME/$AGENT.gin" ] ||
  die "unknown agent '$AGENT' for env '$ENV_NAME'; valid agents: $(valid_agents "$ENV_NAME")"
positive "$NUM_ACTORS" || die "NUM_ACTORS must be a positive integer, got '$NUM_ACTORS'"
positive "$ENVS_PER_ACTOR" || die "ENVS_PER_ACTOR must be a positive integer, got '$ENVS_PER_ACTOR'"

NODES=1 CPUS=1 TIME_LIMIT='' RUN_DIR='' PORT='' RUNTIME="${SEED_SLURM_RUNTIME:-venv}"
LEARNER_IMAGE='' ACTOR_IMAGE='' STOP_BEFORE_S=300 JOB_NAME="seed-$ENV_NAME-$AGENT" DRY_RUN=0
LEARNER_CPUS='' ACTOR_CPUS='' LEARNER_GPUS=0 HET=0
SBATCH_EXTRA=() LEARNER_SBATCH=() FLAGS=()
OWN_OPTIONS='nodes cpus_per_task learner_cpus actor_cpus learner_gpus time run_dir port runtime
  learner_image actor_image stop_before_limit_s job_name sbatch learner_sbatch'
while [ $# -gt 0 ]; do
  arg="$1"; shift
  name="${arg%%=*}"; name="${name#--}"
  if [[ "$arg" != --* ]]; then
    die "unexpected argument '$arg'; options and flags look like --NAME=VALUE"
  fi
  if [ "$arg" = --dry_run ]; then DRY_RUN=1; continue; fi
  if [ "$arg" = --het ]; then HET=1; continue; fi
  if [[ " $(echo $OWN_OPTIONS) " != *" $name "* ]]; then FLAGS+=("$arg"); continue; fi
  if [[ "$arg" == *=* ]]; then value="${arg#*=}"
  elif [ $# -gt 0 ] && [[ "$1" != --* ]]; then value="$1"; shift
  else die "--$name needs a value"; fi
  case "$name" in
    nodes) NODES="$value" ;;
    cpus_per_task) CPUS="$value" ;;
    learner_cpus) LEARNER_CPUS="$value" ;;
    actor_cpus) ACTOR_CPUS="$value" ;;
    learner_gpus) LEARNER_GPUS="$value" ;;
    time) TIME_LIMIT="$value" ;;
    run_dir) RUN_DIR="$value" ;;
    port) PORT="$value" ;;
    runtime) RUNTIME="$value" ;;
    learner_image) LEARNER_IMAGE="$value" ;;
    actor_image) ACTOR_IMAGE="$value" ;;
    stop_before_limit_s) STOP_BEFORE_S="$value" ;;
    job_name) JOB_NAME="$value" ;;
    sbatch) SBATCH_EXTRA+=("$value") ;;
    learner_sbatch) LEARNER_SBATCH+=("$value") ;;
  esac
done

positive "$NODES" || die "--nodes must be a positive integer, got '$NODES'"
if [ "$HET" = 1 ]; then
  (( NODES <= NUM_ACTORS )) ||
    die "--nodes=$NODES is more than the $NUM_ACTORS actors to place (with --het, --nodes counts the actors' nodes)"
else
  # One task slot for the learner plus one per actor, at least one on every node.
  (( NODES <= NUM_ACTORS + 1 )) ||
    die "--nodes=$NODES is more than the $((NUM_ACTORS + 1)) tasks (learner + $NUM_ACTORS actors) to place; use at most $((NUM_ACTORS + 1)) nodes or more actors"
fi
positive "$CPUS" || die "--cpus_per_task must be a positive integer, got '$CPUS'"
LEARNER_CPUS="${LEARNER_CPUS:-$CPUS}" ACTOR_CPUS="${ACTOR_CPUS:-$CPUS}"
positive "$LEARNER_CPUS" || die "--learner_cpus must be a positive integer, got '$LEARNER_CPUS'"
positive "$ACTOR_CPUS" || die "--actor_cpus must be a positive integer, got '$ACTOR_CPUS'"
[[ "$LEARNER_GPUS" =~ ^[0-9]+$ ]] ||
  die "--learner_gpus must be a whole number, got '$LEARNER_GPUS'"
if [ "$HET" = 0 ] && (( NODES > 1 )) && { (( LEARNER_CPUS != ACTOR_CPUS )) || (( LEARNER_GPUS > 0 )); }; then
  # One allocation asks the same of every node: each would reserve the learner's share.
  die "--nodes=$NODES with --learner_cpus/--actor_cpus that differ or --learner_gpus needs --het (the learner as a job component of its own)"
fi
[ "$HET" = 1 ] || [ ${#LEARNER_SBATCH[@]} -eq 0 ] ||
  die "--learner_sbatch is for --het jobs (the learner's component); use --sbatch"
if [ -n "$PORT" ] && ! { positive "$PORT" && (( PORT < 65536 )); }; then
  die "--port must be 1-65535, got '$PORT'"
fi
[[ "$STOP_BEFORE_S" =~ ^[0-9]+$ ]] ||
  die "--stop_before_limit_s must be a whole number of seconds, got '$STOP_BEFORE_S'"
case "$RUNTIME" in
  venv) ;;
  podman|apptainer)
    [ -n "$LEARNER_IMAGE" ] && [ -n "$ACTOR_IMAGE" ] ||
      die "--runtime=$RUNTIME needs --learner_image and --actor_image (images built from docker/)"
    command -v "$RUNTIME" >/dev/null || die "--runtime=$RUNTIME: '$RUNTIME' is not installed here" ;;
  *) die "unknown --runtime '$RUNTIME'; accepted: venv, podman, apptainer" ;;
esac
[ -n "$JOB_NAME" ] || die "--job_name is empty"
if [ "$DRY_RUN" = 0 ]; then
  command -v sbatch >/dev/null || die "sbatch is not installed here (submit from a Slurm login node, or try --dry_run)"
  # The venv is made or updated here, where pip can reach its index; the job only
  # activates it. Image runtimes need none. A dry run makes nothing.
  if [ "$RUNTIME" = venv ]; then
    # shellcheck disable=SC1091
    source "$REPO/scripts/venv.sh"
    ensure_venv >&2
  fi
fi
# Flag names are checked with the venv's python, or any python3 (seed/settings.py is
# the standard library alone): a dry run works on a laptop with neither Slurm nor a venv.
PYTHON="${SEED_VENV:-$REPO/.venv}/bin/python"
[ -x "$PYTHON" ] || PYTHON="$(command -v python3 || true)"

# Learner, actor and seed-job flags: names, and which are booleans (--[no]NAME), from
# their one table (seed/settings.py: the standard library is enough to read it).
known_flags() {
  (cd "$REPO" && "$PYTHON" -m seed.settings --list learner --list actor --list job) |
    awk '{ print $1, ($2 == "bool" ? "[no]" : "") }' | sort -u
}
# What this script (or seed-job) sets, each with what to use instead.
reserved_reason() {
  case "$1" in
    logdir) echo "the run directory is --run_dir" ;;
    gin_file) echo "ENV and AGENT pick gin/ENV/AGENT.gin; bind values with --gin_bindings" ;;
    num_envs) echo "ENVS_PER_ACTOR sets it" ;;
    actor_id|role|learner_address|server_address|listen_host|job_id|print_command)
      echo "the job sets it for every task" ;;
    tls_cert_file|tls_key_file|tls_ca_file|auth_token_file)
      echo "seed-job makes the job's certificate and token (see --tls)" ;;
  esac
}

# Slurm numbers a step's GPUs from 0 (CUDA_VISIBLE_DEVICES): --learner_devices must fit
# the learner step's --learner_gpus, as seed/settings.py says (the check gcp/submit.py runs).
LEARNER_DEVICES=''
for flag in "${FLAGS[@]+"${FLAGS[@]}"}"; do
  case "$flag" in --learner_devices=*) LEARNER_DEVICES="${flag#*=}" ;; esac
done
if [ -n "$PYTHON" ]; then
  # Exit 2: they do not fit; a python3 too old to read seed/settings.py checks nothing.
  status=0
  problem="$(cd "$REPO" && "$PYTHON" -m seed.settings --learner_gpus="$LEARNER_GPUS" \
    --learner_devices="$LEARNER_DEVICES" --gpus_flag=--learner_gpus 2>/dev/null)" || status=$?
  [ "$status" != 2 ] || die "$problem"
fi

declare -A SETTINGS=() BOOLEANS=()
KNOWN=()
if [ ${#FLAGS[@]} -gt 0 ] && [ -n "$PYTHON" ]; then
  while read -r flag boolean; do
    KNOWN+=("$flag")
    [ -n "$boolean" ] && BOOLEANS[$flag]=1
  done < <(known_flags 2>/dev/null || true)
  # A python3 too old for seed/settings.py lists nothing: submit unchecked, as without one.
  [ ${#KNOWN[@]} -gt 0 ] || echo "slurm/submit.sh: $PYTHON cannot list the flags: flag names are not checked" >&2
elif [ ${#FLAGS[@]} -gt 0 ]; then
  echo "slurm/submit.sh: no python3 here: flag names are not checked" >&2
fi
for arg in "${FLAGS[@]}"; do
  name="${arg%%=*}"; name="${name#--}"
  value=''; has_value=0
  [[ "$arg" == *=* ]] && { value="${arg#*=}"; has_value=1; }
  if [ $has_value = 0 ] && [[ "$name" == no* ]] && [ -n "${BOOLEANS[${name#no}]:-}" ]; then
    name="${name#no}"; value=false; has_value=1
  elif [ $has_value = 0 ] && [ -n "${BOOLEANS[$name]:-}" ]; then
    value=true; has_value=1
  fi
  if [ ${#KNOWN[@]} -gt 0 ] && [[ " ${KNOWN[*]} " != *" $name "* ]]; then
    die "unknown flag --$name; options: $(echo $OWN_OPTIONS | sed 's/\([a-z_]*\)/--\1/g') --dry_run; see also python -m seed.settings --list learner --list actor --list job"
  fi
  reason="$(reserved_reason "$name")"
  [ -z "$reason" ] || die "--$name is not for slurm/submit.sh: $reason"
  [ $has_value = 1 ] || die "--$name needs a value: --$name=VALUE"
  variable="SEED_${name^^}"
  # A repeated flag is a multi-value flag: one value a line, as SEED_* takes them.
  SETTINGS[$variable]="${SETTINGS[$variable]:+${SETTINGS[$variable]}$'\n'}$value"
done

# SIGUSR1 comes --stop_before_limit_s before the time limit: the learner's whole shutdown
# (its --shutdown_limit_s) and the requeue must fit before Slurm kills the job.
SHUTDOWN_LIMIT="${SETTINGS[SEED_SHUTDOWN_LIMIT_S]:-${SEED_SHUTDOWN_LIMIT_S:-20}}"
NEEDED_S="$(awk -v limit="$SHUTDOWN_LIMIT" 'BEGIN { s = int(limit); if (s < limit) s++; print s + 30 }')"
(( STOP_BEFORE_S >= NEEDED_S )) ||
  die "--stop_before_limit_s=$STOP_BEFORE_S leaves the learner less than its --shutdown_limit_s=$SHUTDOWN_LIMIT and 30 s to checkpoint and requeue before the time limit; give at least $NEEDED_S"

# Absolute, so the job finds it from any node and any working directory.
RUN_DIR="${RUN_DIR:-$REPO/runs/${ENV_NAME}_${AGENT}}"
[[ "$RUN_DIR" == /* ]] || RUN_DIR="$PWD/$RUN_DIR"
SETTINGS[SEED_RUN_DIR]="$RUN_DIR"
SETTINGS[SEED_AGENT]="$AGENT"
# Relative: the same path works in the repository and in the images (WORKDIR /opt/seed).
SETTINGS[SEED_GIN_FILE]="gin/$ENV_NAME/$AGENT.gin"
SETTINGS[SEED_NUM_ENVS]="$ENVS_PER_ACTOR"

SBATCH=(sbatch --parsable --export=ALL --job-name="$JOB_NAME"
  --output="$RUN_DIR/logs/slurm-%j.out" --open-mode=append --requeue
  --signal="B:USR1@$STOP_BEFORE_S")
[ -z "$TIME_LIMIT" ] || SBATCH+=(--time="$TIME_LIMIT")
GRES=()
(( LEARNER_GPUS == 0 )) || GRES=(--gres="gpu:$LEARNER_GPUS")
if [ "$HET" = 1 ]; then
  # Component 0 runs the batch script and the learner; component 1 the actors.
  SBATCH+=(--nodes=1 --ntasks=1 --cpus-per-task="$LEARNER_CPUS" "${GRES[@]}"
    "${SBATCH_EXTRA[@]}" "${LEARNER_SBATCH[@]}" :
    --nodes="$NODES" --ntasks="$NUM_ACTORS" --cpus-per-task="$ACTOR_CPUS" "${SBATCH_EXTRA[@]}")
elif (( LEARNER_CPUS == ACTOR_CPUS )); then
  SBATCH+=(--nodes="$NODES" --ntasks=$((NUM_ACTORS + 1)) --cpus-per-task="$ACTOR_CPUS"
    "${GRES[@]}" "${SBATCH_EXTRA[@]}")
else
  # One node: every CPU of both steps in one task's allocation; each step takes its own.
  SBATCH+=(--nodes=1 --ntasks=1 --cpus-per-task=$((LEARNER_CPUS + NUM_ACTORS * ACTOR_CPUS))
    "${GRES[@]}" "${SBATCH_EXTRA[@]}")
fi
SBATCH+=("$REPO/slurm/train.sbatch" --repo="$REPO" --num_actors="$NUM_ACTORS"
  --runtime="$RUNTIME" --learner_cpus="$LEARNER_CPUS" --actor_cpus="$ACTOR_CPUS"
  --learner_gpus="$LEARNER_GPUS")
# The commit submitted: the job says so if a (re)start finds the checkout moved on.
REVISION="$(git -C "$REPO" rev-parse HEAD 2>/dev/null || true)"
[ -z "$REVISION" ] || SBATCH+=(--revision="$REVISION")
[ -z "$PORT" ] || SBATCH+=(--port="$PORT")
[ "$RUNTIME" = venv ] || SBATCH+=(--learner_image="$LEARNER_IMAGE" --actor_image="$ACTOR_IMAGE")

if [ "$DRY_RUN" = 1 ]; then
  for variable in $(printf '%s\n' "${!SETTINGS[@]}" | sort); do
    printf '%s=%q\n' "$variable" "${SETTINGS[$variable]}"
  done
  line="$(printf '%q ' "${SBATCH[@]}")"
  echo "${line% }"
  exit 0
fi
for variable in "${!SETTINGS[@]}"; do export "$variable=${SETTINGS[$variable]}"; done
mkdir -p "$RUN_DIR/logs"
submitted="$("${SBATCH[@]}")"
JOB_ID="${submitted%%;*}"
PLUS_LEARNER_NODE=''
[ "$HET" = 0 ] || PLUS_LEARNER_NODE=" (actors) and the learner's"
echo "seed: submitted job $JOB_ID: $ENV_NAME/$AGENT, $NUM_ACTORS actors x $ENVS_PER_ACTOR envs" \
  "on $NODES node(s)$PLUS_LEARNER_NODE; run directory $RUN_DIR; output $RUN_DIR/logs/slurm-$JOB_ID.out" >&2
echo "$JOB_ID"
