#!/usr/bin/env bash
# The project's test command (what `make test` and CI run).
#
# It starts the real servers the integration tests need (each script under
# scripts/testenv/ installs what it is missing and starts its server on
# loopback), exports their coordinates as BENCH_TEST_* variables, runs
# go vet and the whole test suite with the race detector, and stops every
# server on exit. BENCH_TEST_STRICT=1 turns a missing server into a test
# failure instead of a skip.
set -euo pipefail
cd "$(dirname "$0")/.."

export BENCH_TEST_STRICT=1
TESTENV_DIR=$(mktemp -d /tmp/bench-testenv.XXXXXX)
export TESTENV_DIR
chmod 755 "$TESTENV_DIR"

started=()
cleanup() {
  local rc=$?
  for ((i=${#started[@]}-1; i>=0; i--)); do
    "${started[$i]}" down "$TESTENV_DIR" || true
  done
  rm -rf "$TESTENV_DIR"
  exit $rc
}
trap cleanup EXIT INT TERM

for s in scripts/testenv/*.sh; do
  [ -x "$s" ] || continue
  echo "== testenv: starting $(basename "$s" .sh)" >&2
  exports=$("$s" up "$TESTENV_DIR")
  started+=("$s")
  eval "$exports"
done

echo "== go vet" >&2
go vet ./...
echo "== gofmt" >&2
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt needed on:" >&2; echo "$unformatted" >&2; exit 1
fi
echo "== go test -race" >&2
go test -race -count=1 -timeout 30m "$@" ./...
