#!/usr/bin/env bash
# The hand-off of an agent's work (kotlin_bench.runs.handoff runs this in task containers; bash, coreutils,
# findutils and git only; GNU patch where installed). One hermetic git for all three uses:
#
#   handoff.sh CAP prepare
#       A fresh, empty CAP (removing whatever is at its path).
#   handoff.sh CAP capture     REPO BASE OBJECTS MAX_FILE_BYTES MAX_DIFF_BYTES [EXCLUDE_GLOB...]
#       The agent's work tree as one binary git diff against BASE, on stdout. Files over MAX_FILE_BYTES
#       and untracked files matching an EXCLUDE_GLOB (heap dumps, crash logs, core dumps) are left out,
#       as are embedded git repositories; each is listed in CAP/out/left-out (why, bytes, path; NUL-
#       separated). Paths git could not add are in CAP/out/errors. OBJECTS is the object store that
#       holds BASE: the repository's own (REPO/.git/objects) or a pristine copy put into CAP/pristine.
#       When the agent committed (its HEAD, read as files, is a commit other than BASE that OBJECTS
#       hold), the diff from BASE to that commit goes to CAP/out/committed.diff (binary; empty when over
#       MAX_DIFF_BYTES or when there is none): the published verifier restores the test patch's paths from
#       that HEAD, so the fresh verifier needs it (commit-head below).
#   handoff.sh CAP apply-diff  REPO BASE DIFF
#       Apply a captured diff to the work tree of a fresh verifier container, first put at BASE (tracked
#       files as at BASE, untracked files that are not ignored removed: what the warm-up left there).
#   handoff.sh CAP commit-head REPO BASE COMMITTED_DIFF
#       In a fresh verifier container, after apply-diff: a commit on top of BASE with the agent's
#       committed diff becomes HEAD (through a private index: the work tree and index stay as they are).
#   handoff.sh CAP apply-patch REPO BASE PATCH...
#       Apply the first of the candidate patches that applies, trying SWE-bench's appliers in order on
#       each (the work tree is put at BASE first, and again after each applier that fails); prints
#       "applied<TAB>candidate index<TAB>applier", or "failed" and the last applier's message.
#
# Hermetic: the script re-runs itself under `env -i` (nothing the agent exported reaches git), and git
# runs with a private git directory CAP/git (fresh each time: its own config, no hooks; attributes that
# neutralise every filter, diff driver and textconv and take line-ending rules from the repository's
# own .gitattributes at BASE only), a private index, no system or global configuration and no replace
# objects. The agent's .git is only ever read for objects, through CAP/git/objects/info/alternates,
# never for its config, index, HEAD, hooks, refs, state or info/.
#
# Exit codes of capture: 0 captured; 10 the objects do not hold BASE (retry with pristine objects);
# 11 the diff exceeds MAX_DIFF_BYTES; 12 REPO is not a directory; 13 no usable git (retry with the task
# image's); 14 git failed. apply-diff and apply-patch exit 20 when git cannot be set up at all.
if [ "${KOTLIN_BENCH_HANDOFF:-}" != hermetic ]; then
    exec env -i KOTLIN_BENCH_HANDOFF=hermetic LC_ALL=C TZ=UTC \
        PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        bash --noprofile --norc -c "$BASH_EXECUTION_STRING" "$0" "$@"
fi
set -u
umask 022

CAP=$1
OUT=$CAP/out
# The task image's git, put here when the agent's is gone or broken.
[ ! -x "$CAP/pristine/bin/git" ] || PATH=$CAP/pristine/bin:$PATH
G=$CAP/git
NO_BASE=10 TOO_LARGE=11 NO_WORK_TREE=12 NO_GIT=13 GIT_FAILED=14 SETUP_FAILED=20

