#!/bin/sh
# Start (first trial) or restart (later trials) a throwaway PostgreSQL on
# 127.0.0.1 with the trial's settings. The tunable values arrive as
# environment variables and are written to a config file, never spliced
# into a command line.
set -eu
. "$(dirname "$0")/common.sh"
mkdir -p "$PGROOT"
[ "$(id -u)" = 0 ] && chown postgres: "$PGROOT"
if [ ! -f "$PGDATA/PG_VERSION" ]; then
  as_pg "$BINDIR/initdb" -D "$PGDATA" -A trust -U postgres -E UTF8 --locale=C >"$PGROOT/initdb.log" 2>&1 ||
    { cat "$PGROOT/initdb.log" >&2; exit 1; }
  as_pg sh -c "cat >> '$PGDATA/postgresql.conf'" <<CONF
listen_addresses = '127.0.0.1'
unix_socket_directories = ''
include_if_exists = 'port.conf'
include_if_exists = 'tuning.conf'
CONF
fi
# A free port below Linux's ephemeral range (32768-60999 by default), so
# that no outgoing connection can take it between this check and the
# server's start; another server may still take it first, and then the
# start below picks another one.
pick_port() {
  port=$(shuf -i 20000-32767 -n 1)
  while (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do port=$(shuf -i 20000-32767 -n 1); done
  echo "$port" >"$PGROOT/port"
  as_pg sh -c "echo 'port = $port' > '$PGDATA/port.conf'"
}
[ -f "$PGDATA/port.conf" ] || pick_port
# The trial's settings.
as_pg sh -c "cat > '$PGDATA/tuning.conf'" <<CONF
shared_buffers = '${shared_buffers_mb:?}MB'
work_mem = '${work_mem_kb:?}kB'
synchronous_commit = '${synchronous_commit:?}'
max_wal_size = '${max_wal_size_mb:?}MB'
checkpoint_completion_target = ${checkpoint_completion_target:?}
CONF
as_pg "$BINDIR/pg_ctl" -D "$PGDATA" -m fast -w stop >/dev/null 2>&1 || true
tries=0
until as_pg "$BINDIR/pg_ctl" -D "$PGDATA" -l "$PGROOT/server.log" -w -t 60 start >/dev/null; do
  tries=$((tries + 1))
  if [ "$tries" -lt 5 ] && grep -q "Address already in use" "$PGROOT/server.log"; then
    pick_port # another server took the port since it was picked
    continue
  fi
  echo "the server's log ($PGROOT/server.log) ends:" >&2; tail -n 15 "$PGROOT/server.log" >&2; exit 1
done
port=$(cat "$PGROOT/port")
if [ ! -f "$PGROOT/initialized" ]; then
  as_pg "$BINDIR/pgbench" -h 127.0.0.1 -p "$port" -U postgres -i -q -s "${pgbench_scale:?}" postgres >"$PGROOT/pgbench-init.log" 2>&1
  touch "$PGROOT/initialized"
fi
