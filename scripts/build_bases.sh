#!/usr/bin/env bash
# Build the base images listed in bases/manifest (skipping images already present).
#
# Usage: scripts/build_bases.sh [--rebuild] [--only <repo_key|image>]... [--manifest <file>]
#
# Any option is passed to `kotlin-bench build-bases`; see its --help. Needs a Docker engine
# (scripts/setup_docker.sh), or Podman with --engine podman (scripts/setup_podman.sh), and, for the
# 106 tasks' bases, internet access.
set -euo pipefail
cd "$(dirname "$0")/.."
exec "${PYTHON:-python3}" -m kotlin_bench build-bases "$@"
