#!/usr/bin/env bash
# kotlin-bench verifier: runs in the task container after the agent phase (tests/ copied to /tests).
#
# Fail closed: reward.txt holds 0 from the first step on; only junit_compare.py, as its last
# action on a resolved run, writes 1. This script always exits 0: the reward file is the verdict.
# VERIFIER_LOGS_DIR and VERIFIER_TESTS_DIR override /logs/verifier and /tests (tests on the host).
set -u

LOGS=${VERIFIER_LOGS_DIR:-/logs/verifier}
TESTS=${VERIFIER_TESTS_DIR:-/tests}

step() {
    printf '[verifier] %s\n' "$*"
}

# Record REASON in report.json (reward stays 0) and stop.
give_up() {
    step "unresolved: $1"
    if ! python3 "$TESTS/junit_compare.py" --abort "$1" --expected "$TESTS/expected_tests.json" \
        --reward "$LOGS/reward.txt" --report "$LOGS/report.json"; then
        printf '{"resolved": false, "valid": false, "reasons": ["%s"], "categories": {}, "counts": {}}\n' \
            "$1" >"$LOGS/report.json"
    fi
    echo 0 >"$LOGS/reward.txt"
    exit 0
}

step "1. resetting $LOGS (reward 0)"
mkdir -p "$LOGS"
find "$LOGS" -mindepth 1 -delete
echo 0 >"$LOGS/reward.txt"

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
if ! git apply --whitespace=nowarn "$TESTS/test.patch"; then
    give_up "test_patch_failed: git apply did not apply $TESTS/test.patch"
fi

step "4. deleting stale JUnit reports, creating the start marker"
stale=$(find "$REPO_DIR" -type f -path '*/build/test-results/*/TEST*.xml' -print -delete 2>/dev/null | wc -l)
step "   deleted $stale stale report file(s)"
MARKER=$(mktemp) || give_up "marker_failed: mktemp"
touch "$MARKER"

step "5. running the test command (output: $LOGS/test_output.log)"
bash -c "$TEST_COMMAND" </dev/null >"$LOGS/test_output.log" 2>&1
status=$?
printf '\n[verifier] test command exit code: %s\n' "$status" >>"$LOGS/test_output.log"
step "   exit code $status (recorded only; the JUnit reports decide)"

step "6. collecting JUnit reports into $LOGS/junit.xml"
bash "$TESTS/kotlin_logs_collector.sh" "$REPO_DIR" "$LOGS/junit.xml" "$MARKER"
rm -f -- "$MARKER"

step "7. comparing with $TESTS/expected_tests.json"
python3 "$TESTS/junit_compare.py" --xml "$LOGS/junit.xml" --expected "$TESTS/expected_tests.json" \
    --reward "$LOGS/reward.txt" --report "$LOGS/report.json"
step "reward: $(cat "$LOGS/reward.txt" 2>/dev/null || echo 0)"
exit 0
