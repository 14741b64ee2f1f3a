#!/usr/bin/env bash
# Test fixture: a throwaway MariaDB server on loopback for the MySQL storage
# tests (storage/sql, cmd/bench).
#
#   mariadb.sh up DIR    install Debian's mariadb-server if missing, create a
#                        data folder under DIR/mariadb (once), start mariadbd
#                        on a free 127.0.0.1 port, create the user `bench`
#                        (all privileges, random password kept in
#                        DIR/mariadb/password) and print
#                        `export BENCH_TEST_MYSQL_URL=...` on stdout
#   mariadb.sh down DIR  stop that server (the data stays until DIR is removed)
#
# `up` on a server that already runs just prints its URL again. The server
# is for tests only: it listens on 127.0.0.1, flushes its log about once a
# second instead of at every commit, and its root user has no password (it
# is reached through the socket in DIR/mariadb). Everything except the
# export line goes to stderr.
set -euo pipefail

log() { echo "mariadb.sh: $*" >&2; }
die() { log "$*"; exit 1; }

cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || die "usage: $0 up|down DIR"

mdir="$dir/mariadb"
data="$mdir/data"
sock="$mdir/mysqld.sock"
pidfile="$mdir/mariadbd.pid"

install_mariadb() {
  command -v mariadbd >/dev/null && command -v mariadb-install-db >/dev/null && return 0
  [ "$(id -u)" = 0 ] || die "MariaDB is not installed and we are not root: apt-get install mariadb-server"
  log "installing mariadb-server (apt-get)"
  local apt=(env DEBIAN_FRONTEND=noninteractive apt-get -y -q)
  # The package starts the system service after installing it; a
  # policy-rc.d that refuses service starts prevents that (only when none
  # exists, removed afterwards).
  local policy=/usr/sbin/policy-rc.d ours=0
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod 755 "$policy" && ours=1
  fi
  if ! "${apt[@]}" install --no-install-recommends --no-upgrade mariadb-server >&2; then
    "${apt[@]}" update >&2
    "${apt[@]}" install --no-install-recommends --no-upgrade mariadb-server >&2 ||
      { [ "$ours" = 1 ] && rm -f "$policy"; die "apt-get install mariadb-server failed"; }
  fi
  [ "$ours" = 1 ] && rm -f "$policy"
  command -v mariadbd >/dev/null || die "mariadb-server installed but mariadbd is missing"
}

alive() { [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile" 2>/dev/null)" 2>/dev/null; }

port_free() {
  # A connection that fails means nobody listens there.
  ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

root_sql() { mariadb --protocol=socket -S "$sock" -uroot "$@"; }

print_url() {
  echo "export BENCH_TEST_MYSQL_URL='mysql://bench:$(cat "$mdir/password")@127.0.0.1:$(cat "$mdir/port")/'"
}

up() {
  install_mariadb
  mkdir -p "$mdir"
  if alive && [ -f "$mdir/port" ] && [ -f "$mdir/password" ] && root_sql -e 'select 1' >/dev/null 2>&1; then
    log "already running on port $(cat "$mdir/port")"
    print_url
    return 0
  fi
  if alive; then
    log "server in $data does not answer; stopping it"
    kill "$(cat "$pidfile")" 2>/dev/null || true
    sleep 2
  fi
  if [ ! -d "$data/mysql" ]; then
    rm -rf "$data"
    mariadb-install-db --user="$(id -un)" --datadir="$data" --auth-root-authentication-method=normal \
      --skip-test-db >"$mdir/install.log" 2>&1 ||
      { cat "$mdir/install.log" >&2; die "mariadb-install-db failed"; }
  fi
  local port pid tries=0 ok
  while :; do
    tries=$((tries + 1))
    [ "$tries" -le 20 ] || die "could not start MariaDB on a free port (see $mdir/server.log)"
    port=$(shuf -i 20000-59999 -n 1)
    port_free "$port" || continue
    rm -f "$pidfile"
    mariadbd --no-defaults --user="$(id -un)" --datadir="$data" --socket="$sock" --pid-file="$pidfile" \
      --port="$port" --bind-address=127.0.0.1 --skip-name-resolve --log-error="$mdir/server.log" \
      --innodb-flush-log-at-trx-commit=0 --innodb-buffer-pool-size=128M --max-connections=500 \
      --character-set-server=utf8mb4 --collation-server=utf8mb4_bin \
      </dev/null >/dev/null 2>&1 &
    pid=$!
    ok=0
    for _ in $(seq 1 300); do
      if root_sql -e 'select 1' >/dev/null 2>&1; then ok=1; break; fi
      # A server that exited (the port was taken after all) is not waited for.
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    [ "$ok" = 1 ] && break
    log "start on port $port failed; trying another port (see $mdir/server.log)"
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  echo "$port" >"$mdir/port"
  if [ ! -s "$mdir/password" ]; then
    (umask 077 && head -c 18 /dev/urandom | base64 | tr -d '/+=' >"$mdir/password")
  fi
  root_sql -e "CREATE USER IF NOT EXISTS 'bench'@'127.0.0.1' IDENTIFIED BY '$(cat "$mdir/password")';
    ALTER USER 'bench'@'127.0.0.1' IDENTIFIED BY '$(cat "$mdir/password")';
    GRANT ALL ON *.* TO 'bench'@'127.0.0.1' WITH GRANT OPTION;" >&2 ||
    die "could not create the test user"
  log "MariaDB $(root_sql -N -e 'select version()') running on 127.0.0.1:$port (data in $data)"
  print_url
}

down() {
  if ! alive; then
    log "no server running in $data"
    rm -f "$pidfile"
    return 0
  fi
  local pid
  pid=$(cat "$pidfile")
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 300); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    log "mariadbd $pid did not stop on SIGTERM; sending SIGKILL"
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$pidfile"
  log "stopped mariadbd (pid $pid)"
}

case "$cmd" in
  up) up ;;
  down) down ;;
  *) die "usage: $0 up|down DIR" ;;
esac
