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
if [ "${1:-}" = --fast ]; then
  shift
  set -- tests/unit tests/integration "$@"
fi
# pytest exits 5 when it collected no test: that is a failure here too.
python -m pytest "$@"
