#!/usr/bin/env bash
# Submits IMPALA/V-trace on Atari (Pong; another game with --env=atari:Breakout) to Vertex AI.
# The scenario's defaults are in SCENARIOS in gcp/submit.py; gcp/README.md explains them.
#   gcp/train_atari_vtrace.sh --project=P --region=R --bucket=gs://B \
#       --learner_image=URI --actor_image=URI [--dry_run] [more flags: submit.py --help]
exec python3 "$(dirname "$0")/submit.py" --scenario=atari_vtrace "$@"
