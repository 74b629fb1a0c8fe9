# Sourced by run_local.sh and run_tests.sh: create or reuse .venv and install
# seed into it (editable) with the learner, test, plots, video and envpool extras. Both scripts install
# the same set, so neither reinstalls over the other; it reinstalls only when
# setup.py or the learner's extra changes.
#
# SEED_LEARNER_EXTRA=learner-gpu puts TensorFlow with its CUDA libraries in the venv
# (tensorflow[and-cuda]) in place of tensorflow-cpu. The venv remembers the choice
# (.seed-learner-extra), so later runs and setup.py changes keep it without the
# variable; SEED_LEARNER_EXTRA=learner goes back to the CPU learner.
ensure_venv() {
  local root
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  local venv="${SEED_VENV:-$root/.venv}"
  local learner_extra="${SEED_LEARNER_EXTRA:-$(cat "$venv/.seed-learner-extra" 2>/dev/null || echo learner)}"
  case "$learner_extra" in
    learner|learner-gpu) ;;
    *) echo "seed: SEED_LEARNER_EXTRA='$learner_extra'; accepted: learner (CPU), learner-gpu" >&2
       return 2 ;;
  esac
  local extras="$learner_extra,test,plots,video,envpool"
  if [ ! -x "$venv/bin/python" ]; then
    echo "seed: creating $venv (first run: installing TensorFlow and friends takes a few minutes)"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --upgrade pip
  fi
  local stamp="$venv/.seed-installed-$(sha1sum < "$root/setup.py" | cut -c1-12)-$learner_extra"
  if [ ! -f "$stamp" ]; then
    # tensorflow-cpu and tensorflow install the same module: take out the other one first.
    local other=tensorflow
    [ "$learner_extra" = learner-gpu ] && other=tensorflow-cpu
    if "$venv/bin/pip" show --quiet "$other" >/dev/null 2>&1; then
      echo "seed: replacing $other in $venv ($learner_extra)"
      "$venv/bin/pip" uninstall --quiet -y "$other"
    fi
    echo "seed: installing seed[$extras] into $venv"
    "$venv/bin/pip" install --quiet -e "$root[$extras]"
    rm -f "$venv"/.seed-installed-*
    touch "$stamp"
    echo "$learner_extra" > "$venv/.seed-learner-extra"
  fi
  # shellcheck disable=SC1091
  source "$venv/bin/activate"
}
