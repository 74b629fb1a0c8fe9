#!/usr/bin/env bash
# Creates or reuses .venv, installs seed with its test extras, runs pytest.
#   ./run_tests.sh                 all tests (what CI runs)
#   ./run_tests.sh --fast          the unit and integration tiers (tests/unit, tests/integration)
#   ./run_tests.sh -k protocol     any pytest arguments (after --fast too)
set -euo pipefail
cd "$(dirname "$0")"
source scripts/venv.sh
ensure_venv
export TF_CPP_MIN_LOG_LEVEL="${TF_CPP_MIN_LOG_LEVEL:-2}"
# XLA compiles an off-policy agent's update in every process that builds one (SAC's
# took 22-24 s of its first train step on a 2-core AVX2 host, 12 s from this cache):
# one persistent cache for the whole run, its test processes and their learners, lets
# each load what another compiled. Removed when the run ends.
xla_cache="$(mktemp -d -t seed-test-xla-cache.XXXXXX)"
trap 'rm -rf "$xla_cache"' EXIT
export TF_XLA_FLAGS="${TF_XLA_FLAGS:+$TF_XLA_FLAGS }--tf_xla_persistent_cache_directory=$xla_cache"
if [ "${1:-}" = --fast ]; then
  shift
  set -- tests/unit tests/integration "$@"
fi
# pytest exits 5 when it collected no test: that is a failure here too. (Not exec: the
# trap removes the cache after.)
python -m pytest "$@"
