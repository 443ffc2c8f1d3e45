#!/usr/bin/env bash
# A single-machine Slurm cluster from Debian's packages, for the Slurm test and for trying
# profiles/slurm on one machine: munge, MariaDB + slurmdbd (accounting, so that `sacct` -- the executor
# plugin's status source -- answers), slurmctld and one compute node (this host) in partition `debug`,
# and the Snakemake executor plugin. Idempotent: starts only what is not running, and writes the
# configuration only where it is absent or was written by this script (an existing cluster's
# /etc/slurm/slurm.conf is never touched: the script stops with an error instead).
# MariaDB listens on 127.0.0.1 only; slurmctld, slurmd and slurmdbd (ports 6817-6819) have no bind-address
# setting and listen on every interface, but answer only requests signed with this host's munge key.
# Usage: scripts/setup_slurm.sh        (root, Debian 12; no systemd needed)
set -euo pipefail
cd "$(dirname "$0")/.."

MARK="# written by kotlin-bench scripts/setup_slurm.sh"
CONF=/etc/slurm/slurm.conf
DBD_CONF=/etc/slurm/slurmdbd.conf
CGROUP_CONF=/etc/slurm/cgroup.conf
STATE=/var/lib/slurm
LOGS=/var/log/slurm
PARTITION=debug
PLUGIN="snakemake-executor-plugin-slurm==2.8.0"

die() { echo "setup_slurm: $*" >&2; exit 1; }
say() { echo "setup_slurm: $*"; }
running() { pgrep -x "$1" >/dev/null 2>&1; }
# Wait up to $1 seconds for the command in the remaining arguments to succeed.
wait_for() {
  local seconds=$1 what=$2
  shift 2
  for _ in $(seq 1 "$((seconds * 2))"); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.5
  done
  die "$what did not come up within ${seconds}s (logs: $LOGS, /var/log/kotlin-bench-mariadb.log)"
}
ours() { [ ! -e "$1" ] || grep -qxF "$MARK" "$1"; }

[ "$(id -u)" -eq 0 ] || die "needs root (it installs packages and starts system daemons)"

# ---------------------------------------------------------------- packages
need=()
for pair in slurmctld:slurmctld slurmd:slurmd munged:munge sinfo:slurm-client slurmdbd:slurmdbd \
  mariadbd:mariadb-server; do
  command -v "${pair%%:*}" >/dev/null 2>&1 || [ -x "/usr/sbin/${pair%%:*}" ] || need+=("${pair#*:}")
done
if [ ${#need[@]} -gt 0 ]; then
  command -v apt-get >/dev/null 2>&1 || die "missing ${need[*]} and this host has no apt-get"
  say "apt-get install ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq || die "apt-get update failed"
  apt-get install -y -qq "${need[@]}" >/dev/null || die "apt-get install ${need[*]} failed"
fi
if ! python3 -c 'import snakemake_executor_plugin_slurm' 2>/dev/null; then
  say "pip install $PLUGIN"
  python3 -m pip install -q --disable-pip-version-check "$PLUGIN"
fi

# ---------------------------------------------------------------- configuration
for file in "$CONF" "$DBD_CONF" "$CGROUP_CONF"; do
  ours "$file" || die "$file exists and was not written by this script; this host has its own Slurm (use it with profiles/slurm)"
done
host=$(hostname -s)
cpus=$(nproc)
# Slurm refuses a node that reports less memory than configured: stay below what the kernel sees.
memory=$(($(free -m | awk '/^Mem:/{print $2}') - 1024))
mkdir -p "$STATE/slurmctld" "$STATE/slurmd" "$LOGS" /run/slurm
chown -R slurm:slurm "$STATE" "$LOGS" /run/slurm
cat >"$CONF.new" <<EOF
$MARK
ClusterName=kotlinbench
SlurmctldHost=$host(127.0.0.1)
SlurmUser=slurm
AuthType=auth/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
ReturnToService=2
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
StateSaveLocation=$STATE/slurmctld
SlurmdSpoolDir=$STATE/slurmd
SlurmctldPidFile=/run/slurm/slurmctld.pid
SlurmdPidFile=/run/slurm/slurmd.pid
SlurmctldLogFile=$LOGS/slurmctld.log
SlurmdLogFile=$LOGS/slurmd.log
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
# keep the executor plugin's --comment (rule and wildcards of each job) for sacct -o Comment
AccountingStoreFlags=job_comment
JobAcctGatherType=jobacct_gather/linux
JobCompType=jobcomp/none
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$memory State=UNKNOWN
PartitionName=$PARTITION Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
cat >"$DBD_CONF.new" <<EOF
$MARK
AuthType=auth/munge
DbdHost=localhost
SlurmUser=slurm
PidFile=/run/slurm/slurmdbd.pid
LogFile=$LOGS/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=localhost
StorageUser=slurm
StorageLoc=slurm_acct_db
EOF
printf '%s\nCgroupPlugin=autodetect\n' "$MARK" >"$CGROUP_CONF.new"
changed=0
for file in "$CONF" "$DBD_CONF" "$CGROUP_CONF"; do
  if ! cmp -s "$file.new" "$file" 2>/dev/null; then
    mv "$file.new" "$file"
    changed=1
  else
    rm -f "$file.new"
  fi
done
chown slurm:slurm "$DBD_CONF"
chmod 600 "$DBD_CONF"

# ---------------------------------------------------------------- daemons
if ! running munged; then
  say "starting munged"
  mkdir -p /run/munge && chown munge:munge /run/munge
  su -s /bin/sh munge -c /usr/sbin/munged
fi
wait_for 10 munge munge -n

if ! running mariadbd; then
  say "starting mariadbd (loopback; log /var/log/kotlin-bench-mariadb.log)"
  mkdir -p /run/mysqld && chown mysql:mysql /run/mysqld
  setsid nohup /usr/sbin/mariadbd --user=mysql --bind-address=127.0.0.1 \
    >/var/log/kotlin-bench-mariadb.log 2>&1 </dev/null &
fi
wait_for 30 MariaDB mariadb -e 'SELECT 1'
# slurmdbd runs as the OS user slurm and logs in through the socket as that user: no password to keep.
mariadb -e "CREATE DATABASE IF NOT EXISTS slurm_acct_db;
  CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED VIA unix_socket;
  GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';"

if [ "$changed" -eq 1 ]; then
  # Only the daemons this configuration started (their pid files), so that they reread it.
  for daemon in slurmd slurmctld slurmdbd; do
    pid=$(cat "/run/slurm/$daemon.pid" 2>/dev/null || true)
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
      say "configuration changed: stopping $daemon ($pid)"
      kill "$pid"
      while kill -0 "$pid" 2>/dev/null; do sleep 0.2; done
    fi
  done
fi
if ! running slurmdbd; then
  say "starting slurmdbd"
  /usr/sbin/slurmdbd
fi
wait_for 30 slurmdbd sacctmgr -n show cluster
if ! running slurmctld; then
  say "starting slurmctld"
  /usr/sbin/slurmctld
fi
if ! running slurmd; then
  say "starting slurmd"
  /usr/sbin/slurmd
fi
node_ready() { sinfo -h -N -o '%T' | grep -Eq '^(idle|mixed|allocated)'; }
wait_for 60 "the compute node" node_ready
# slurmctld registers the cluster with slurmdbd on start; the status checks (sacct) need it there.
wait_for 30 "the cluster's accounting record" sh -c "sacctmgr -n -P show cluster format=cluster | grep -qx kotlinbench"
say "ready: partition $PARTITION, node $host ($cpus CPUs, $memory MB), accounting in slurmdbd"
sinfo
