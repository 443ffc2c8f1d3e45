#!/usr/bin/env bash
# Start a container registry on loopback from Debian's `docker-registry` package (for the registry tests
# and for trying `registry:` on one machine). Idempotent: does nothing when the registry already answers.
# Usage: scripts/setup_registry.sh [--port PORT]   (default 5000, or KOTLIN_BENCH_REGISTRY_PORT)
# State (config, storage, log) lives under /var/lib/kotlin-bench/registry. Plain HTTP on 127.0.0.1 only:
# Docker treats 127.0.0.0/8 as an insecure registry by default, so no daemon setting is needed.
set -euo pipefail

port=${KOTLIN_BENCH_REGISTRY_PORT:-5000}
if [ "${1:-}" = "--port" ]; then port=${2:?--port needs a value}; fi
state=${KOTLIN_BENCH_REGISTRY_STATE:-/var/lib/kotlin-bench/registry}
url="http://127.0.0.1:$port/v2/"

die() { echo "setup_registry: $*" >&2; exit 1; }
answers() { [ "$(curl -s -o /dev/null -w '%{http_code}' "$url" 2>/dev/null)" = 200 ]; }

if answers; then
  echo "setup_registry: registry already answers on 127.0.0.1:$port"
  exit 0
fi
if ! command -v docker-registry >/dev/null 2>&1; then
  [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1 ||
    die "docker-registry is not installed; run as root on Debian or: sudo apt-get install docker-registry"
  echo "setup_registry: apt-get install docker-registry"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq || die "apt-get update failed"
  apt-get install -y -qq docker-registry curl >/dev/null || die "apt-get install docker-registry failed"
fi
command -v curl >/dev/null 2>&1 || die "needs curl (apt-get install curl)"

mkdir -p "$state/data"
# The package's config with no htpasswd auth (else every request is 401), our storage and loopback only.
cat >"$state/config.yml" <<CONFIG
version: 0.1
log:
  fields:
    service: registry
storage:
  cache:
    blobdescriptor: inmemory
  filesystem:
    rootdirectory: $state/data
  delete:
    enabled: true
http:
  addr: 127.0.0.1:$port
  headers:
    X-Content-Type-Options: [nosniff]
CONFIG
echo "setup_registry: starting docker-registry on 127.0.0.1:$port (log: $state/registry.log)"
setsid nohup docker-registry serve "$state/config.yml" >"$state/registry.log" 2>&1 </dev/null &
echo $! >"$state/registry.pid"
for _ in $(seq 1 30); do
  if answers; then
    echo "setup_registry: registry ready on 127.0.0.1:$port"
    exit 0
  fi
  sleep 0.5
done
die "the registry did not answer on $url within 15s; last lines of $state/registry.log: $(tail -n 5 "$state/registry.log")"
