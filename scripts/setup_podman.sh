#!/usr/bin/env bash
# Make Podman's Docker-compatible API service available on a Debian host, rootful or rootless, for
# `engine: {kind: podman}`. Idempotent: configuration is written only where it is absent or was written by
# this script, and a service is started only when its socket does not answer.
#
# Usage:
#   scripts/setup_podman.sh [--user NAME ...]    as root: install podman and what rootless needs (uidmap,
#                                                slirp4netns, fuse-overlayfs; mmdebstrap, with which an
#                                                ordinary user makes the OS image), start the
#                                                rootful service (unix:///run/podman/podman.sock); for each
#                                                --user, prepare that user for rootless Podman (subuid and
#                                                subgid ranges, /run/user/<uid>) and start their service
#   scripts/setup_podman.sh                      as an ordinary user (after root ran it once): the user's
#                                                configuration and service ($XDG_RUNTIME_DIR/podman/podman.sock)
# Options: --timeout SECONDS (default 60): how long to wait for a service to answer.
#
# Facts of Podman 4.3 (Debian 12) this script handles (docs/design.md "Podman"):
# - some sandboxes refuse the rlimits Podman sets by default: containers.conf `default_ulimits = []`;
# - each exec leaves conmon processes for `exit_command_delay` seconds (300 by default): 30 here;
# - conmon drops a file named `oom` into the service's working directory: the service runs from a
#   scratch directory;
# - a plain-HTTP registry needs an `insecure` entry: one for 127.0.0.1:5000 (scripts/setup_registry.sh);
# - rootless: XDG_RUNTIME_DIR must be under /run (root makes /run/user/<uid> where no login manager
#   does), /dev/net/tun must be usable, and storage must be native overlay (vfs copies every layer).
set -euo pipefail
cd "$(dirname "$0")/.."

MARK="# written by kotlin-bench scripts/setup_podman.sh"
timeout=60
users=()
while [ $# -gt 0 ]; do
  case "$1" in
    --user) users+=("${2:?--user needs a name}"); shift 2 ;;
    --timeout) timeout=${2:?--timeout needs a value}; shift 2 ;;
    *) echo "setup_podman: unknown option $1" >&2; exit 2 ;;
  esac
done

