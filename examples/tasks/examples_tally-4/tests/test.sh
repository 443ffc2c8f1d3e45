#!/usr/bin/env bash
# kotlin-bench verifier: runs in the task container after the agent phase (tests/ copied to /tests).
#
# Fail closed: reward.txt holds 0 from the first step on; only junit_compare.py, as its last
# action on a resolved run, writes 1. This script always exits 0: the reward file is the verdict.
# VERIFIER_LOGS_DIR and VERIFIER_TESTS_DIR override /logs/verifier and /tests (tests on the host).
#
# Leftover processes: the test command runs the agent's code, which may start processes that outlive
# it and tamper with the reports or the verdict later. In a container (this script started by
# `docker exec`, no directory overridden) every process except PID 1's keep-alive, this script and its
# ancestors is killed before the test command (what an agent phase left, when it shares the container)
# and again after it, until none is left, and only then are the reports collected and compared; the
# processes killed after the test command are listed in leftover_processes.txt. The killing uses bash
# builtins only, and the whole script is parsed before it runs (main below), so changed files on disk
# cannot change what it does. VERIFIER_STOP_LEFTOVERS=0 turns this off, =1 forces it on.
#
# The hidden test patch meets the agent's work as in the published benchmark: every path the patch
# touches (the `diff --git a/<old> b/<new>` headers) is first restored to the committed version, or
# removed where the patch creates it, then the patch is applied. KOTLIN_BENCH_TEST_PATCH=strict applies
# it over the agent's work without restoring (an agent that edited such a file then scores 0).
# tests/task.env may export the test command's environment and set SCORER_ARGS for junit_compare.py.
set -u

LOGS=${VERIFIER_LOGS_DIR:-/logs/verifier}
TESTS=${VERIFIER_TESTS_DIR:-/tests}
MAX_KILL_ROUNDS=200
TESTS_RAN=0

step() {
    printf '[verifier] %s\n' "$*"
}

# Record REASON in report.json (reward stays 0) and stop. Once the test command has run, no program
# from disk is started any more (the agent's code may have replaced them): the report is written by bash.
give_up() {
    step "unresolved: $1"
    if [ "$TESTS_RAN" = 1 ] && [ "${STOP:-0}" = 1 ]; then
        stop_leftovers "$LOGS/leftover_processes.txt"
    fi
    if [ "$TESTS_RAN" = 1 ] || ! python3 "$TESTS/junit_compare.py" --abort "$1" \
        --expected "$TESTS/expected_tests.json" --reward "$LOGS/reward.txt" --report "$LOGS/report.json"; then
        printf '{"resolved": false, "valid": false, "reasons": ["%s"], "categories": {}, "counts": {}}\n' \
            "$1" >"$LOGS/report.json"
    fi
    echo 0 >"$LOGS/reward.txt"
    exit 0
}

# --- leftover processes (bash builtins only: after the test command no program on disk is trusted) ---

# Sets STAT_STATE, STAT_PPID and STAT_START from /proc/<pid>/stat; fails when the process is gone.
read_stat() {
    local line rest
    read -r line <"/proc/$1/stat" 2>/dev/null || return 1
    rest=${line##*) }
    # shellcheck disable=SC2086
    set -- $rest
    STAT_STATE=$1 STAT_PPID=$2 STAT_START=${20:-}
}

# PROTECTED: PID 1 and this script's ancestry. EXEC_ROOT: whether that ancestry starts at a process
# whose parent is outside the PID namespace (docker exec), i.e. this runs inside a container.
find_ancestry() {
    local pid=$$
    PROTECTED=" 1 " EXEC_ROOT=0
    while [ "$pid" -gt 1 ]; do
        PROTECTED+="$pid "
        read_stat "$pid" || break
        [ "$STAT_PPID" = 0 ] && EXEC_ROOT=1
        pid=$STAT_PPID
    done
}

# The keep-alive children of PID 1 (e.g. `sleep`) as they are before any untrusted code runs: their
# "pid:start" and the device:inode of every file they map. A child of PID 1 is spared later only if it is
# one of them, or maps nothing else (a keep-alive PID 1 started again, from the same binary).
record_keepalive() {
    local d p dev inode _
    KEEP=" " KEEP_FILES=" "
    for d in /proc/[0-9]*; do
        p=${d#/proc/}
        case "$PROTECTED" in *" $p "*) continue ;; esac
        read_stat "$p" || continue
        [ "$STAT_PPID" = 1 ] || continue
        [[ "$d/exe" -ef /bin/sleep || "$d/exe" -ef /usr/bin/sleep ]] || continue
        KEEP+="$p:$STAT_START "
        while read -r _ _ _ dev inode _; do
            [ "$inode" != 0 ] && KEEP_FILES+="$dev:$inode "
        done <"$d/maps"
    done
}

is_keepalive() {  # pid
    local dev inode _
    [ "$STAT_PPID" = 1 ] || return 1
    case "$KEEP" in *" $1:$STAT_START "*) return 0 ;; esac
    [ "$KEEP_FILES" != " " ] || return 1
    while read -r _ _ _ dev inode _; do
        [ "$inode" = 0 ] && continue
        case "$KEEP_FILES" in *" $dev:$inode "*) ;; *) return 1 ;; esac
    done <"/proc/$1/maps" || return 1
    return 0
}

