#!/usr/bin/env bash
# kotlin-bench: seal a repository's history so that only the base commit is reachable.
#
# Usage: seal_git_history.sh <repo_dir> <base_commit>
#
# HEAD must already be at <base_commit> (prepare.sh puts it there). Afterwards:
#   - HEAD is detached at <base_commit>, whose SHA is unchanged;
#   - <base_commit> is recorded in .git/shallow, so its parents are cut off: `git rev-list --all`
#     lists exactly one commit;
#   - no remote, branch, tag, note, stash, pull-request or other ref remains, nor any reflog,
#     FETCH_HEAD/ORIG_HEAD, graft, alternate, commit-graph or kept pack;
#   - the object store holds one pack with only what <base_commit> reaches: no later commit (the
#     upstream fix among them) and no unreachable or loose object is left.
set -euo pipefail

if [ "$#" -ne 2 ]; then
    echo "usage: seal_git_history.sh <repo_dir> <base_commit>" >&2
    exit 2
fi
repo_dir=$1
log() { echo "seal_git_history.sh: $*" >&2; }

cd "$repo_dir"
git_dir=$(git rev-parse --absolute-git-dir)
base=$(git rev-parse --verify --quiet "$2^{commit}") || { log "no commit $2 in $repo_dir"; exit 1; }
head=$(git rev-parse --verify HEAD)
if [ "$head" != "$base" ]; then
    log "HEAD is $head, expected the base commit $base"
    exit 1
fi

# Detach HEAD, then drop every remote and every ref.
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

# Cut the history below the base commit.
printf '%s\n' "$base" > "$git_dir/shallow"

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
if [ "$(git rev-parse HEAD)" != "$base" ]; then
    log "HEAD is not $base after sealing"
    exit 1
fi
count=$(git rev-list --all --count)
if [ "$count" != "1" ]; then
    log "$count commits are reachable after sealing, expected 1"
    exit 1
fi
refs=$(git for-each-ref --format='%(refname)')
if [ -n "$refs" ]; then
    log "refs remain after sealing: $refs"
    exit 1
fi
unreachable=$(git fsck --unreachable --no-progress 2>&1 | grep -E '^(unreachable|dangling) ' || true)
if [ -n "$unreachable" ]; then
    log "unreachable objects remain after sealing:"
    printf '%s\n' "$unreachable" >&2
    exit 1
fi
log "sealed at $base"
