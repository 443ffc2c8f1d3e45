#!/usr/bin/env bash
# kotlin-bench oracle: apply the reference solution to the repository of the working directory.
#
# The patch is ${SOLUTION_DIR:-/solution}/fix.patch. Fails loudly when it is missing or does not apply.
set -euo pipefail

patch="${SOLUTION_DIR:-/solution}/fix.patch"
if ! repo=$(git rev-parse --show-toplevel 2>/dev/null); then
    echo "solve.sh: the working directory $(pwd) is not inside a git repository" >&2
    exit 1
fi
cd "$repo"
if [ ! -s "$patch" ]; then
    echo "solve.sh: the solution patch $patch is missing or empty" >&2
    exit 1
fi
if ! git apply --whitespace=nowarn "$patch"; then
    echo "solve.sh: $patch does not apply to $(git rev-parse HEAD) in $repo:" >&2
    git apply --check --verbose --whitespace=nowarn "$patch" >&2 || true
    exit 1
fi
echo "solve.sh: applied $patch in $repo"
