#!/usr/bin/env bash
# Set up a Debian host for kotlin-bench: system packages, the Python package with its dependencies,
# a running container engine (Docker, or Podman with --podman), and the examples' stand-in Maven
# repository (scripts/standin_repo.sh start). Idempotent; safe to run again.
# Usage: scripts/setup.sh [--harbor] [--podman [--user NAME]...] | --tests
#   --harbor: also the harbor CLI and the compose v2 plugin (Harbor agents, the Harbor tests)
#   --podman: Podman instead of Docker (scripts/setup_podman.sh): as root, Debian's podman, what rootless
#             needs, and the rootful service; with --user NAME also that user's rootless Podman; as an
#             ordinary user (after root), that user's configuration and service. Then use the config
#             `engine: {kind: podman}` (or --configfile config/podman.yaml).
#   --tests:  everything the test suite needs: Docker and --harbor, Debian's Chromium and chromedriver (the
#             results site's browser test), a container registry and a one-machine Slurm cluster on
#             loopback (scripts/setup_registry.sh, scripts/setup_slurm.sh), rootful Podman, and rootless
#             Podman for the user KOTLIN_BENCH_ROOTLESS_USER (default kbtest; made when missing) with a
#             Python of kotlin-bench's dependencies that user can run (/opt/kotlin-bench/rootless-venv;
#             root only)
set -euo pipefail
cd "$(dirname "$0")/.."
with_harbor=0
with_services=0
with_docker=1
with_podman=0
podman_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --harbor) with_harbor=1 ;;
    --podman) with_podman=1; with_docker=0 ;;
    --user) podman_args+=(--user "${2:?--user needs a name}"); shift ;;
    --tests) with_harbor=1; with_services=1; with_podman=1 ;;
    *) echo "setup: unknown option $1 (usage: scripts/setup.sh [--harbor] [--podman [--user NAME]...] | --tests)" >&2; exit 2 ;;
  esac
  shift
done

need=()
command -v git >/dev/null 2>&1 || need+=(git)
command -v npm >/dev/null 2>&1 || need+=(npm)
if [ "$(id -u)" -eq 0 ]; then
  command -v debootstrap >/dev/null 2>&1 || need+=(debootstrap)
  # the fence of allowlist phases' networks (kotlin_bench.engine.fence; rootless Podman needs none)
  [ -x /usr/sbin/nft ] || command -v nft >/dev/null 2>&1 || need+=(nftables)
else
  # an ordinary user makes the OS image with mmdebstrap in a user namespace (rootless Podman)
  command -v mmdebstrap >/dev/null 2>&1 || need+=(mmdebstrap)
fi
if [ "$with_docker" -eq 1 ]; then
  command -v dockerd >/dev/null 2>&1 || need+=(docker.io)
elif [ "$with_harbor" -eq 1 ]; then
  # Harbor's trials need the docker CLI and its compose plugin, also on Podman (no Docker daemon is started)
  command -v docker >/dev/null 2>&1 || need+=(docker.io)
fi
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

if [ "$with_docker" -eq 1 ]; then
  scripts/setup_docker.sh
fi
# The examples' stand-in Maven repository (https://repo.examples.test/maven2/, docs/standin-repo.md): nginx
# on port 443 and a line of /etc/hosts, so root's; an ordinary user needs root to have started it.
if [ "$(id -u)" -eq 0 ]; then
  scripts/standin_repo.sh start
elif ! scripts/standin_repo.sh status; then
  echo "setup: the stand-in Maven repository is not running; as root: scripts/standin_repo.sh start" >&2
fi
if [ "$with_harbor" -eq 1 ]; then
  scripts/setup_harbor.sh
fi
if [ "$with_services" -eq 1 ]; then
  scripts/setup_registry.sh
  scripts/setup_slurm.sh
  user=${KOTLIN_BENCH_ROOTLESS_USER:-kbtest}
  if ! id "$user" >/dev/null 2>&1; then
    echo "setup: useradd -m $user (the rootless Podman tests' ordinary user)"
    useradd -m "$user"
  fi
  podman_args+=(--user "$user")
fi
if [ "$with_podman" -eq 1 ]; then
  scripts/setup_podman.sh "${podman_args[@]}"
fi
if [ "$with_services" -eq 1 ]; then
  # A Python the ordinary user can run (root's may be private), with the dependencies of this checkout;
  # the tests put the workspace's own src/ first on PYTHONPATH.
  venv=/opt/kotlin-bench/rootless-venv
  stamp=$(sha256sum pyproject.toml | cut -c1-16)
  if [ "$(cat "$venv/.kotlin-bench-stamp" 2>/dev/null)" != "$stamp" ]; then
    command -v /usr/bin/python3 >/dev/null 2>&1 && /usr/bin/python3 -c 'import ensurepip' 2>/dev/null || {
      export DEBIAN_FRONTEND=noninteractive; apt-get install -y -qq python3-venv >/dev/null; }
    echo "setup: a Python environment for the rootless tests in $venv"
    rm -rf "$venv" && mkdir -p "$(dirname "$venv")"
    /usr/bin/python3 -m venv "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check ".[dev]" "snakemake-executor-plugin-slurm==2.8.0"
    echo "$stamp" >"$venv/.kotlin-bench-stamp"
  fi
  # Slurm accounts jobs by user: the rootless test user submits under the account root made.
  sacctmgr -i -Q add user "$user" account=root >/dev/null 2>&1 || true
fi
