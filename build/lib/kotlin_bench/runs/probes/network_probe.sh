#!/bin/bash
# The health check's network probe (kotlin_bench.runs.network_probe), run in a task container during its agent phase,
# with the phase's environment (https_proxy when the phase is an allowlist). Bash only: no curl needed.
# Usage: network_probe.sh HOST...   For each host, one line: `<host> <how> <answer>`:
#   via the egress proxy:  `<host> proxy <HTTP status line of the proxy's answer to CONNECT host:443>`
#                          (`none` when it gave no answer in time, `unreachable` when the proxy is down);
#   without a proxy:       `<host> direct connected` or `<host> direct failed: <error>` (TCP to host:443).
# Exit status 0 whatever the answers; the host side (kotlin_bench.runs.network_probe) judges them.
set -u
WAIT=${PROBE_WAIT:-20}

via_proxy() {
  local host=$1 address=${https_proxy#*://} line=""
  address=${address%%/*}
  if ! exec 3<>"/dev/tcp/${address%%:*}/${address##*:}" 2>/dev/null; then
    echo "$host proxy unreachable"
    return
  fi
  printf 'CONNECT %s:443 HTTP/1.1\r\nHost: %s:443\r\n\r\n' "$host" "$host" >&3
  if IFS= read -r -t "$WAIT" line <&3; then
    echo "$host proxy ${line%$'\r'}"
  else
    echo "$host proxy none"
  fi
  exec 3>&- 3<&-
}

direct() {
  local host=$1 error
  if error=$(timeout "$WAIT" bash -c 'exec 3<>"/dev/tcp/$1/443"' probe "$host" 2>&1); then
    echo "$host direct connected"
  else
    error=${error%%$'\n'*}  # bash's first line names the cause ("Name or service not known", ...)
    error=${error##*: }
    echo "$host direct failed: ${error:-no answer within ${WAIT}s}"
  fi
}

for host in "$@"; do
  if [ -n "${https_proxy:-}" ]; then via_proxy "$host"; else direct "$host"; fi
done