# Kill every other process, round after round, until none is left. $1: file listing the killed (or "").
stop_leftovers() {
    local d p round=0 found args
    local -a argv
    KILLED=0
    while :; do
        found=0
        for d in /proc/[0-9]*; do
            p=${d#/proc/}
            case "$PROTECTED" in *" $p "*) continue ;; esac
            read_stat "$p" || continue
            case "$STAT_STATE" in Z | X | x) continue ;; esac
            is_keepalive "$p" && continue
            if [ -n "$1" ] && [ "$KILLED" -lt 50 ]; then
                argv=()
                mapfile -d '' -t argv <"$d/cmdline" 2>/dev/null
                args="${argv[*]:0:8}"
                printf '%s %s\n' "$p" "${args:0:300}" >>"$1"
            fi
            kill -9 "$p" 2>/dev/null
            found=$((found + 1)) KILLED=$((KILLED + 1))
        done
        [ "$found" -eq 0 ] && return 0
        round=$((round + 1))
        [ "$round" -ge "$MAX_KILL_ROUNDS" ] && return 1
        read -r -t 0.05 -u "$PAUSE_FD" _ 2>/dev/null
    done
}

# The paths of the `diff --git a/<old> b/<new>` headers of the test patch, each restored from HEAD to the
# work tree, or removed (and dropped from the index) where HEAD lacks it: the patch then meets the
# committed files whatever the agent did to them. Runs before the test command: programs on disk are
# still the image's.
restore_test_patch_paths() {
    local line rest old new path
    local -a paths=()
    while IFS= read -r line || [ -n "$line" ]; do
        case "$line" in
            "diff --git a/"*)
                rest=${line#diff --git a/}
                old=${rest%% b/*}
                new=${rest#* b/}
                paths+=("$old")
                [ "$new" != "$old" ] && paths+=("$new")
                ;;
        esac
    done <"$TESTS/test.patch"
    for path in "${paths[@]}"; do
        if git cat-file -e "HEAD:$path" 2>/dev/null; then
            git --literal-pathspecs restore --source=HEAD --worktree -- "$path" 2>/dev/null \
                || give_up "test_patch_failed: cannot restore $path from HEAD"
        else
            git --literal-pathspecs rm -q --cached -f --ignore-unmatch -- "$path" >/dev/null 2>&1
            rm -f -- "$path" || give_up "test_patch_failed: cannot remove $path, which the test patch creates"
        fi
    done
    step "   restored ${#paths[@]} path(s) the test patch touches to the committed version"
}

main() {
    local status stale
    SCORER_ARGS=()

    step "1. resetting $LOGS (reward 0)"
    mkdir -p "$LOGS"
    find "$LOGS" -mindepth 1 -delete
    echo 0 >"$LOGS/reward.txt"

    find_ancestry
    STOP=${VERIFIER_STOP_LEFTOVERS:-auto}
    if [ "$STOP" = auto ]; then
        STOP=0
        if [ "$EXEC_ROOT" = 1 ] && [ -z "${VERIFIER_LOGS_DIR:-}" ] && [ -z "${VERIFIER_TESTS_DIR:-}" ]; then
            STOP=1
        fi
    fi
    if [ "$STOP" = 1 ]; then
        record_keepalive
        # A FIFO nobody writes to: `read -t` on it is a sleep that runs no program.
        PAUSE_FIFO=$(mktemp -u) && mkfifo -m 600 "$PAUSE_FIFO" && exec {PAUSE_FD}<>"$PAUSE_FIFO" \
            || give_up "marker_failed: cannot make a FIFO"
        rm -f -- "$PAUSE_FIFO"
        stop_leftovers "" || give_up "leftover_processes: processes survive $MAX_KILL_ROUNDS rounds of kill"
        step "   stopped $KILLED process(es) left from before the verifier"
    fi

    step "2. reading $TESTS/task.env"
    [ -f "$TESTS/task.env" ] || give_up "task_env_missing: $TESTS/task.env"
    # shellcheck disable=SC1091
    . "$TESTS/task.env"
    [ -n "${REPO_DIR:-}" ] || give_up "task_env_invalid: REPO_DIR is not set"
    [ -n "${TEST_COMMAND:-}" ] || give_up "task_env_invalid: TEST_COMMAND is not set"
    step "   REPO_DIR=$REPO_DIR"
    step "   TEST_COMMAND=$TEST_COMMAND"
    cd "$REPO_DIR" || give_up "repo_dir_missing: $REPO_DIR"

    step "3. applying $TESTS/test.patch"
    [ -f "$TESTS/test.patch" ] || give_up "test_patch_failed: $TESTS/test.patch is missing"
    if [ "${KOTLIN_BENCH_TEST_PATCH:-restore}" = strict ]; then
        step "   strict: applied over the agent's work, nothing restored"
    else
        restore_test_patch_paths
    fi
    if ! git apply --whitespace=nowarn "$TESTS/test.patch"; then
        give_up "test_patch_failed: git apply did not apply $TESTS/test.patch"
    fi

    step "4. deleting stale JUnit reports, creating the start marker"
    stale=$(find "$REPO_DIR" -type f -path '*/build/test-results/*/TEST*.xml' -print -delete 2>/dev/null | wc -l)
    step "   deleted $stale stale report file(s)"
    MARKER=$(mktemp) || give_up "marker_failed: mktemp"
    touch "$MARKER"

    step "5. running the test command (output: $LOGS/test_output.log)"
    TESTS_RAN=1
    bash -c "$TEST_COMMAND" </dev/null >"$LOGS/test_output.log" 2>&1
    status=$?
    printf '\n[verifier] test command exit code: %s\n' "$status" >>"$LOGS/test_output.log"
    step "   exit code $status (recorded only; the JUnit reports decide)"

    if [ "$STOP" = 1 ]; then
        step "5b. stopping the processes the test command left"
        if ! stop_leftovers "$LOGS/leftover_processes.txt"; then
            give_up "leftover_processes: processes survive $MAX_KILL_ROUNDS rounds of kill"
        fi
        step "   stopped $KILLED process(es)"
    fi

    step "6. collecting JUnit reports into $LOGS/junit.xml"
    bash "$TESTS/kotlin_logs_collector.sh" "$REPO_DIR" "$LOGS/junit.xml" "$MARKER"
    status=$?
    rm -f -- "$MARKER"
    [ "$status" -eq 3 ] && give_up "xml_rejected: the JUnit reports exceed the collector's size cap"

    step "7. comparing with $TESTS/expected_tests.json"
    python3 "$TESTS/junit_compare.py" --xml "$LOGS/junit.xml" --expected "$TESTS/expected_tests.json" \
        --reward "$LOGS/reward.txt" --report "$LOGS/report.json" "${SCORER_ARGS[@]}"
    # Again: nothing the collector or the comparison started may outlive this script.
    if [ "$STOP" = 1 ] && ! stop_leftovers "$LOGS/leftover_processes.txt"; then
        give_up "leftover_processes: processes survive $MAX_KILL_ROUNDS rounds of kill"
    fi
    local reward=0
    read -r reward <"$LOGS/reward.txt" 2>/dev/null
    step "reward: ${reward:-0}"
    exit 0
}

# One line: bash has read all of the script before any of it runs.
main "$@"; exit 0
