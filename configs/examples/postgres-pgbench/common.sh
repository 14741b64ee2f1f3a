# Shared by setup.sh, run.sh and teardown.sh: where the throwaway server
# lives and how to run its commands (as the postgres user when we are root:
# PostgreSQL refuses to run as root).
PGROOT="${TMPDIR:-/tmp}/bench-pgbench-${experiment_id:?}"
PGDATA="$PGROOT/data"
BINDIR=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
[ -x "$BINDIR/pg_ctl" ] || { echo "PostgreSQL binaries not found under /usr/lib/postgresql/*/bin" >&2; exit 1; }
as_pg() {
  if [ "$(id -u)" = 0 ]; then
    (cd "$PGROOT" && runuser -u postgres -- "$@")
  else
    (cd "$PGROOT" && "$@")
  fi
}
