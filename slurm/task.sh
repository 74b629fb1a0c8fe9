#!/bin/bash
# One task of a seed Slurm job, started by srun in slurm/train.sbatch: the learner,
# or actor $SLURM_PROCID of the actors' step. Becomes seed-job (exec), in the venv
# the batch script activated or in an image, so srun's signals reach the learner.
#
#   task.sh --runtime=venv|podman|apptainer --role=learner|actor --learner_address=HOST:PORT
#           [--learner_image=REF] [--actor_image=REF] [--learner_gpus=G]
# The learner's GPUs: in the venv, CUDA_VISIBLE_DEVICES as Slurm set it for the step;
# under podman, the step's GPUs (SLURM_STEP_GPUS) as CDI devices nvidia.com/gpu=INDEX
# (nvidia-ctk cdi generate names them so); under apptainer, --nv.
# Environment: SEED_RUN_DIR and the SEED_* settings, SLURM_JOB_ID, SLURM_PROCID.
set -euo pipefail

RUNTIME='' ROLE='' ADDRESS='' LEARNER_IMAGE='' ACTOR_IMAGE='' LEARNER_GPUS=0
for arg in "$@"; do
  case "$arg" in
    --runtime=*) RUNTIME="${arg#*=}" ;;
    --role=*) ROLE="${arg#*=}" ;;
    --learner_address=*) ADDRESS="${arg#*=}" ;;
    --learner_image=*) LEARNER_IMAGE="${arg#*=}" ;;
    --actor_image=*) ACTOR_IMAGE="${arg#*=}" ;;
    --learner_gpus=*) LEARNER_GPUS="${arg#*=}" ;;
    *) echo "task.sh: unknown argument '$arg'" >&2; exit 2 ;;
  esac
done

# The job id names the TLS folder: a requeued job on another node makes new files.
ARGS=(--role="$ROLE" --learner_address="$ADDRESS" --run_dir="$SEED_RUN_DIR"
  --job_id="slurm-$SLURM_JOB_ID")
IMAGE="$LEARNER_IMAGE"
GPUS=''  # The step's GPU indices, comma-separated; empty for none.
if [ "$ROLE" = actor ]; then
  ARGS+=(--actor_id="$SLURM_PROCID")
  IMAGE="$ACTOR_IMAGE"
elif [ "$LEARNER_GPUS" != 0 ]; then
  GPUS="${SLURM_STEP_GPUS:-${CUDA_VISIBLE_DEVICES:-}}"
  [ -n "$GPUS" ] || { echo "task.sh: the learner's step was given no GPU (SLURM_STEP_GPUS is empty)" >&2; exit 1; }
fi
echo "task.sh: $ROLE on ${SLURMD_NODENAME:-$(hostname)}, GPUs: ${GPUS:-none}" >&2
PODMAN_GPUS=() APPTAINER_GPUS=()
for index in ${GPUS//,/ }; do PODMAN_GPUS+=(--device="nvidia.com/gpu=$index"); done
[ -z "$GPUS" ] || APPTAINER_GPUS=(--nv)

case "$RUNTIME" in
  venv) exec seed-job "${ARGS[@]}" ;;
  podman)
    # The host's network (the learner's port, the node names) and the run directory
    # at the same path; files in it belong to the submitting user.
    USERNS=()
    [ "$(id -u)" = 0 ] || USERNS=(--userns=keep-id)
    exec podman run --rm --network=host "${USERNS[@]}" --user="$(id -u):$(id -g)" \
      --volume="$SEED_RUN_DIR:$SEED_RUN_DIR" --env='SEED_*' \
      --env=SEED_HEALTH_PORT="${SEED_HEALTH_PORT:-0}" --env=TF_CPP_MIN_LOG_LEVEL \
      "${PODMAN_GPUS[@]}" --entrypoint=seed-job "$IMAGE" "${ARGS[@]}" ;;
  apptainer)
    # Apptainer shares the host's network and passes the environment on.
    exec apptainer exec "${APPTAINER_GPUS[@]}" --bind="$SEED_RUN_DIR" --pwd=/opt/seed \
      --env=SEED_HEALTH_PORT="${SEED_HEALTH_PORT:-0}" "$IMAGE" seed-job "${ARGS[@]}" ;;
  *) echo "task.sh: unknown runtime '$RUNTIME'" >&2; exit 2 ;;
esac