die() { echo "setup_podman: $*" >&2; exit 1; }
say() { echo "setup_podman: $*"; }
ours() { [ ! -e "$1" ] || grep -qxF "$MARK" "$1"; }
# Write $1 from stdin unless it exists and is not ours; say so either way.
write_conf() {
  local file=$1 text
  text="$MARK"$'\n'"$(cat)"
  if ! ours "$file"; then
    say "leaving $file as it is (not written by this script)"
    return 0
  fi
  mkdir -p "$(dirname "$file")"
  if [ "$(cat "$file" 2>/dev/null)" != "$text" ]; then
    printf '%s\n' "$text" >"$file"
    say "wrote $file"
  fi
}
# The service answers what the workflow asks first (its version), not only its ping: a service whose
# storage was reset under it (`podman system reset`) still pings and hangs on everything else.
answers() { curl -s --max-time 10 --unix-socket "$1" http://d/version 2>/dev/null | grep -q '"ApiVersion"'; }
# Stop this script's service on socket $1 and wait for it to end; false when none ran.
stop_service() {
  local pattern="^podman system service --time=0 unix://$1\$" waited=0
  pkill -f "$pattern" || return 1
  while pgrep -f "$pattern" >/dev/null && [ "$waited" -lt "$((timeout * 2))" ]; do
    sleep 0.5
    waited=$((waited + 1))
  done
}
# Start `podman system service` on socket $1 from the scratch directory $2 unless the socket answers; a
# service of this script's on that socket that does not answer is stopped first.
start_service() {
  local socket=$1 scratch=$2 waited=0
  if answers "$socket"; then
    say "service already answers on $socket"
    return 0
  fi
  stop_service "$socket" && say "stopped a service on $socket that did not answer"
  mkdir -p "$(dirname "$socket")" "$scratch"
  rm -f "$socket"
  say "starting podman system service on $socket (log: $scratch/service.log)"
  # every descriptor of the service goes to its log: nothing keeps this script's output open
  (cd "$scratch" && exec setsid podman system service --time=0 "unix://$socket") \
    >"$scratch/service.log" 2>&1 </dev/null &
  until answers "$socket"; do
    [ "$waited" -lt "$((timeout * 2))" ] || die "no answer on $socket within ${timeout}s: $(tail -n 5 "$scratch/service.log")"
    sleep 0.5
    waited=$((waited + 1))
  done
  say "service ready on $socket ($(podman version --format '{{.Server.Version}}' 2>/dev/null || podman --version))"
}

containers_conf() {
  write_conf "$1" <<'EOF'
[containers]
# Some sandboxes refuse the rlimits Podman sets by default ("error setting rlimit type 7").
default_ulimits = []

[engine]
# conmon processes of finished execs linger this long (default 300 s); the harness reads an exec's exit
# code as soon as its output ends.
exit_command_delay = 30
EOF
}

# ------------------------------------------------------------------------------------------ rootless
if [ "$(id -u)" -ne 0 ]; then
  [ ${#users[@]} -eq 0 ] || die "--user needs root"
  command -v podman >/dev/null 2>&1 || die "podman is not installed; as root run: scripts/setup_podman.sh --user $(id -un)"
  grep -q "^$(id -un):" /etc/subuid 2>/dev/null && grep -q "^$(id -un):" /etc/subgid 2>/dev/null \
    || die "$(id -un) has no subuid/subgid range; as root run: scripts/setup_podman.sh --user $(id -un)"
  runtime=${XDG_RUNTIME_DIR:-/run/user/$(id -u)}
  [ -d "$runtime" ] && [ -w "$runtime" ] \
    || die "$runtime is missing or not writable; as root run: scripts/setup_podman.sh --user $(id -un)"
  export XDG_RUNTIME_DIR=$runtime
  config=${XDG_CONFIG_HOME:-$HOME/.config}/containers
  containers_conf "$config/containers.conf"
  keep_vfs=""
  if ours "$config/storage.conf" && [ ! -e "$config/storage.conf" ]; then
    driver=$(podman info --format '{{.Store.GraphDriverName}}' 2>/dev/null || echo none)
    images=$(podman images -q 2>/dev/null | wc -l)
    if [ "$driver" = vfs ] && [ "$images" -gt 0 ]; then
      keep_vfs=1
      say "WARNING: rootless storage is vfs (slow, every layer copied) and holds images; to switch: podman system reset -f, then run this again"
    elif [ "$driver" = vfs ]; then
      say "switching the empty rootless storage from vfs to overlay"
      # a running service would make the storage again, as vfs, as soon as it is reset
      stop_service "$runtime/podman/podman.sock" || true
      podman system reset -f >/dev/null 2>&1
    fi
  fi
  # without a storage.conf, Podman 4.3 picks vfs for rootless storage (Debian ships none)
  [ -n "$keep_vfs" ] || write_conf "$config/storage.conf" <<'EOF'
[storage]
# native rootless overlay (kernel >= 5.13); without it Podman falls back to vfs when /dev/fuse is closed
driver = "overlay"
EOF
  start_service "$runtime/podman/podman.sock" "$runtime/kotlin-bench-podman"
  echo "setup_podman: use it with the config  engine: {kind: podman}  (socket $runtime/podman/podman.sock)"
  exit 0
fi

# ------------------------------------------------------------------------------------------ root
need=()
for pair in podman:podman newuidmap:uidmap slirp4netns:slirp4netns fuse-overlayfs:fuse-overlayfs \
  iptables:iptables nft:nftables curl:curl mmdebstrap:mmdebstrap; do
  command -v "${pair%%:*}" >/dev/null 2>&1 || need+=("${pair#*:}")
done
if [ ${#need[@]} -gt 0 ]; then
  command -v apt-get >/dev/null 2>&1 || die "missing ${need[*]} and this host has no apt-get"
  say "apt-get install ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq || die "apt-get update failed"
  apt-get install -y -qq "${need[@]}" >/dev/null || die "apt-get install ${need[*]} failed"
fi
containers_conf /etc/containers/containers.conf
write_conf /etc/containers/registries.conf.d/50-kotlin-bench-loopback.conf <<'EOF'
# the loopback registry of scripts/setup_registry.sh speaks plain HTTP (Docker trusts 127.0.0.0/8 by default)
[[registry]]
location = "127.0.0.1:5000"
insecure = true
EOF
start_service /run/podman/podman.sock /run/kotlin-bench-podman

for user in "${users[@]}"; do
  id "$user" >/dev/null 2>&1 || die "no user $user (make one with: useradd -m $user)"
  uid=$(id -u "$user")
  for file in /etc/subuid /etc/subgid; do
    if ! grep -q "^$user:" "$file"; then
      # the first free range of 65536 above 100000
      start=$(awk -F: 'BEGIN{m=100000} {e=$2+$3; if (e>m) m=e} END{print m}' /etc/subuid /etc/subgid)
      say "adding $user:$start:65536 to $file"
      echo "$user:$start:65536" >>"$file"
    fi
  done
  runtime=/run/user/$uid
  if [ ! -d "$runtime" ]; then
    say "making $runtime (no login manager made it)"
    install -d -m 0700 -o "$uid" -g "$(id -g "$user")" "$runtime"
  fi
  if [ -e /dev/net/tun ] && ! runuser -u "$user" -- test -r /dev/net/tun -a -w /dev/net/tun; then
    say "making /dev/net/tun usable by ordinary users (rootless networking; Debian's default mode 0666)"
    chmod 0666 /dev/net/tun
  fi
  say "rootless Podman for $user"
  runuser -u "$user" -- env -i HOME="$(getent passwd "$user" | cut -d: -f6)" USER="$user" \
    PATH=/usr/sbin:/usr/bin:/sbin:/bin XDG_RUNTIME_DIR="$runtime" bash "$PWD/scripts/setup_podman.sh" \
    --timeout "$timeout"
done
