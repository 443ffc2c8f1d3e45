#!/usr/bin/env bash
# Set up a Debian host for kotlin-bench: system packages, the Python package with its dependencies,
# and a running Docker engine. Idempotent; safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v git >/dev/null 2>&1 || need+=(git)
command -v debootstrap >/dev/null 2>&1 || need+=(debootstrap)
command -v npm >/dev/null 2>&1 || need+=(npm)
command -v dockerd >/dev/null 2>&1 || need+=(docker.io)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "setup: missing ${need[*]}; install them (apt-get install ${need[*]}) and run again" >&2
    exit 1
  fi
  echo "setup: apt-get install ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${need[@]}" >/dev/null
fi

python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' || {
  echo "setup: kotlin-bench needs Python >= 3.11 (found $(python3 --version))" >&2; exit 1; }
echo "setup: pip install -e '.[dev]'"
python3 -m pip install -q --disable-pip-version-check -e '.[dev]'

scripts/setup_docker.sh
