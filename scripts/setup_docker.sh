#!/usr/bin/env bash
# Make a Docker engine available on a Debian host: install docker.io when dockerd is absent,
# start dockerd when `docker info` fails, and wait until the engine answers.
# Usage: scripts/setup_docker.sh [--timeout SECONDS]   (default 60)
set -euo pipefail

timeout=60
if [ "${1:-}" = "--timeout" ]; then timeout=${2:?--timeout needs a value}; fi
log=${DOCKERD_LOG:-/var/log/kotlin-bench-dockerd.log}

die() { echo "setup_docker: $*" >&2; exit 1; }

if docker info >/dev/null 2>&1; then
  echo "setup_docker: engine already answers ($(docker version --format '{{.Server.Version}}' 2>/dev/null))"
  exit 0
fi

if ! command -v dockerd >/dev/null 2>&1; then
  [ "$(id -u)" -eq 0 ] || die "dockerd is not installed and installing it needs root; run: sudo apt-get install docker.io"
  command -v apt-get >/dev/null 2>&1 || die "dockerd is not installed and this host has no apt-get; install a Docker engine by hand"
  echo "setup_docker: installing docker.io with apt-get"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq || die "apt-get update failed"
  apt-get install -y -qq docker.io >/dev/null || die "apt-get install docker.io failed"
fi

if ! docker info >/dev/null 2>&1; then
  [ "$(id -u)" -eq 0 ] || die "the Docker engine is not running and starting dockerd needs root (or add your user to the docker group and start the docker service)"
  if ! pgrep -x dockerd >/dev/null 2>&1; then
    echo "setup_docker: starting dockerd (log: $log)"
    setsid nohup dockerd >"$log" 2>&1 </dev/null &
  fi
  waited=0
  until docker info >/dev/null 2>&1; do
    [ "$waited" -lt "$timeout" ] || die "dockerd did not answer within ${timeout}s; last lines of $log: $(tail -n 5 "$log" 2>/dev/null)"
    sleep 1
    waited=$((waited + 1))
  done
fi
echo "setup_docker: engine ready ($(docker version --format '{{.Server.Version}}'))"
