#!/usr/bin/env bash
# Installs those of the Debian packages named as arguments that are missing, as root
# with apt-get; elsewhere says so and does nothing. Used by .ci/run and
# scripts/install_football.sh.
#
#   scripts/install_debian_packages.sh podman runc ...
set -euo pipefail
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  echo "install_debian_packages: not root with apt-get; not installing $*" >&2
  exit 0
fi
missing=()
for package in "$@"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "ok installed" ||
    missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" > /dev/null
fi
