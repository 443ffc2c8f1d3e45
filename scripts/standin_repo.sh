#!/usr/bin/env bash
# The examples' stand-in Maven repository on this host (docs/standin-repo.md): Debian's nginx serving
# https://repo.examples.test/maven2/ from /var/lib/kotlin-bench/standin-repo (its own config and state).
# Usage: scripts/standin_repo.sh start | stop | status | fault 503 | fault off
#   start   install nginx and the Debian Java packages of examples/standin-repo/third-party.txt when
#           missing (root, apt), build this checkout's content when missing, add repo.examples.test to
#           /etc/hosts, start or reload the server; idempotent
#   stop    stop it (idempotent)
#   status  exit 0: answers; 3: stopped; 1: runs but does not answer
#   fault   503 (or another 5xx): every request under /maven2/ answers it; off: served again
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
if [ "${1:-}" = start ]; then
  need=()
  [ -x /usr/sbin/nginx ] || need+=(nginx)
  command -v npm >/dev/null 2>&1 || need+=(npm)
  command -v javac >/dev/null 2>&1 || need+=(openjdk-17-jdk-headless)
  while read -r _ package _; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || need+=("$package")
  done < <(grep -v -e '^[[:space:]]*#' -e '^[[:space:]]*$' "$root/examples/standin-repo/third-party.txt")
  if [ ${#need[@]} -gt 0 ]; then
    if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
      echo "standin-repo: missing ${need[*]}; install them (apt-get install ${need[*]}) and run again" >&2
      exit 1
    fi
    echo "standin-repo: apt-get install ${need[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  fi
fi
PYTHONPATH="$root/src${PYTHONPATH:+:$PYTHONPATH}" exec python3 -m kotlin_bench.tools.standin_repo "$@" --root "$root"
