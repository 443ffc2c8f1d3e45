#!/usr/bin/env bash
# kotlin-bench: seal a repository's history at the base commit.
#
# Usage: seal_git_history.sh <repo_dir> <base_commit> [--shallow]
#
# HEAD must already be at <base_commit> (prepare.sh puts it there). Afterwards, as in the published
# benchmark:
#   - HEAD is attached to the branch `task-base` at <base_commit>, whose SHA is unchanged;
#   - the base commit's ancestors stay (an agent can read `git log` and `git blame`);
#   - every later commit is gone: no remote, other branch, tag, note, stash, pull-request or other ref
#     remains, nor any reflog or FETCH_HEAD/ORIG_HEAD, graft, alternate, commit-graph or kept pack;
#     the object store holds only what <base_commit> reaches, with no unreachable or loose object.
# With --shallow, <base_commit> is also recorded in .git/shallow, so its parents are cut off and exactly
# one commit is reachable (the published task that fetches only its base commit).
set -euo pipefail

if [ "$#" -lt 2 ] || [ "$#" -gt 3 ] || { [ "$#" -eq 3 ] && [ "$3" != "--shallow" ]; }; then
    echo "usage: seal_git_history.sh <repo_dir> <base_commit> [--shallow]" >&2
    exit 2
fi
repo_dir=$1
shallow=${3:-}
branch=task-base
log() { echo "seal_git_history.sh: $*" >&2; }

cd "$repo_dir"
git_dir=$(git rev-parse --absolute-git-dir)
base=$(git rev-parse --verify --quiet "$2^{commit}") || { log "no commit $2 in $repo_dir"; exit 1; }
head=$(git rev-parse --verify HEAD)
if [ "$head" != "$base" ]; then
    log "HEAD is $head, expected the base commit $base"
    exit 1
fi

# HEAD on its own branch at the base, then every remote and every other ref dropped.
git -c advice.detachedHead=false checkout --quiet --detach "$base"
for remote in $(git remote); do
    git remote remove "$remote"
done
git for-each-ref --format='delete %(refname)' | git update-ref --no-deref --stdin
rm -f "$git_dir/packed-refs"
find "$git_dir/refs" -mindepth 1 -depth -type d -empty -delete 2>/dev/null || true
mkdir -p "$git_dir/refs/heads" "$git_dir/refs/tags"
{ git config --name-only --get-regexp '^branch\.' || true; } | sed 's/\.[^.]*$//' | sort -u \
    | while read -r section; do git config --remove-section "$section"; done
for name in FETCH_HEAD ORIG_HEAD MERGE_HEAD CHERRY_PICK_HEAD REVERT_HEAD BISECT_LOG BISECT_START AUTO_MERGE; do
    rm -f "${git_dir:?}/$name"
done
rm -rf "$git_dir/logs" "$git_dir/info/grafts" "$git_dir/refs/original"
git update-ref "refs/heads/$branch" "$base"
git symbolic-ref HEAD "refs/heads/$branch"
rm -rf "$git_dir/logs"

if [ "$shallow" = "--shallow" ]; then
    printf '%s\n' "$base" > "$git_dir/shallow"
else
    rm -f "$git_dir/shallow"
fi

# Rewrite the object store with only what the base commit reaches.
git reflog expire --expire=now --expire-unreachable=now --all
rm -f "$git_dir/objects/info/commit-graph" "$git_dir/objects/pack/multi-pack-index"
rm -rf "$git_dir/objects/info/commit-graphs"
rm -f "$git_dir"/objects/pack/*.keep
git -c repack.writeBitmaps=false -c pack.writeBitmaps=false repack -a -d -q
rm -f "$git_dir/objects/info/alternates" "$git_dir/objects/info/http-alternates"
git prune --expire=now
git prune-packed

# Verify the seal.
if [ "$(git rev-parse HEAD)" != "$base" ] || [ "$(git symbolic-ref HEAD)" != "refs/heads/$branch" ]; then
    log "HEAD is not $branch at $base after sealing"
    exit 1
fi
refs=$(git for-each-ref --format='%(refname)')
if [ "$refs" != "refs/heads/$branch" ]; then
    log "refs other than refs/heads/$branch remain after sealing: $refs"
    exit 1
fi
if [ -n "$(git remote)" ]; then
    log "remotes remain after sealing"
    exit 1
fi
if [ "$shallow" = "--shallow" ] && [ "$(git rev-list --all --count)" != "1" ]; then
    log "$(git rev-list --all --count) commits are reachable after a shallow seal, expected 1"
    exit 1
fi
unreachable=$(git fsck --unreachable --no-progress 2>&1 | grep -E '^(unreachable|dangling) ' || true)
if [ -n "$unreachable" ]; then
    log "unreachable objects remain after sealing:"
    printf '%s\n' "$unreachable" >&2
    exit 1
fi
log "sealed at $base on $branch ($(git rev-list --count HEAD) commit(s) of history)"
