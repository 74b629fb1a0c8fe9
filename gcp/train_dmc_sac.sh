#!/usr/bin/env bash
# Submits SAC on the DeepMind Control suite (cheetah-run; another with --env=dmc:walker-walk) to Vertex AI.
# The scenario's defaults are in SCENARIOS in gcp/submit.py; gcp/README.md explains them.
#   gcp/train_dmc_sac.sh --project=P --region=R --bucket=gs://B \
#       --learner_image=URI --actor_image=URI [--dry_run] [more flags: submit.py --help]
exec python3 "$(dirname "$0")/submit.py" --scenario=dmc_sac "$@"
