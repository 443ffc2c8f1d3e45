#!/usr/bin/env bash
# make-upstream-repo: build a deterministic git repository that plays the role of an upstream
# project for the kotlin-bench examples.
#
#   make-upstream-repo <upstream_dir> <dest>
#
# <upstream_dir>/tree/            the project at its base commit
# <upstream_dir>/history          optional: the commits before the base, oldest first, one per line:
#                                 `<path> [<path>...] | <message>`: the tree/ paths that commit adds
# <upstream_dir>/pulls/<N>.patch  one "pull request" each: a git diff that applies to tree/ (or, for one
#                                 listed in `merges`, to the tip of the branch it is merged into)
# <upstream_dir>/pulls/<N>.msg    optional: the message of its commit (else "Pull request #N")
# <upstream_dir>/merges           optional: pull requests made after those above, in order, one per line:
#                                 `<N> <into> <opened> <closed>`: pulls/<N>.patch committed at <opened> on
#                                 the tip of branch <into> (made at the base when missing), then merged
#                                 into it (`git merge --no-ff`) at <closed>; <into> `-`: branched from
#                                 main, never merged. Dates in UTC, YYYY-MM-DDTHH:MM:SSZ.
#
# Result in <dest> (which must not exist or be empty):
#   history              the commits of `history`, each adding its paths (from tree/)
#   the base commit      all of tree/, on top of them
#   refs/pull/<N>/head   a commit on top of the base with <N>.patch applied
#   branch pr-<N>        the same commit
#   branch main          the last pull request's head (upstream moved on past the base), or the base
#                        when there is no pull request; then the merges of `merges` into main
#   refs/pull/<N>/head, branch pr-<N>, and the merge commits of the pull requests of `merges`
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

merges=()
if [ -f "$src/merges" ]; then
    mapfile -t merges < <(grep -v -e '^[[:space:]]*#' -e '^[[:space:]]*$' "$src/merges")
fi
merged_numbers=" "
for line in "${merges[@]}"; do
    merged_numbers+="${line%% *} "
done

message() {  # the commit message of pull request $1
    if [ -f "$src/pulls/$1.msg" ]; then
        cat "$src/pulls/$1.msg"
    else
        printf 'Pull request #%s\n\nApplies pulls/%s.patch on top of the base commit.\n' "$1" "$1"
    fi
}

shopt -s nullglob
patches=("$src"/pulls/*.patch)
numbers=()
for p in "${patches[@]}"; do
    n=$(basename "$p" .patch)
    if ! [[ $n =~ ^[0-9]+$ ]]; then
        echo "make-upstream-repo: $p: the name must be <number>.patch" >&2
        exit 2
    fi
    if [[ $merged_numbers != *" $n "* ]]; then
        numbers+=("$n")
    fi
done

for n in $(printf '%s\n' "${numbers[@]}" | sort -n); do
    g checkout -q --detach "$base"
    g apply --index --whitespace=nowarn "$src/pulls/$n.patch"
    # N hours after the base: distinct per pull request and fixed.
    date="$((base_epoch + n * 3600)) +0000"
    message "$n" | GIT_AUTHOR_DATE=$date GIT_COMMITTER_DATE=$date g commit -q --no-verify -F -
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

epoch() {  # YYYY-MM-DDTHH:MM:SSZ -> "<seconds> +0000"
    if ! [[ $1 =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$ ]]; then
        echo "make-upstream-repo: $src/merges: $1: expected a date YYYY-MM-DDTHH:MM:SSZ" >&2
        exit 2
    fi
    echo "$(date -u -d "$1" +%s) +0000"
}

for line in "${merges[@]}"; do
    read -r n into opened closed rest <<<"$line"
    if ! [[ $n =~ ^[0-9]+$ ]] || [ -z "$closed" ] || [ -n "$rest" ] || [ ! -f "$src/pulls/$n.patch" ]; then
        echo "make-upstream-repo: $src/merges: '$line': expected <N> <into> <opened> <closed>, with pulls/<N>.patch" >&2
        exit 2
    fi
    opened=$(epoch "$opened")
    closed=$(epoch "$closed")
    from=main
    if [ "$into" != "-" ]; then
        from=$into
        g rev-parse -q --verify "refs/heads/$into" >/dev/null || g branch "$into" "$base"
    fi
    g checkout -q --detach "$from"
    g apply --index --whitespace=nowarn "$src/pulls/$n.patch"
    message "$n" | GIT_AUTHOR_DATE=$opened GIT_COMMITTER_DATE=$opened g commit -q --no-verify -F -
    head=$(g rev-parse HEAD)
    g update-ref "refs/pull/$n/head" "$head"
    g branch -f "pr-$n" "$head"
    if [ "$into" = "-" ]; then
        echo "closed $n $head"
        continue
    fi
    g checkout -q "$into"
    GIT_AUTHOR_DATE=$closed GIT_COMMITTER_DATE=$closed \
        g merge -q --no-ff --no-verify --no-edit -m "Merge pull request #$n from pr-$n" "pr-$n"
    echo "merged $n $head $(g rev-parse HEAD)"
done
g checkout -q main
