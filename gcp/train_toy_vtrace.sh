#!/usr/bin/env bash
# Submits IMPALA/V-trace on CartPole (Catch with --env=Catch --target_return=0.9): the cheap smoke run to Vertex AI.
# The scenario's defaults are in SCENARIOS in gcp/submit.py; gcp/README.md explains them.
#   gcp/train_toy_vtrace.sh --project=P --region=R --bucket=gs://B \
#       --learner_image=URI --actor_image=URI [--dry_run] [more flags: submit.py --help]
exec python3 "$(dirname "$0")/submit.py" --scenario=toy_vtrace "$@"
