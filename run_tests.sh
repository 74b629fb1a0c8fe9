#!/usr/bin/env bash
# Creates or reuses .venv, installs seed with its test extras, runs pytest.
#   ./run_tests.sh                 all tests
#   ./run_tests.sh -k protocol     any pytest arguments
set -euo pipefail
cd "$(dirname "$0")"
source scripts/venv.sh
ensure_venv
export TF_CPP_MIN_LOG_LEVEL="${TF_CPP_MIN_LOG_LEVEL:-2}"
# pytest exits 5 when it collected no test: that is a failure here too.
python -m pytest "$@"
