#!/usr/bin/env bash
# Test fixture: a throwaway PostgreSQL server on loopback for the storage tests.
#
#   postgres.sh up DIR    install Debian's postgresql if missing, create a
#                         cluster under DIR/postgres (once), start it on a free
#                         127.0.0.1 port with fsync off, and print
#                         `export BENCH_TEST_PG_URL=...` on stdout
#   postgres.sh down DIR  stop that server (the data stays until DIR is removed)
#
# `up` on a server that already runs just prints its URL again. The cluster
# trusts every local connection (user postgres, no password): it is for tests
# only. When run as root the server runs as the `postgres` user (initdb refuses
# root). Everything except the export line goes to stderr.
set -euo pipefail

log() { echo "postgres.sh: $*" >&2; }
die() { log "$*"; exit 1; }

cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || die "usage: $0 up|down DIR"

pgdir="$dir/postgres"
data="$pgdir/data"

# as_pg runs a command as the server's user: postgres when we are root.
as_pg() {
  if [ "$(id -u)" = 0 ]; then
    (cd "$pgdir" && runuser -u postgres -- "$@")
  else
    (cd "$pgdir" && "$@")
  fi
}

find_bindir() {
  local d
  d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
  [ -n "$d" ] && [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ] && echo "$d"
}

install_postgres() {
  bindir=$(find_bindir || true)
  [ -n "$bindir" ] && return 0
  [ "$(id -u)" = 0 ] || die "PostgreSQL is not installed and we are not root: apt-get install postgresql"
  log "installing postgresql (apt-get)"
  apt-get update >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends --no-upgrade postgresql >&2
  bindir=$(find_bindir || true)
  [ -n "$bindir" ] || die "postgresql installed but no initdb found under /usr/lib/postgresql"
}

running() {
  [ -f "$data/postmaster.pid" ] && as_pg "$bindir/pg_ctl" -D "$data" status >/dev/null 2>&1
}

port_free() {
  # A connection that fails means nobody listens there.
  ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

print_url() {
  local port
  port=$(cat "$pgdir/port")
  echo "export BENCH_TEST_PG_URL='postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable'"
}

up() {
  install_postgres
  mkdir -p "$pgdir"
  if [ "$(id -u)" = 0 ]; then
    chown postgres: "$pgdir"
    runuser -u postgres -- test -w "$pgdir" ||
      die "user postgres cannot write $pgdir: make $dir and its parents readable by others (chmod 755)"
  fi
  if running && [ -f "$pgdir/port" ]; then
    if ! port_free "$(cat "$pgdir/port")"; then
      log "already running on port $(cat "$pgdir/port")"
      print_url
      return 0
    fi
    log "server in $data does not answer; restarting it"
    as_pg "$bindir/pg_ctl" -D "$data" -m immediate -w stop >&2 || true
  fi
  if [ ! -f "$data/PG_VERSION" ]; then
    rm -rf "$data"
    as_pg "$bindir/initdb" -D "$data" -A trust -U postgres -E UTF8 --locale=C --no-sync >"$pgdir/initdb.log" 2>&1 ||
      { cat "$pgdir/initdb.log" >&2; die "initdb failed"; }
    cat >>"$data/postgresql.conf" <<'CONF'
# test fixture settings (scripts/testenv/postgres.sh)
listen_addresses = '127.0.0.1'
unix_socket_directories = ''
fsync = off
synchronous_commit = off
full_page_writes = off
max_connections = 200
CONF
  fi
  local port tries=0
  while :; do
    tries=$((tries + 1))
    [ "$tries" -le 20 ] || die "could not start PostgreSQL on a free port (see $pgdir/server.log)"
    port=$(shuf -i 20000-59999 -n 1)
    port_free "$port" || continue
    # The last `port` line of postgresql.conf wins.
    as_pg sh -c "echo 'port = $port' >> '$data/postgresql.conf'"
    if as_pg "$bindir/pg_ctl" -D "$data" -l "$pgdir/server.log" -w -t 30 start >&2; then
      break
    fi
    log "start on port $port failed; trying another port"
  done
  echo "$port" >"$pgdir/port"
  log "PostgreSQL $("$bindir/pg_ctl" --version | awk '{print $3}') running on 127.0.0.1:$port (data in $data)"
  print_url
}

down() {
  bindir=$(find_bindir || true)
  if [ -z "$bindir" ] || [ ! -f "$data/postmaster.pid" ]; then
    log "no server running in $data"
    return 0
  fi
  as_pg "$bindir/pg_ctl" -D "$data" -m fast -w stop >&2 || log "pg_ctl stop failed"
}

case "$cmd" in
  up) up ;;
  down) down ;;
  *) die "usage: $0 up|down DIR" ;;
esac
