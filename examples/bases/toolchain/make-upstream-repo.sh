#!/usr/bin/env bash
# make-upstream-repo: build a deterministic git repository that plays the role of an upstream
# project for the kotlin-bench examples.
#
#   make-upstream-repo <upstream_dir> <dest>
#
# <upstream_dir>/tree/            the project at its base commit
# <upstream_dir>/history          optional: the commits before the base, oldest first, one per line:
#                                 `<path> [<path>...] | <message>`: the tree/ paths that commit adds
# <upstream_dir>/pulls/<N>.patch  one "pull request" each: a git diff that applies to tree/
#
# Result in <dest> (which must not exist or be empty):
#   history              the commits of `history`, each adding its paths (from tree/)
#   the base commit      all of tree/, on top of them
#   refs/pull/<N>/head   a commit on top of the base with <N>.patch applied
#   branch pr-<N>        the same commit
#   branch main          the last pull request's head (upstream moved on past the base), or the base
#                        when there is no pull request
# Work tree left checked out at main.
#
# Author, committer, dates and messages are fixed and the user's and system git configuration is
# ignored, so the commit SHAs depend only on the files: the same input gives the same SHAs on any
# machine (checked with git 2.39 on the host and in the toolchain image). Needs bash and git only.
set -euo pipefail

if [ $# -ne 2 ]; then
    echo "usage: make-upstream-repo <upstream_dir> <dest>" >&2
    exit 2
fi
src=$(cd "$1" && pwd)
dest=$2

if [ ! -d "$src/tree" ]; then
    echo "make-upstream-repo: $src/tree is missing" >&2
    exit 2
fi
if [ -e "$dest" ] && [ -n "$(ls -A "$dest")" ]; then
    echo "make-upstream-repo: $dest exists and is not empty" >&2
    exit 2
fi

# Isolate from any configuration, hooks or templates of the machine it runs on.
export GIT_CONFIG_NOSYSTEM=1
export GIT_CONFIG_GLOBAL=/dev/null
export TZ=UTC LC_ALL=C
export GIT_AUTHOR_NAME="kotlin-bench examples"
export GIT_AUTHOR_EMAIL="examples@kotlin-bench.invalid"
export GIT_COMMITTER_NAME="kotlin-bench examples"
export GIT_COMMITTER_EMAIL="examples@kotlin-bench.invalid"
base_epoch=1704067200   # 2024-01-01T00:00:00Z
base_date="$base_epoch +0000"

g() {
    git -C "$dest" -c core.autocrlf=false -c core.filemode=true -c core.symlinks=true \
        -c commit.gpgsign=false -c core.hooksPath=/dev/null "$@"
}

mkdir -p "$dest"
git init -q -b main "$dest"
# Copy the tree without preserving owners or times (they are not part of a commit anyway).
cp -R "$src/tree/." "$dest/"

# The history before the base: commit k of n is dated n-k+1 days before it.
if [ -f "$src/history" ]; then
    mapfile -t lines < <(grep -v -e '^[[:space:]]*#' -e '^[[:space:]]*$' "$src/history")
    for i in "${!lines[@]}"; do
        paths=${lines[$i]%%|*}
        message=${lines[$i]#*|}
        message=${message# }
        # shellcheck disable=SC2086
        g add -- $paths
        date="$((base_epoch - (${#lines[@]} - i) * 86400)) +0000"
        GIT_AUTHOR_DATE=$date GIT_COMMITTER_DATE=$date g commit -q --no-verify -m "$message"
        echo "history $(g rev-parse HEAD) $message"
    done
fi
g add -A
GIT_AUTHOR_DATE=$base_date GIT_COMMITTER_DATE=$base_date \
    g commit -q --no-verify -m "Base commit" -m "The project as it was before the pull requests."
base=$(g rev-parse HEAD)
echo "base $base"

shopt -s nullglob
patches=("$src"/pulls/*.patch)
numbers=()
for p in "${patches[@]}"; do
    n=$(basename "$p" .patch)
    if ! [[ $n =~ ^[0-9]+$ ]]; then
        echo "make-upstream-repo: $p: the name must be <number>.patch" >&2
        exit 2
    fi
    numbers+=("$n")
done

for n in $(printf '%s\n' "${numbers[@]}" | sort -n); do
    g checkout -q --detach "$base"
    g apply --index --whitespace=nowarn "$src/pulls/$n.patch"
    # N hours after the base: distinct per pull request and fixed.
    date="$((base_epoch + n * 3600)) +0000"
    GIT_AUTHOR_DATE=$date GIT_COMMITTER_DATE=$date \
        g commit -q --no-verify -m "Pull request #$n" -m "Applies pulls/$n.patch on top of the base commit."
    head=$(g rev-parse HEAD)
    g update-ref "refs/pull/$n/head" "$head"
    g branch -f "pr-$n" "$head"
    echo "pull $n $head"
done

if [ "${#numbers[@]}" -gt 0 ]; then
    g checkout -q -B main "$head"
else
    g checkout -q main
fi
