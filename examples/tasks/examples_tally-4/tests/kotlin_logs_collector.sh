#!/usr/bin/env bash
# Merge the Gradle JUnit XML reports of one test run into a single <testsuites> document.
#
#   kotlin_logs_collector.sh <repo_dir> <out_xml> [<newer_than_marker_file>]
#
# Collects <repo_dir>/**/build/test-results/*/TEST*.xml (any module depth; regular files only,
# symlinks are not followed). With a marker, only reports modified at or after the marker's
# modification time (nanosecond precision) are collected, so reports left over from before the
# run never count. Each report is copied line by line inside one <testsuites> root, as the published
# collector's bash `while IFS= read -r line` loop copies it: its leading lines that start with `<?xml`
# are left out (the whole line), NUL bytes are dropped, and a last line without a final newline is
# lost; every other byte is copied as it is. The result is checked by junit_compare.py, not here.
# With no report, <out_xml> is an empty <testsuites/>. Runs in the task container: bash, find,
# python3 (standard library only).
#
# Exit status: 0, or 3 when the reports together exceed KOTLIN_BENCH_MAX_REPORT_BYTES (default
# 256 MiB): then <out_xml> is an empty <testsuites/> and nothing was merged (a flood of XML must not
# fill the disk or the memory, nor be copied out of the container).
set -u

if [ "$#" -lt 2 ] || [ "$#" -gt 3 ]; then
    echo "usage: $0 <repo_dir> <out_xml> [<newer_than_marker_file>]" >&2
    exit 2
fi
repo_dir=$1
out_xml=$2
marker=${3:-}

write_empty() {
    printf '%s\n' '<?xml version="1.0" encoding="UTF-8"?>' '<testsuites/>' >"$out_xml"
}

mkdir -p "$(dirname -- "$out_xml")"
if [ -n "$marker" ] && [ ! -f "$marker" ]; then
    echo "collector: marker $marker is missing; collecting nothing" >&2
    write_empty
    exit 0
fi
if [ ! -d "$repo_dir" ]; then
    echo "collector: $repo_dir is not a directory; collecting nothing" >&2
    write_empty
    exit 0
fi

list_file=$(mktemp) || { write_empty; exit 0; }
trap 'rm -f -- "$list_file"' EXIT
find "$repo_dir" -type f -path '*/build/test-results/*/TEST*.xml' -print0 2>/dev/null >"$list_file"

read -r -d '' MERGE_PY <<'PY'
import os
import sys
import tempfile

list_file, out_xml, marker, max_bytes = sys.argv[1:5]
DECLARATION = b"<?xml"
CHUNK = 1 << 20


def copy_lines(report, out):
    """Copy `report` as bash's `while IFS= read -r line; do printf '%s\\n' "$line"; done` does, leading
    `<?xml` lines left out; streamed (a long line is read in chunks)."""
    leading = True  # still among the report's leading declaration lines
    state = "start"  # of the current line: start, undecided (its first bytes), copy or skip
    head = b""
    line_start = out.tell()
    ended = True
    while piece := report.readline(CHUNK):
        ended = piece.endswith(b"\n")
        data = piece.replace(b"\0", b"")
        if state == "start":
            line_start, head, state = out.tell(), b"", "undecided" if leading else "copy"
        if state == "undecided":
            head += data
            data = b""
            if len(head) >= len(DECLARATION) or ended:
                state = "skip" if head.startswith(DECLARATION) else "copy"
                leading = state == "skip"
                data = head if state == "copy" else b""
        if state == "copy":
            out.write(data)
        if ended:
            state = "start"
    if not ended:  # `read` fails on a last line without a newline: the loop never prints it
        out.seek(line_start)
        out.truncate()


with open(list_file, "rb") as stream:
    paths = sorted(p for p in stream.read().split(b"\0") if p)
since = os.stat(marker).st_mtime_ns if marker else None
fresh = [p for p in paths if since is None or os.stat(p).st_mtime_ns >= since]
total = sum(os.stat(p).st_size for p in fresh)
if total > int(max_bytes):
    print(f"collector: {len(fresh)} report file(s) of {total} bytes exceed the cap of {max_bytes} bytes; "
          "collecting nothing", file=sys.stderr)
    sys.exit(3)

out_dir = os.path.dirname(os.path.abspath(out_xml))
fd, tmp = tempfile.mkstemp(dir=out_dir, prefix=".collector.", suffix=".tmp")
try:
    with os.fdopen(fd, "wb") as out:
        out.write(b'<?xml version="1.0" encoding="UTF-8"?>\n')
        if not fresh:
            out.write(b"<testsuites/>\n")
        else:
            out.write(b"<testsuites>\n")
            for path in fresh:
                with open(path, "rb") as report:
                    copy_lines(report, out)
            out.write(b"</testsuites>\n")
    os.chmod(tmp, 0o644)
    os.replace(tmp, out_xml)
except BaseException:
    os.unlink(tmp)
    raise
print(f"collector: {len(fresh)} report file(s) collected, "
      f"{len(paths) - len(fresh)} older than the marker skipped")
for path in fresh:
    print("  " + os.fsdecode(path).encode("utf-8", "backslashreplace").decode("utf-8"))
PY

python3 -c "$MERGE_PY" "$list_file" "$out_xml" "$marker" "${KOTLIN_BENCH_MAX_REPORT_BYTES:-268435456}"
status=$?
if [ "$status" -ne 0 ]; then
    echo "collector: merging failed; writing an empty <testsuites/>" >&2
    write_empty
    [ "$status" -eq 3 ] && exit 3
fi
exit 0
