#!/usr/bin/env bash
# Per-trial overhead and 16-runner throughput of two revisions, measured in
# one run, interleaved (the order of the two builds alternates from round to
# round), so that the machine's drift hits both alike:
#
#   scripts/bench-before-after.sh [BASE [ROUNDS [CASES]]]
#
# BASE (default 482b609, main before the one-trial-lifecycle work) is built
# in a temporary git worktree; "new" is the working tree. CASES is a
# space-separated subset of: overhead storage throughput (default all).
#
#   overhead    200 sequential trivial trials (bench/overhead, SQLite file):
#               the whole bench process, start-up included, per trial
#   storage     storage/sql BenchmarkTrial (queue + start + finish of one
#               trial, 1000 trials) on SQLite, PostgreSQL and MariaDB, one
#               writer and the -parallel variants (4 writers)
#   throughput  launcher BenchmarkParallelThroughput/runners=16 (64 trials
#               of 1 s, SQLite); the new build also with --no-canary
#
# STORAGE_CASES (default "sqlite postgres postgres-parallel mysql
# mysql-parallel") picks the BenchmarkTrial cases; the "-poll" ones
# (e.g. mysql-poll, mysql-parallel-poll) add a change-feed reader polling
# as the driver does. BASE_FILES (space-separated paths) are copied from
# the working tree into the base before it is built, so that both builds
# run the same benchmark code (e.g. BASE_FILES=storage/sql/bench_test.go
# for the -poll cases on a base that lacks them).
#
# PostgreSQL and MariaDB are started with scripts/testenv (their Debian
# packages installed if missing) unless BENCH_TEST_PG_URL and
# BENCH_TEST_MYSQL_URL are set. Output: one line per measurement, then a
# table of medians and of the median per-round ratio new/base with its
# range. Raw lines are kept in $OUT (default /tmp/bench-before-after.txt).
set -euo pipefail
cd "$(dirname "$0")/.."
BASE=${1:-482b609}
ROUNDS=${2:-5}
CASES=${3:-overhead storage throughput}
OUT=${OUT:-/tmp/bench-before-after.txt}
root=$(pwd)
work=$(mktemp -d /tmp/bench-before-after.XXXXXX)
chmod 755 "$work" # the postgres user must reach its data folder under it
cleanup() {
  git -C "$root" worktree remove --force "$work/base-src" >/dev/null 2>&1 || true
  if [ -n "${started_env:-}" ]; then
    scripts/testenv/postgres.sh down "$work/env" >/dev/null 2>&1 || true
    scripts/testenv/mariadb.sh down "$work/env" >/dev/null 2>&1 || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

echo "building base ($BASE) and new (working tree)..." >&2
git worktree add --detach "$work/base-src" "$BASE" >/dev/null 2>&1
for f in ${BASE_FILES:-}; do cp "$f" "$work/base-src/$f"; done
build() { # $1 = source dir, $2 = name
  (cd "$1" && CGO_ENABLED=0 go build -o "$work/$2-bench" ./cmd/bench &&
    go test -c -o "$work/$2-sql.test" ./storage/sql &&
    go test -c -o "$work/$2-launcher.test" ./launcher)
}
build "$work/base-src" base
build "$root" new

if [[ " $CASES " == *" storage "* ]] && [ -z "${BENCH_TEST_PG_URL:-}${BENCH_TEST_MYSQL_URL:-}" ]; then
  started_env=1
  eval "$(scripts/testenv/postgres.sh up "$work/env")"
  eval "$(scripts/testenv/mariadb.sh up "$work/env")"
fi

: > "$OUT"
now() { date +%s%N; }
overhead() { # $1 = build; prints ms per trial
  local d="$work/ov-$1"; rm -rf "$d"; mkdir -p "$d"
  local s; s=$(now)
  "$work/$1-bench" --environment overhead/env.jsonc --optimizer overhead/optimizer.jsonc \
    --config-path "$root/bench" --max_suggestions 200 --experiment_id overhead \
    --storage "{\"class\": \"mlos_bench.storage.sql.storage.SqlStorage\", \"config\": {\"drivername\": \"sqlite\", \"database\": \"$d/db.sqlite\"}}" \
    --no-progress --log_level WARNING > "$d/out" 2> "$d/err" || { cat "$d/err" >&2; exit 1; }
  echo "$(( ($(now) - s) / 1000 ))" | awk '{ printf "%.3f\n", $1 / 1000 / 200 }'
}
storagecase() { # $1 = build, $2 = case; prints ms per trial
  # Anchored: "BenchmarkTrial/..." also matched BenchmarkTrials, which then
  # ran 1000 loads of 1000 trials (about 2 minutes, unreported) after each
  # measurement.
  (cd "$root/storage/sql" && "$work/$1-sql.test" -test.run XXX -test.bench "^BenchmarkTrial\$/^$2\$" -test.benchtime 1000x) |
    awk '/^BenchmarkTrial/ { for (i = 1; i <= NF; i++) if ($(i+1) == "ns/op") printf "%.3f\n", $i / 1e6 }'
}
throughputcase() { # $1 = build, $2 = extra args; prints ideal fraction
  (cd "$root/launcher" && THROUGHPUT_ARGS="$2" "$work/$1-launcher.test" -test.run XXX \
    -test.bench 'BenchmarkParallelThroughput/runners=16$' -test.benchtime 1x) |
    awk '/^BenchmarkParallelThroughput/ { for (i = 1; i <= NF; i++) if ($(i+1) == "ideal-fraction") print $i }'
}
record() { # $1 = case, $2 = build, $3 = round, $4 = value
  [ -n "$4" ] || { echo "no figure for $1 $2" >&2; exit 1; }
  echo "$1 $2 $3 $4" | tee -a "$OUT"
}

overhead base > /dev/null; overhead new > /dev/null # warm the caches
for r in $(seq "$ROUNDS"); do
  if [ $((r % 2)) = 1 ]; then order="base new"; else order="new base"; fi
  for c in $CASES; do
    case $c in
      overhead) for b in $order; do record overhead "$b" "$r" "$(overhead "$b")"; done ;;
      storage)
        for k in ${STORAGE_CASES:-sqlite postgres postgres-parallel mysql mysql-parallel}; do
          for b in $order; do record "storage-$k" "$b" "$r" "$(storagecase "$b" "$k")"; done
        done ;;
      throughput)
        for b in $order; do record throughput16 "$b" "$r" "$(throughputcase "$b" "")"; done
        record throughput16 new-nocanary "$r" "$(throughputcase new --no-canary)" ;;
    esac
  done
done

python3 - "$OUT" <<'EOF'
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
data = {}
for case, build, rnd, v in rows:
    data.setdefault(case, {}).setdefault(build, {})[int(rnd)] = float(v)
print("\ncase                   base     new      new/base median [min, max] over rounds   (ms per trial; throughput: ideal fraction)")
for case, b in data.items():
    base, new = b.get("base", {}), b.get("new", {})
    common = sorted(set(base) & set(new))
    if not common:
        continue
    ratios = [new[r] / base[r] for r in common]
    print(f"{case:22s} {st.median(base.values()):7.3f}  {st.median(new.values()):7.3f}  "
          f"{st.median(ratios):.2f} [{min(ratios):.2f}, {max(ratios):.2f}]  n={len(common)}")
    if "new-nocanary" in b:
        nc = b["new-nocanary"]
        rr = [nc[r] / base[r] for r in sorted(set(nc) & set(base))]
        print(f"{case + ' --no-canary':22s} {'':7s}  {st.median(nc.values()):7.3f}  "
              f"{st.median(rr):.2f} [{min(rr):.2f}, {max(rr):.2f}]")
EOF
