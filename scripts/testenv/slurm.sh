#!/usr/bin/env bash
# Test fixture: a single-node Slurm cluster on this host for the Slurm
# engine tests (engines/slurm, cmd/bench).
#
#   slurm.sh up DIR    install slurm-wlm, munge, slurmdbd and mariadb-server
#                      if missing (apt-get, as root), write
#                      /etc/slurm/slurm.conf for this host, start munged,
#                      mariadbd, slurmdbd, slurmctld and slurmd, wait until
#                      the node is idle, and print `export BENCH_TEST_SLURM=1`,
#                      `export BENCH_TEST_SLURM_PARTITION=...` and
#                      `export BENCH_TEST_SLURM_ACCOUNTING=0|1` on stdout
#   slurm.sh down DIR  stop the daemons this script started (by their pid
#                      files), once no other DIR still uses them
#
# The cluster is one node (this host) in partition `bench` that offers 16
# CPUs whatever the machine has (SlurmdParameters=config_overrides), so
# that 8 one-CPU jobs run at once, with room for a second test package's
# jobs beside them. The scheduler runs every second and
# finished jobs stay known to `scontrol show job` for an hour (MinJobAge).
# Accounting goes through slurmdbd to a MariaDB server on 127.0.0.1 (both
# started here, data under /var/lib/bench-testenv-slurm/db), so that sacct
# knows jobs that scontrol has forgotten; when mariadb-server or slurmdbd
# cannot be installed or started, the cluster runs without accounting and
# BENCH_TEST_SLURM_ACCOUNTING is 0.
#
# Slurm is a system-wide service (one slurmctld on port 6817, one config in
# /etc/slurm), so its state, logs and pid files live under
# /var/lib/bench-testenv-slurm and /run/bench-testenv-slurm, not under DIR.
# `up` with a Slurm already running from this script's config only checks it
# (restarting slurmctld and slurmd when the config changed) and prints the
# exports; a cluster configured by someone else is used as it is (its
# default partition) when it answers, never reconfigured. An existing
# /etc/slurm/slurm.conf that this script did not write is never replaced.
#
# Two test runs on one machine share the cluster without breaking each
# other:
#  - each `up DIR` is recorded (a run whose DIR is gone has ended);
#  - `up` checks what it reuses: slurmctld answers (scontrol ping), the
#    node is idle, and with accounting slurmdbd answers (sacctmgr); a dead
#    or unanswering daemon that this script started is started again, and
#    BENCH_TEST_SLURM_ACCOUNTING is 1 only when sacct really works;
#  - while another run uses the cluster, `up` never rewrites the config or
#    restarts a healthy daemon under it;
#  - each daemon this script starts is owned by the DIR whose `up` started
#    it ($run/NAME.owner). `down DIR` stops only the daemons DIR owns, and
#    only when no other run uses them; while one does, it hands them over
#    to that run (said on stderr), whose `down` stops them. A reusing run's
#    `down` stops nothing of another run's. Daemons whose owner has ended
#    without `down` are stopped by the last run's `down`.
#
# Everything except the export lines goes to stderr.
set -euo pipefail

log() { echo "slurm.sh: $*" >&2; }
die() { log "$*"; exit 1; }

cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || die "usage: $0 up|down DIR"

partition=bench
conf=/etc/slurm/slurm.conf
marker="# written by bench scripts/testenv/slurm.sh"
state=/var/lib/bench-testenv-slurm
run=/run/bench-testenv-slurm
users="$run/users"
dirkey=$(printf '%s' "$(cd "$dir" 2>/dev/null && pwd -P || echo "$dir")" | md5sum | cut -c1-16)

alive() { [ -f "$1" ] && kill -0 "$(cat "$1" 2>/dev/null)" 2>/dev/null; }

# own NAME: this DIR started daemon NAME.
own() { echo "$dirkey" >"$run/$1.owner"; }

