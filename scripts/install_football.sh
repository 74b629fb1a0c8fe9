#!/usr/bin/env bash
# Installs Google Research Football (gfootball 2.10.2) into its own venv for Football
# actors (default .venv-football; SEED_FOOTBALL_VENV): gfootball's wrappers need the
# old gym API (gym 0.25.2), which the main venv does not carry, and actors need no
# TensorFlow. The learner does not need it either: it knows Football's specs.
#
#   scripts/install_football.sh               build (first time ~11 min on 2 cores) or reuse
#   scripts/install_football.sh --debian-only the Debian packages the build needs, then stop
#
# gfootball is an sdist that compiles a C++ engine. The built wheel is kept in
# ${SEED_FOOTBALL_WHEELS:-~/.cache/seed/football-wheels}, so a later install (a new
# venv, a fresh clone on the same machine) compiles nothing (96 s here, mostly seed's
# own dependencies). As root with apt-get, the
# Debian packages the build needs are installed first (../shared/FOOTBALL.md). The
# engine is built without debug information (upstream compiles with -g): about a fifth
# less compile time and a smaller wheel; the code generated is the same.
#
# One install runs at a time: it holds a lock on <venv>.lock from start to end, and
# writes <venv>/.football-ready when gfootball imports. The Football tests wait on that
# lock, so CI can build Football beside the other tests (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$(pwd)"
VENV="${SEED_FOOTBALL_VENV:-$ROOT/.venv-football}"
WHEELS="${SEED_FOOTBALL_WHEELS:-$HOME/.cache/seed/football-wheels}"
GFOOTBALL_VERSION=2.10.2
READY="$VENV/.football-ready"
PACKAGES=(cmake build-essential libgl1-mesa-dev libsdl2-dev libsdl2-image-dev
          libsdl2-ttf-dev libsdl2-gfx-dev libboost-all-dev libdirectfb-dev python3-dev)
debian_only=false
case "${1:-}" in
  "") ;;
  --debian-only) debian_only=true ;;
  *) echo "install_football.sh: unknown argument '$1'; accepted: --debian-only" >&2; exit 2 ;;
esac

if ! $debian_only; then
  exec 9> "$VENV.lock"
  flock 9
  rm -f "$READY"
fi

scripts/install_debian_packages.sh "${PACKAGES[@]}"
$debian_only && exit 0

if [ ! -x "$VENV/bin/python" ]; then
  echo "football: creating $VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --upgrade pip
fi
# The build runs `python3 -c "import psutil ..."` with the first python3 on PATH: the
# venv's, which must have psutil; gfootball imports six at run time without saying so.
"$VENV/bin/pip" install --quiet psutil six wheel setuptools "gym==0.25.2"

mkdir -p "$WHEELS"
tag="$("$VENV/bin/python" -c 'import sys; print(f"cp{sys.version_info[0]}{sys.version_info[1]}")')"
wheel="$(ls "$WHEELS"/gfootball-"$GFOOTBALL_VERSION"-"$tag"-*.whl 2>/dev/null | head -1 || true)"
if [ -z "$wheel" ]; then
  echo "football: building gfootball $GFOOTBALL_VERSION (C++ engine; ~11 min on 2 cores) into $WHEELS"
  started=$(date +%s)
  source_dir="$(mktemp -d -t seed-gfootball.XXXXXX)"
  trap 'rm -rf "$source_dir"' EXIT
  # --no-cache-dir: the wheel is kept here, in $WHEELS, not in pip's own cache.
  "$VENV/bin/pip" download --quiet --no-cache-dir --no-deps --no-binary :all: \
    -d "$source_dir" "gfootball==$GFOOTBALL_VERSION"
  tar -xzf "$source_dir/gfootball-$GFOOTBALL_VERSION.tar.gz" -C "$source_dir"
  engine_cmake="$source_dir/gfootball-$GFOOTBALL_VERSION/third_party/gfootball_engine/CMakeLists.txt"
  sed -i -e 's/ -g -O3/ -O3/' -e 's/ -O3 -g"/ -O3"/' "$engine_cmake"
  if grep -qE -- '-g( |")' "$engine_cmake"; then
    echo "football: $engine_cmake still asks for -g; its flags changed upstream" >&2
    exit 1
  fi
  PATH="$VENV/bin:$PATH" "$VENV/bin/pip" wheel --quiet --no-cache-dir --no-build-isolation \
    --no-deps -w "$WHEELS" "$source_dir/gfootball-$GFOOTBALL_VERSION"
  echo "football: built in $(( $(date +%s) - started )) s"
  wheel="$(ls "$WHEELS"/gfootball-"$GFOOTBALL_VERSION"-"$tag"-*.whl | head -1)"
fi
# seed for actors (no learner extra), then gfootball without its declared dependencies:
# its opencv-python and pygame would clash with the opencv-python-headless and
# pygame-ce seed already brings, which provide the same cv2 and pygame modules.
"$VENV/bin/pip" install --quiet -e "$ROOT"
"$VENV/bin/pip" install --quiet --no-deps "$wheel"
"$VENV/bin/pip" install --quiet scipy
"$VENV/bin/python" -c "import gfootball.env, seed.envs; print('football: ready in $VENV')"
touch "$READY"
