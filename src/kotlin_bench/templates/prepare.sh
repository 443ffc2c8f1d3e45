#!/usr/bin/env bash
# kotlin-bench: prepare the repository of a task image (run once, while the image is built).
#
# Usage: prepare.sh <repo_dir> <base_commit> <test_command>
#
# Checks out <base_commit> (fetching it from origin if the clone lacks it), verifies HEAD, warms the
# build cache by running <test_command> once (its exit code is ignored), then removes every test result
# that run left and restores a clean working tree at <base_commit>. Ignored build outputs and the Gradle
# caches outside the tree are kept: they are the warm cache.
set -euo pipefail

if [ "$#" -ne 3 ]; then
    echo "usage: prepare.sh <repo_dir> <base_commit> <test_command>" >&2
    exit 2
fi
repo_dir=$1
base_commit=$2
test_command=$3

log() { echo "prepare.sh: $*" >&2; }

cd "$repo_dir"
if ! git cat-file -e "${base_commit}^{commit}" 2>/dev/null; then
    log "fetching $base_commit from origin"
    git fetch --quiet origin "$base_commit" \
        || git fetch --quiet origin '+refs/heads/*:refs/remotes/origin/*' '+refs/tags/*:refs/tags/*'
fi
git -c advice.detachedHead=false checkout --quiet --force "$base_commit"
git clean -fdx --quiet

head=$(git rev-parse HEAD)
if [ "$head" != "$base_commit" ]; then
    log "HEAD is $head, expected $base_commit"
    exit 1
fi

log "warming the build cache: $test_command"
set +e
bash -c "$test_command"
status=$?
set -e
log "warm-up run exited with $status (ignored)"
if [ -x ./gradlew ]; then
    ./gradlew --stop >/dev/null 2>&1 || true
fi

# No test result of the warm-up may survive into the image, and the tree must be clean again.
find . -type d -path '*/build/test-results' -prune -exec rm -rf {} +
git reset --quiet --hard "$base_commit"
git clean -fd --quiet

head=$(git rev-parse HEAD)
if [ "$head" != "$base_commit" ]; then
    log "HEAD moved to $head during the warm-up, expected $base_commit"
    exit 1
fi
log "ready at $base_commit"
