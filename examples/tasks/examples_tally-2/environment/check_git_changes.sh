#!/usr/bin/env bash
# kotlin-bench: assert that a repository's working tree is clean.
#
# Usage: check_git_changes.sh [repo_dir]    (default: the current directory)
#
# Fails, listing the offending paths, when `git status --porcelain` reports anything: a modified,
# staged, deleted or untracked (not ignored) file.
set -euo pipefail

cd "${1:-.}"
changes=$(git status --porcelain --untracked-files=all)
if [ -n "$changes" ]; then
    echo "check_git_changes.sh: the working tree of $(pwd) is not clean:" >&2
    printf '%s\n' "$changes" >&2
    exit 1
fi
echo "check_git_changes.sh: clean working tree at $(git rev-parse HEAD)"