# Every setting that can change what `git add`, `git diff` or `git apply` do, pinned; everything not
# listed has git's built-in default, since no other configuration file is read.
GIT_CONFIG_TEXT='[core]
	repositoryformatversion = 0
	bare = false
	filemode = true
	symlinks = true
	ignorecase = false
	precomposeUnicode = false
	autocrlf = false
	safecrlf = false
	eol = lf
	fsmonitor = false
	untrackedCache = false
	splitIndex = false
	sparseCheckout = false
	hooksPath = /dev/null
	attributesFile = /dev/null
	excludesFile = /dev/null
	quotePath = true
	commitGraph = false
	multiPackIndex = false
	looseCompression = 1
	checkStat = default
[index]
	sparse = false
[gc]
	auto = 0
[maintenance]
	auto = false
[advice]
	addEmbeddedRepo = false
	addIgnoredFile = false
[feature]
	manyFiles = false
	experimental = false'
# $G/info/attributes has the highest precedence: what the agent wrote into .gitattributes files never
# decides a conversion. First every attribute that converts content or calls a driver is unspecified
# (git's default), then the repository's own .gitattributes files at BASE are replayed (line endings,
# ident and working-tree-encoding as the pristine repository has them), then filters and diff drivers
# are unspecified again: none is configured, and `!diff` (not `-diff`) keeps git's binary detection.
ATTRIBUTES_FIRST='* !text !eol !crlf !ident !working-tree-encoding !filter !diff !merge !whitespace'
ATTRIBUTES_LAST='* !filter !diff'

# The .gitattributes files of tree $1, their patterns made relative to the top (for info/attributes).
base_attributes() {
    local base=$1 file dir line pattern rest
    while IFS= read -r -d '' file; do
        dir=${file%.gitattributes}
        dir=${dir%/}
        while IFS= read -r line || [ -n "$line" ]; do
            line=${line%$'\r'}
            line=${line#"${line%%[![:space:]]*}"}
            case $line in '' | '#'* | '"'*) continue ;; '[attr]'*) [ -z "$dir" ] && printf '%s\n' "$line"; continue ;; esac
            pattern=${line%%[[:space:]]*}
            rest=${line#"$pattern"}
            if [ -n "$dir" ]; then
                case $pattern in */*) pattern=$dir/${pattern#/} ;; *) pattern=$dir/**/$pattern ;; esac
            fi
            printf '%s%s\n' "$pattern" "$rest"
        done < <(git cat-file blob "$base:$file")
    done < <(git ls-tree -r -z --name-only "$base" | grep -z -E '(^|/)\.gitattributes$')
}

# A fresh private git directory for work tree $1, with objects from $2 (none: no alternates) and the
# attributes of the tree $3 (none: no attributes of the repository's own).
hermetic_git() {
    local repo=$1 objects=${2:-} base=${3:-}
    rm -rf "$G" "$CAP/home" "$CAP/index" || return 1
    mkdir -p "$G/objects/info" "$G/objects/pack" "$G/refs/heads" "$G/refs/tags" "$G/info" "$CAP/home" \
        || return 1
    printf 'ref: refs/heads/handoff\n' >"$G/HEAD"
    printf '%s\n' "$GIT_CONFIG_TEXT" >"$G/config"
    printf '%s\n' "$ATTRIBUTES_FIRST" "$ATTRIBUTES_LAST" >"$G/info/attributes"
    : >"$G/info/exclude"
    [ -z "$objects" ] || printf '%s\n' "$objects" >"$G/objects/info/alternates"
    export HOME=$CAP/home GIT_DIR=$G GIT_WORK_TREE=$repo GIT_INDEX_FILE=$CAP/index
    export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_ATTR_NOSYSTEM=1 GIT_NO_REPLACE_OBJECTS=1
    export GIT_OPTIONAL_LOCKS=0 GIT_TERMINAL_PROMPT=0 GIT_PAGER=cat PAGER=cat GIT_ADVICE=0
    [ -n "$base" ] || return 0
    git cat-file -e "$base^{tree}" 2>/dev/null || return 2
    {
        printf '%s\n' "$ATTRIBUTES_FIRST"
        base_attributes "$base"
        printf '%s\n' "$ATTRIBUTES_LAST"
    } >"$G/info/attributes.new" && mv "$G/info/attributes.new" "$G/info/attributes"
}

