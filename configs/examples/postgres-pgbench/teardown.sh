#!/bin/sh
# Stop the throwaway server and remove its files.
set -u
. "$(dirname "$0")/common.sh"
[ -f "$PGDATA/postmaster.pid" ] && as_pg "$BINDIR/pg_ctl" -D "$PGDATA" -m fast -w stop >/dev/null 2>&1
rm -rf "$PGROOT"