# other_users prints the keys of the other runs using the cluster (their
# DIR still exists); records of ended runs are removed.
other_users() {
  local f
  for f in "$users"/*; do
    [ -f "$f" ] || continue
    [ "$(basename "$f")" = "$dirkey" ] && continue
    if [ -d "$(cat "$f")" ]; then
      basename "$f"
    else
      rm -f "$f" # its DIR is gone: a run that ended without down
    fi
  done
}

# accounting_works: slurmdbd answers sacctmgr.
accounting_works() {
  timeout 15 sacctmgr -n -P show cluster format=cluster >/dev/null 2>&1
}

# heal_accounting: with accounting configured, a slurmdbd that this script
# started and that does not answer sacctmgr is started again (it is of no
# use to anyone as it is); print_exports then says whether sacct works.
heal_accounting() {
  grep -q '^AccountingStorageType=accounting_storage/slurmdbd' "$conf" 2>/dev/null || return 0
  accounting_works && return 0
  [ -f "$run/slurmdbd.pid" ] || return 0
  log "slurmdbd does not answer sacctmgr; starting it again"
  stop_pid slurmdbd "$run/slurmdbd.pid"
  /usr/sbin/slurmdbd >&2 || { log "slurmdbd did not start (see $state/log/slurmdbd.log)"; return 0; }
  own slurmdbd
  for _ in $(seq 1 100); do
    accounting_works && return 0
    sleep 0.2
  done
}

print_exports() {
  local acct=0
  local cfg
  cfg=$(timeout 10 scontrol show config 2>/dev/null || true)
  if grep -q '^AccountingStorageType *= *accounting_storage/slurmdbd' <<<"$cfg"; then
    if accounting_works; then
      acct=1
    else
      log "the cluster is configured with accounting but slurmdbd does not answer sacctmgr: BENCH_TEST_SLURM_ACCOUNTING=0"
    fi
  fi
  cat <<EOF
export BENCH_TEST_SLURM=1
export BENCH_TEST_SLURM_PARTITION=$1
export BENCH_TEST_SLURM_ACCOUNTING=$acct
EOF
}

install_slurm() {
  if [ -x /usr/sbin/slurmctld ] && [ -x /usr/sbin/slurmd ] && [ -x /usr/sbin/munged ] && command -v sbatch >/dev/null; then
    return 0
  fi
  [ "$(id -u)" = 0 ] || die "Slurm is not installed and installing it needs root: apt-get install slurm-wlm munge"
  log "installing slurm-wlm and munge (apt-get)"
  export DEBIAN_FRONTEND=noninteractive
  local apt=(apt-get -y -q -o DPkg::Lock::Timeout=300)
  # The packages' postinst would start system-wide daemons with the
  # packaged config; a policy-rc.d that refuses service starts prevents
  # that (only when none exists, and removed afterwards).
  local policy=/usr/sbin/policy-rc.d ours=0
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod 755 "$policy" && ours=1
  fi
  if ! "${apt[@]}" install --no-install-recommends --no-upgrade slurm-wlm munge >&2; then
    "${apt[@]}" update >&2
    "${apt[@]}" install --no-install-recommends --no-upgrade slurm-wlm munge >&2
  fi
  # Accounting is optional: the cluster runs without it when these fail.
  if ! "${apt[@]}" install --no-install-recommends --no-upgrade slurmdbd mariadb-server >&2; then
    log "could not install slurmdbd and mariadb-server; running without accounting (no sacct)"
  fi
  [ "$ours" = 1 ] && rm -f "$policy"
  [ -x /usr/sbin/slurmctld ] || die "slurm-wlm installed but /usr/sbin/slurmctld is missing"
}

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# start_accounting starts mariadbd and slurmdbd (when installed) and
# reports whether slurmdbd answers.
start_accounting() {
  [ -x /usr/sbin/slurmdbd ] && command -v mariadbd >/dev/null && command -v mariadb-install-db >/dev/null || return 1
  local db="$state/db" sock="$run/mysql.sock" port
  mkdir -p "$db" "$state/log"
  if ! alive "$run/mariadbd.pid"; then
    if [ ! -d "$db/data/mysql" ]; then
      rm -rf "$db/data"
      mariadb-install-db --user=root --datadir="$db/data" --auth-root-authentication-method=normal \
        --skip-test-db >"$db/install.log" 2>&1 || { log "mariadb-install-db failed (see $db/install.log)"; return 1; }
    fi
    port=$(cat "$db/port" 2>/dev/null || true)
    if [ -z "$port" ] || ! port_free "$port"; then
      for _ in $(seq 1 20); do
        port=$(shuf -i 20000-59999 -n 1)
        port_free "$port" && break
      done
    fi
    echo "$port" >"$db/port"
    rm -f "$run/mariadbd.pid"
    mariadbd --user=root --datadir="$db/data" --socket="$sock" --bind-address=127.0.0.1 --port="$port" \
      --pid-file="$run/mariadbd.pid" --log-error="$state/log/mariadb.log" --skip-name-resolve \
      --innodb-flush-log-at-trx-commit=0 --innodb-buffer-pool-size=64M --innodb-lock-wait-timeout=900 \
      </dev/null >/dev/null 2>&1 &
    own mariadbd
  fi
  port=$(cat "$db/port")
  local ok=0
  for _ in $(seq 1 150); do
    if mariadb -S "$sock" -uroot -e 'select 1' >/dev/null 2>&1; then ok=1; break; fi
    sleep 0.1
  done
  [ "$ok" = 1 ] || { log "mariadbd did not answer (see $state/log/mariadb.log)"; return 1; }
  mariadb -S "$sock" -uroot -e "create database if not exists slurm_acct_db;
    create user if not exists 'slurm'@'127.0.0.1';
    grant all on slurm_acct_db.* to 'slurm'@'127.0.0.1';" >&2 || return 1
  local dbdconf=/etc/slurm/slurmdbd.conf
  if [ -e "$dbdconf" ] && ! head -n 1 "$dbdconf" | grep -qF "$marker"; then
    log "$dbdconf exists and was not written by this script; running without accounting"
    return 1
  fi
  (umask 077 && cat >"$dbdconf" <<CONF
$marker
AuthType=auth/munge
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort=6819
SlurmUser=root
PidFile=$run/slurmdbd.pid
LogFile=$state/log/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$port
StorageUser=slurm
StorageLoc=slurm_acct_db
CONF
  )
  if ! alive "$run/slurmdbd.pid"; then
    rm -f "$run/slurmdbd.pid"
    /usr/sbin/slurmdbd >&2 || { log "slurmdbd did not start (see $state/log/slurmdbd.log)"; return 1; }
    own slurmdbd
  fi
  # (sacctmgr cannot ask yet: slurm.conf names slurmdbd only afterwards.)
  for _ in $(seq 1 100); do
    if alive "$run/slurmdbd.pid" && ! port_free 6819; then
      return 0
    fi
    sleep 0.1
  done
  log "slurmdbd does not answer (see $state/log/slurmdbd.log); running without accounting"
  return 1
}

# node_ready: sinfo answers and this partition's node is idle or busy.
node_ready() {
  local st
  # Nobody listens on slurmctld's port: do not wait for sinfo's retries.
  if head -n 1 "$conf" 2>/dev/null | grep -qF "$marker" && port_free 6817; then
    return 1
  fi
  st=$(timeout 10 sinfo -h -p "$1" -o '%t' 2>/dev/null | head -n 1) || return 1
  case "$st" in idle* | mix* | alloc* | comp*) return 0 ;; esac
  return 1
}

start_munge() {
  if timeout 5 munge -n </dev/null 2>/dev/null | timeout 5 unmunge >/dev/null 2>&1; then
    return 0
  fi
  mkdir -p /etc/munge /var/log/munge /run/munge /var/lib/munge
  if [ ! -s /etc/munge/munge.key ]; then
    dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key 2>/dev/null
  fi
  chown -R munge:munge /etc/munge /var/log/munge /run/munge /var/lib/munge
  chmod 700 /etc/munge
  chmod 400 /etc/munge/munge.key
  # A stale socket or pid file from a killed munged makes it refuse to start.
  if ! alive /run/munge/munged.pid; then
    rm -f /run/munge/munged.pid /run/munge/munge.socket.2 /run/munge/munge.socket.2.lock
  fi
  runuser -u munge -- /usr/sbin/munged --pid-file=/run/munge/munged.pid >&2 ||
    die "munged did not start (see /var/log/munge/munged.log)"
  cp /run/munge/munged.pid "$run/munged.pid"
  own munged
  for _ in $(seq 1 50); do
    if munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1; then
      return 0
    fi
    sleep 0.1
  done
  die "munged runs but munge -n | unmunge fails (see /var/log/munge/munged.log)"
}

write_conf() {
  local host mem acct=$1
  host=$(hostname -s)
  mem=$(free -m | awk '/^Mem:/{print $2}')
  mem=$((mem > 2048 ? mem - 1024 : mem))
  mkdir -p /etc/slurm "$state/ctld" "$state/d" "$state/log"
  cat >"$conf.tmp" <<CONF
$marker
# A single-node test cluster; see the script for what it is for.
ClusterName=bench
SlurmctldHost=$host(127.0.0.1)
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
ReturnToService=2
SlurmUser=root
SlurmctldPidFile=$run/slurmctld.pid
SlurmdPidFile=$run/slurmd.pid
SlurmdSpoolDir=$state/d
StateSaveLocation=$state/ctld
SlurmctldLogFile=$state/log/slurmctld.log
SlurmdLogFile=$state/log/slurmd.log
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=1,bf_interval=1,sched_min_interval=0,batch_sched_delay=0
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
# The node offers 16 CPUs whatever the machine has: 8 trials at once,
# with room for a second test package's jobs beside them.
SlurmdParameters=config_overrides
JobCompType=jobcomp/none
$acct
JobAcctGatherType=jobacct_gather/none
# Finished jobs stay visible to squeue -t all and scontrol for an hour.
MinJobAge=3600
# A job at its time limit gets SIGTERM, then SIGKILL 2 s later.
KillWait=2
OverTimeLimit=0
MessageTimeout=10
SlurmdTimeout=300
InactiveLimit=0
NodeName=$host NodeAddr=127.0.0.1 CPUs=16 Boards=1 SocketsPerBoard=1 CoresPerSocket=16 ThreadsPerCore=1 RealMemory=$mem State=UNKNOWN
PartitionName=$partition Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
CONF
}

up() {
  install_slurm
  mkdir -p "$run" "$users"
  local others
  others=$(other_users)
  echo "$dir" >"$users/$dirkey"

  if [ -e "$conf" ] && ! head -n 1 "$conf" | grep -qF "$marker"; then
    # Someone else's Slurm: use its default partition if it answers.
    local p
    p=$(timeout 10 sinfo -h -o '%P' 2>/dev/null | grep '\*$' | head -n 1 | tr -d '*' || true)
    if [ -n "$p" ] && node_ready "$p"; then
      log "using the existing Slurm cluster (partition $p; $conf was not written by this script)"
      print_exports "$p"
      return 0
    fi
    die "$conf exists and was not written by this script, and its cluster does not answer; not replacing it"
  fi

  start_munge
  local acct="AccountingStorageType=accounting_storage/none"
  if start_accounting; then
    acct="AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=6819"
  fi
  local old
  old=$(cat "$conf" 2>/dev/null || true)
  write_conf "$acct"
  if [ "$old" != "$(cat "$conf.tmp")" ] && [ -n "$old" ] && [ -n "$others" ] && node_ready "$partition"; then
    # Another run's tests use this cluster: a new config would restart
    # slurmctld under them. Use it as it is.
    log "another test run uses this Slurm ($(echo $others | wc -w) more); keeping its config as it is"
    rm -f "$conf.tmp"
  else
    mv "$conf.tmp" "$conf"
  fi
  if [ "$old" = "$(cat "$conf")" ] && node_ready "$partition" && timeout 10 scontrol ping 2>/dev/null | grep -q 'is UP'; then
    log "Slurm already runs with partition $partition; using it"
    heal_accounting
    print_exports "$partition"
    return 0
  fi
  # slurmctld reads the accounting and node settings at start only.
  if [ "$old" != "$(cat "$conf")" ]; then
    if alive "$run/slurmd.pid" || alive "$run/slurmctld.pid"; then
      log "the config changed: restarting slurmctld and slurmd"
    fi
    stop_pid slurmd "$run/slurmd.pid"
    stop_pid slurmctld "$run/slurmctld.pid"
  fi
  if ! alive "$run/slurmctld.pid"; then
    rm -f "$run/slurmctld.pid"
    port_free 6817 || die "something other than this script's slurmctld listens on port 6817; stop it first"
    /usr/sbin/slurmctld >&2 || die "slurmctld did not start (see $state/log/slurmctld.log)"
    own slurmctld
  fi
  if ! alive "$run/slurmd.pid"; then
    rm -f "$run/slurmd.pid"
    port_free 6818 || die "something other than this script's slurmd listens on port 6818; stop it first"
    /usr/sbin/slurmd >&2 || die "slurmd did not start (see $state/log/slurmd.log)"
    own slurmd
  fi
  local host
  host=$(hostname -s)
  for i in $(seq 1 300); do
    if node_ready "$partition"; then
      log "Slurm is up: partition $partition, node $host with 16 CPUs (logs in $state/log)"
      heal_accounting
      print_exports "$partition"
      return 0
    fi
    # A node left DOWN or DRAINED by an earlier run comes back by hand.
    if [ $((i % 20)) = 0 ]; then
      timeout 10 scontrol update NodeName="$host" State=RESUME >/dev/null 2>&1 || true
    fi
    sleep 0.1
  done
  sinfo >&2 || true
  die "the Slurm node did not become idle within 30 s (see $state/log/slurmctld.log and slurmd.log)"
}

stop_pid() {
  local name=$1 pidfile=$2 pid
  alive "$pidfile" || { rm -f "$pidfile"; return 0; }
  pid=$(cat "$pidfile")
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 100); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    log "$name $pid did not stop on SIGTERM; sending SIGKILL"
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$pidfile"
  log "stopped $name (pid $pid)"
}

# owner_live NAME: daemon NAME's owner is a run still using the cluster.
owner_live() {
  local key
  key=$(cat "$run/$1.owner" 2>/dev/null) || return 1
  [ -f "$users/$key" ] && [ -d "$(cat "$users/$key")" ]
}

down() {
  [ -d "$run" ] || return 0
  rm -f "$users/$dirkey"
  local others heir name
  others=$(other_users)
  heir=$(echo "$others" | head -n 1)
  for name in slurmd slurmctld slurmdbd mariadbd munged; do
    alive "$run/$name.pid" || { rm -f "$run/$name.pid" "$run/$name.owner"; continue; }
    if [ "$(cat "$run/$name.owner" 2>/dev/null)" = "$dirkey" ]; then
      if [ -n "$heir" ]; then
        # Another run's tests still use it: hand it over, its down stops it.
        echo "$heir" >"$run/$name.owner"
        log "$name is still used by another test run ($(cat "$users/$heir")); leaving it running, that run's down stops it"
        continue
      fi
    elif owner_live "$name" || [ -n "$others" ]; then
      continue # another run's daemon: never stopped here
    fi
    # Ours and nobody else's, or left by runs that ended without down.
    stop_pid "$name" "$run/$name.pid"
    rm -f "$run/$name.owner"
  done
}

case "$cmd" in
  up) up ;;
  down) down ;;
  *) die "usage: $0 up|down DIR" ;;
esac
