# Sourced by run_local.sh and run_tests.sh: create or reuse .venv and install
# seed into it (editable) with the learner, test, plots and video extras. Both scripts install
# the same set, so neither reinstalls over the other; it reinstalls only when
# setup.py changes.
ensure_venv() {
  local extras="learner,test,plots,video"
  local root
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  local venv="${SEED_VENV:-$root/.venv}"
  if [ ! -x "$venv/bin/python" ]; then
    echo "seed: creating $venv (first run: installing TensorFlow and friends takes a few minutes)"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --upgrade pip
  fi
  local stamp="$venv/.seed-installed-$(sha1sum < "$root/setup.py" | cut -c1-12)"
  if [ ! -f "$stamp" ]; then
    echo "seed: installing seed[$extras] into $venv"
    "$venv/bin/pip" install --quiet -e "$root[$extras]"
    rm -f "$venv"/.seed-installed-*
    touch "$stamp"
  fi
  # shellcheck disable=SC1091
  source "$venv/bin/activate"
}
