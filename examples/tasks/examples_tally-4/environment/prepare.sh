#!/usr/bin/env bash
# kotlin-bench: prepare the repository of a task image (run once, while the image is built).
#
# Usage: prepare.sh <prepare.env>
#
# <prepare.env> (generated per task) sets REPO_DIR, BASE_COMMIT, GIT_CONFIG (key value pairs),
# GIT_INFO_EXCLUDE (patterns), WARMUP (the generated warm-up script) and AFTER_WARMUP. This script
# checks out BASE_COMMIT (fetching it from origin if the clone lacks it), makes the repository settings,
# verifies the tree is clean and runs the warm-up in REPO_DIR (the warm-up script decides whether a
# failing step stops the image build, as the published task does). Then, as the published task does:
#   AFTER_WARMUP=keep   the tree stays as the warm-up left it: its build outputs and test results
#                       (build/test-results included), and any file it changed or added;
#   AFTER_WARMUP=reset  tracked files are reset to BASE_COMMIT and untracked files that are not ignored
#                       are removed (`git reset --hard`, `git clean -fd`: ignored build outputs stay),
#                       and the tree must then be clean.
# HEAD is verified at BASE_COMMIT again. The Gradle caches outside the tree are the warm cache.
set -euo pipefail

if [ "$#" -ne 1 ] || [ ! -f "$1" ]; then
    echo "usage: prepare.sh <prepare.env>" >&2
    exit 2
fi
# shellcheck disable=SC1090
. "$1"
log() { echo "prepare.sh: $*" >&2; }

cd "$REPO_DIR"
if ! git cat-file -e "${BASE_COMMIT}^{commit}" 2>/dev/null; then
    log "fetching $BASE_COMMIT from origin"
    git fetch --quiet origin "$BASE_COMMIT" \
        || git fetch --quiet origin '+refs/heads/*:refs/remotes/origin/*' '+refs/tags/*:refs/tags/*'
fi
git -c advice.detachedHead=false checkout --quiet --force "$BASE_COMMIT"
git clean -fdx --quiet

set -- "${GIT_CONFIG[@]}"
while [ "$#" -ge 2 ]; do
    git config "$1" "$2"
    shift 2
done
for pattern in "${GIT_INFO_EXCLUDE[@]}"; do
    printf '%s\n' "$pattern" >> "$(git rev-parse --git-path info/exclude)"
done

verify_head() {
    local head
    head=$(git rev-parse HEAD)
    if [ "$head" != "$BASE_COMMIT" ]; then
        log "HEAD is $head, expected $BASE_COMMIT ($1)"
        exit 1
    fi
}
verify_head "after the checkout"
bash "$(dirname "$0")/check_git_changes.sh" "$REPO_DIR"

log "warming the build cache ($WARMUP)"
bash "$WARMUP"
if [ -x ./gradlew ]; then
    ./gradlew --stop >/dev/null 2>&1 || true
fi

case "$AFTER_WARMUP" in
    keep) ;;
    reset)
        git reset --quiet --hard "$BASE_COMMIT"
        git clean -fd --quiet
        bash "$(dirname "$0")/check_git_changes.sh" "$REPO_DIR"
        ;;
    *)
        log "AFTER_WARMUP=$AFTER_WARMUP: expected keep or reset"
        exit 2
        ;;
esac
verify_head "after the warm-up"
log "ready at $BASE_COMMIT"
