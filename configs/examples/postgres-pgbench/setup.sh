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
  # A free port below Linux's ephemeral range (32768-60999 by default), so
  # that no outgoing connection can take it between this check and the
  # server's start.
  port=$(shuf -i 20000-32767 -n 1)
  while (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do port=$(shuf -i 20000-32767 -n 1); done
  echo "$port" >"$PGROOT/port"
  as_pg sh -c "cat >> '$PGDATA/postgresql.conf'" <<CONF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = ''
include_if_exists = 'tuning.conf'
CONF
fi
# The trial's settings.
as_pg sh -c "cat > '$PGDATA/tuning.conf'" <<CONF
shared_buffers = '${shared_buffers_mb:?}MB'
work_mem = '${work_mem_kb:?}kB'
synchronous_commit = '${synchronous_commit:?}'
max_wal_size = '${max_wal_size_mb:?}MB'
checkpoint_completion_target = ${checkpoint_completion_target:?}
CONF
as_pg "$BINDIR/pg_ctl" -D "$PGDATA" -m fast -w stop >/dev/null 2>&1 || true
as_pg "$BINDIR/pg_ctl" -D "$PGDATA" -l "$PGROOT/server.log" -w -t 60 start >/dev/null ||
  { echo "the server's log ($PGROOT/server.log) ends:" >&2; tail -n 15 "$PGROOT/server.log" >&2; exit 1; }
port=$(cat "$PGROOT/port")
if [ ! -f "$PGROOT/initialized" ]; then
  as_pg "$BINDIR/pgbench" -h 127.0.0.1 -p "$port" -U postgres -i -q -s "${pgbench_scale:?}" postgres >"$PGROOT/pgbench-init.log" 2>&1
  touch "$PGROOT/initialized"
fi
