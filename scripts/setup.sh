#!/usr/bin/env bash
# Set up a Debian host for kotlin-bench: system packages, the Python package with its dependencies,
# and a running Docker engine. Idempotent; safe to run again.
# Usage: scripts/setup.sh [--harbor | --tests]
#   --harbor: also the harbor CLI and the compose v2 plugin (Harbor agents, the Harbor tests)
#   --tests:  everything the test suite needs: --harbor, Debian's Chromium and chromedriver (the results
#             site's browser test), and a container registry and a one-machine Slurm cluster on loopback
#             (scripts/setup_registry.sh, scripts/setup_slurm.sh; root only)
set -euo pipefail
cd "$(dirname "$0")/.."
with_harbor=0
with_services=0
for arg in "$@"; do
  case "$arg" in
    --harbor) with_harbor=1 ;;
    --tests) with_harbor=1; with_services=1 ;;
    *) echo "setup: unknown option $arg (usage: scripts/setup.sh [--harbor | --tests])" >&2; exit 2 ;;
  esac
done

need=()
command -v git >/dev/null 2>&1 || need+=(git)
command -v debootstrap >/dev/null 2>&1 || need+=(debootstrap)
command -v npm >/dev/null 2>&1 || need+=(npm)
command -v dockerd >/dev/null 2>&1 || need+=(docker.io)
if [ "$with_services" -eq 1 ]; then
  command -v chromium >/dev/null 2>&1 || need+=(chromium)
  command -v chromedriver >/dev/null 2>&1 || need+=(chromium-driver)
fi
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
if [ "$with_harbor" -eq 1 ]; then
  scripts/setup_harbor.sh
fi
if [ "$with_services" -eq 1 ]; then
  scripts/setup_registry.sh
  scripts/setup_slurm.sh
fi
