#!/usr/bin/env bash
# Makes a CA, the learner's certificate and a shared token for learners and actors on
# different machines. The script itself ships in the package (seed-job runs it inside
# cluster jobs); see seed/cluster/make_certs.sh for what it writes.
#
#   scripts/make_certs.sh OUT_DIR NAME [NAME ...]
exec bash "$(dirname "${BASH_SOURCE[0]}")/../seed/cluster/make_certs.sh" "$@"
