#!/usr/bin/env bash
# Packs TensorFlow-CPU and seed's other dependencies for a lent accelerator machine
# whose image has no TensorFlow and no network, in pieces the device tool can carry
# (64 MiB a call), then bench/device_run.sh measures there. Run in the repo root:
#
#   bash bench/device_carry.sh            # writes .dev1/ .dev2/ .dev3/ (git-ignored)
#   device run, carry .dev1: mkdir -p /tmp/stash && cp .dev1/part.* /tmp/stash/
#   device run, carry .dev2: the same with .dev2 (within the machine's 30 s idle wait)
#   device run, carry .dev3: bash bench/device_run.sh
#
# TensorFlow-CPU 2.21 for Python 3.12 is a 261 MiB wheel; without its C++ headers and
# with its shared objects stripped of symbol tables it is 713 MB unpacked, 156 MB as
# tar.xz with the other wheels. CUDA TensorFlow with its CUDA 12 libraries would be
# several GB: the GPU itself stays out of reach this way.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
pieces=${PIECES:-3}
download() {
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d "$1" "${@:2}"
}
download "$work" tensorflow-cpu==2.21.0
mkdir -p "$work/pack"
(cd "$work/pack" && unzip -q "$work"/tensorflow_cpu-*.whl && rm -rf tensorflow/include)
find "$work/pack" -name '*.so*' -size +1M -exec strip --strip-unneeded {} +
# What the image lacks (or holds at another version) of seed's learner and actors.
download "$work/pack" grpcio==1.85.1 protobuf==7.36.2 gymnasium==1.4.0 ale-py==0.12.1 \
  gin-config==0.5.0 zstandard==0.25.0 keras==3.15.1 namex==0.1.0 optree==0.20.0 \
  gast==0.7.0 astunparse==1.6.3 google-pasta==0.2.0 termcolor==3.3.0 \
  farama-notifications==0.0.6 grpcio-health-checking==1.85.1 ml_dtypes==0.6.0 \
  tensorboard==2.21.0 tensorboard-data-server==0.7.2
(cd "$work/pack" && tar -cf - . | xz -6 -T0 > "$work/seed-deps.tar.xz")
size=$(stat -c %s "$work/seed-deps.tar.xz")
(cd "$work" && split -n "$pieces" -d -a 2 seed-deps.tar.xz part.)
grep -qx '/.dev\*/' .git/info/exclude 2>/dev/null || echo '/.dev*/' >> .git/info/exclude
for k in $(seq 1 "$pieces"); do
  rm -rf ".dev$k" && mkdir ".dev$k" && mv "$work/part.$(printf %02d $((k - 1)))" ".dev$k/"
done
echo "bench/device_carry.sh: $size bytes in $pieces pieces: $(echo .dev[0-9]*)"