# A fresh, real CAP, whatever the agent left at its path (prepare), with CAP/pristine for the task
# image's objects; a capture starts afresh but keeps CAP/pristine (its retry has objects put there).
prepare() { rm -rf "$CAP" && mkdir -p "$CAP/pristine/bin"; }
fresh_out() {
    find "$CAP" -mindepth 1 -maxdepth 1 ! -name pristine -exec rm -rf {} + && mkdir -p "$OUT"
}

# --------------------------------------------------------------------------- capture

# NUL-separated records: why, bytes, path.
list_left_out() { printf '%s\0%s\0%s\0' "$1" "$2" "$3" >>"$OUT/left-out"; }

# Is path $1 (relative) tracked at BASE? Prints its blob id when it is.
base_blob() { git ls-files -s -z -- ":(literal)$1" | { IFS=$' \t' read -r -d '' _mode sha _rest && echo "$sha"; }; }

# Write the pathspec file: everything, minus files over the size limit and untracked debris that git
# does not ignore anyway. A tracked file over the limit keeps its base version (listed if the agent's
# differs); a tracked file is never debris.
select_left_out() {
    local max_file=$1 base=$2
    shift 2
    local -a names=()
    local glob
    for glob in "$@"; do
        if [[ $glob == */* ]]; then
            names+=(-o -path "./$glob")
        else
            names+=(-o -name "$glob")
        fi
    done
    printf '.\0' >"$CAP/pathspec"
    : >"$OUT/left-out"
    local size path
    find . -name .git -prune -o -type f \( -size +"${max_file}"c "${names[@]}" \) -printf '%s %P\0' \
        >"$CAP/candidates" || return 1
    [ -s "$CAP/candidates" ] || return 0
    # Ignored files are never carried: drop them from the candidates.
    local -A ignored=()
    while IFS= read -r -d '' path; do
        ignored["p:$path"]=1
    done < <(while IFS= read -r -d '' rec; do printf '%s\0' "${rec#* }"; done <"$CAP/candidates" \
        | git check-ignore -z --stdin)
    local rec blob bsize why
    while IFS= read -r -d '' rec; do
        size=${rec%% *} path=${rec#* }
        [ -z "${ignored["p:$path"]+x}" ] || continue
        blob=$(base_blob "$path")
        if [ "$size" -gt "$max_file" ]; then
            why=size
            # An unchanged tracked file is not worth a line. It is hashed (as git add would, line
            # endings included) only when its size allows it to be the base blob.
            if [ -n "$blob" ]; then
                bsize=$(git cat-file -s "$blob" 2>/dev/null) || bsize=-1
                if [ "$bsize" -ge 0 ] && [ "$size" -le $((2 * bsize + 65536)) ] \
                    && [ "$(git hash-object -- "$path" 2>/dev/null)" = "$blob" ]; then
                    why=
                fi
            fi
        elif [ -n "$blob" ]; then
            continue # tracked: never debris
        else
            why=debris
        fi
        printf ':(exclude,literal)%s\0' "$path" >>"$CAP/pathspec"
        [ -z "$why" ] || list_left_out "$why" "$size" "$path"
    done <"$CAP/candidates"
}

# Embedded git repositories (new gitlinks) come out of the index: their content is not the work tree's.
drop_embedded_repositories() {
    local base=$1 meta path
    while IFS= read -r -d '' meta && IFS= read -r -d '' path; do
        set -- $meta
        [ "$2" = 160000 ] && [ "$1" != ":160000" ] || continue
        git update-index --force-remove -- "$path" || return 1
        list_left_out embedded_repository "" "$path"
    done < <(git diff --cached --raw -z --no-renames --abbrev=40 --diff-filter=AT "$base")
}

capture() {
    local repo=$1 base=$2 objects=$3 max_file=$4 max_diff=$5
    shift 5
    fresh_out || { echo "kotlin-bench: cannot prepare $CAP" >&2; return $GIT_FAILED; }
    [ -d "$repo" ] || { echo "kotlin-bench: the repository directory $repo is gone" >&2; return $NO_WORK_TREE; }
    command -v git >/dev/null && git --version >/dev/null 2>&1 \
        || { echo "kotlin-bench: no usable git in the container" >&2; return $NO_GIT; }
    hermetic_git "$repo" "$objects" "$base"
    case $? in 0) ;; 2) return $NO_BASE ;; *) return $GIT_FAILED ;; esac
    cd "$repo" || return $NO_WORK_TREE
    git read-tree "$base" || return $NO_BASE
    select_left_out "$max_file" "$base" "$@" || return $GIT_FAILED
    # --ignore-errors: a file git cannot add (vanished, unreadable, an invalid name) is listed, not fatal.
    git add -A --ignore-errors --pathspec-from-file="$CAP/pathspec" --pathspec-file-nul 2>"$OUT/errors"
    case $? in 0 | 1) ;; *) cat "$OUT/errors" >&2; return $GIT_FAILED ;; esac
    drop_embedded_repositories "$base" || return $GIT_FAILED
    set -o pipefail
    git diff --cached --binary --full-index --no-ext-diff --no-textconv --no-color --no-renames \
        --no-relative --ignore-submodules=none --submodule=short --src-prefix=a/ --dst-prefix=b/ \
        "$base" -- | head -c "$((max_diff + 1))" >"$OUT/agent.diff"
    local rc=$? size
    set +o pipefail
    size=$(stat -c %s "$OUT/agent.diff") || return $GIT_FAILED
    [ "$size" -le "$max_diff" ] || return $TOO_LARGE
    [ "$rc" -eq 0 ] || return $NO_BASE # a base blob the objects cannot give
    committed_diff "$repo" "$base" "$max_diff"
    cat "$OUT/agent.diff"
}

# The commit the agent's HEAD names, read as files (its config is never read): a symbolic ref is looked
# up loose, then in packed-refs. Prints the commit id; fails when there is none to read.
agent_head() {
    local gitdir=$1/.git line ref sha name depth=0
    [ -f "$gitdir/HEAD" ] || return 1
    read -r line <"$gitdir/HEAD" || [ -n "$line" ] || return 1
    while [[ $line == "ref: "* ]] && [ "$depth" -lt 5 ]; do
        ref=${line#ref: }
        depth=$((depth + 1))
        case $ref in refs/*) ;; *) return 1 ;; esac
        case $ref in *..*) return 1 ;; esac
        if [ -f "$gitdir/$ref" ]; then
            read -r line <"$gitdir/$ref" || [ -n "$line" ] || return 1
        else
            line=""
            [ -f "$gitdir/packed-refs" ] || return 1
            while read -r sha name; do
                [ "$name" = "$ref" ] && line=$sha && break
            done <"$gitdir/packed-refs"
        fi
    done
    [[ $line =~ ^[0-9a-f]{40}$ ]] || return 1
    printf '%s\n' "$line"
}

# CAP/out/committed.diff: BASE to the agent's HEAD, when the agent committed (see the header).
committed_diff() {
    local repo=$1 base=$2 max_diff=$3 head size
    : >"$OUT/committed.diff"
    head=$(agent_head "$repo") || return 0
    [ "$head" != "$(git rev-parse --verify -q "$base^{commit}")" ] || return 0
    git cat-file -e "$head^{commit}" 2>/dev/null || return 0
    git diff --binary --full-index --no-ext-diff --no-textconv --no-color --no-renames --no-relative \
        --src-prefix=a/ --dst-prefix=b/ "$base" "$head" -- 2>/dev/null \
        | head -c "$((max_diff + 1))" >"$OUT/committed.diff"
    size=$(stat -c %s "$OUT/committed.diff") || return 0
    [ "$size" -le "$max_diff" ] || : >"$OUT/committed.diff"
    return 0
}

# --------------------------------------------------------------------------- apply

# The work tree of a fresh container is the image's, as the warm-up left it (which may have changed files
# or added some); a captured diff and a predicted patch both lead from BASE, so the tree is put at BASE
# first (the private index read from BASE; reset_work_tree below).
tree_at_base() {
    local repo=$1 base=$2
    hermetic_git "$repo" "$repo/.git/objects" "$base" && cd "$repo" && git read-tree "$base" || return 1
    git update-index -q --refresh >/dev/null
    reset_work_tree
}

apply_diff() {
    local repo=$1 base=$2 diff=$3
    tree_at_base "$repo" "$base" || return $SETUP_FAILED
    [ -s "$diff" ] || return 0
    git apply --binary --whitespace=nowarn -- "$diff"
}

commit_head() {
    local repo=$1 base=$2 diff=$3 tree commit
    cd "$repo" || return $SETUP_FAILED
    # the repository's own git directory (a fresh container's: no agent code has run in it), a private index
    unset GIT_DIR GIT_WORK_TREE
    export GIT_INDEX_FILE=$CAP/head-index
    export GIT_AUTHOR_NAME="the agent" GIT_AUTHOR_EMAIL=agent@kotlin-bench.invalid
    export GIT_COMMITTER_NAME=kotlin-bench GIT_COMMITTER_EMAIL=verifier@kotlin-bench.invalid
    git read-tree "$base" && git apply --cached --binary --whitespace=nowarn -- "$diff" || return 3
    tree=$(git write-tree) || return 3
    commit=$(git commit-tree "$tree" -p "$base" -m "The agent's commits (kotlin-bench: as its HEAD was)") || return 3
    git update-ref -m "kotlin-bench: the agent's HEAD" HEAD "$commit" || return 3
    echo "HEAD is the agent's committed tree: $commit"
}

# SWE-bench's appliers, in its order (swebench/harness/run_evaluation.py, GIT_APPLY_CMDS); GNU patch
# makes no .orig backups here (they would be carried as new files).
APPLIERS=("git apply --verbose" "git apply --verbose --reject" "patch --batch --fuzz=5 -p1 -i")

try_applier() {
    local applier=$1 patch=$2
    case $applier in
    git*) $applier -- "$patch" ;;
    patch*) $applier "$patch" --no-backup-if-mismatch ;;
    esac
}

# Back to BASE (before the first applier, and after one that failed half-way: --reject and patch write
# what applies): tracked files from the private index, new files that are not ignored removed.
reset_work_tree() {
    git diff-files --name-only -z | git checkout-index -f -z --stdin
    git ls-files -o -z --exclude-standard | xargs -0 -r rm -f --
    git update-index -q --refresh >/dev/null
    return 0
}

apply_patch() {
    local repo=$1 base=$2 k=0 patch applier message=""
    shift 2
    tree_at_base "$repo" "$base" || return $SETUP_FAILED
    for patch in "$@"; do
        for applier in "${APPLIERS[@]}"; do
            if [[ $applier == patch* ]] && ! command -v patch >/dev/null; then
                echo ">>> candidate $k: $applier: GNU patch is not installed in this image" >&2
                continue
            fi
            echo ">>> candidate $k: $applier" >&2
            if message=$(try_applier "$applier" "$patch" 2>&1); then
                printf '%s\n' "$message" >&2
                printf 'applied\t%s\t%s\n' "$k" "$applier"
                return 0
            fi
            printf '%s\n' "$message" >&2
            reset_work_tree
        done
        k=$((k + 1))
    done
    ((${#message} <= 4000)) || message=${message: -4000}
    printf 'failed\n%s\n' "$message"
    return 3
}

command=$2
shift 2
case $command in
prepare) prepare ;;
capture) capture "$@" ;;
apply-diff) apply_diff "$@" ;;
commit-head) commit_head "$@" ;;
apply-patch) apply_patch "$@" ;;
*)
    echo "handoff.sh: unknown command $command" >&2
    exit 2
    ;;
esac
