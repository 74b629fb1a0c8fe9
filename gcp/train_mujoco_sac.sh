#!/usr/bin/env bash
# Submits SAC on MuJoCo (HalfCheetah-v5; another with --env=mujoco:Hopper-v5) to Vertex AI.
# The scenario's defaults are in SCENARIOS in gcp/submit.py; gcp/README.md explains them.
#   gcp/train_mujoco_sac.sh --project=P --region=R --bucket=gs://B \
#       --learner_image=URI --actor_image=URI [--dry_run] [more flags: submit.py --help]
exec python3 "$(dirname "$0")/submit.py" --scenario=mujoco_sac "$@"
