#!/usr/bin/env bash
# Checks that a user's clone passes the README's test command in the
# packages whose tests read mlos_bench's schema test cases.
#
# It copies the checkout (tracked and untracked, not ignored, files: what a
# clone with your changes holds) into a temporary folder with no ../shared
# beside it, and runs those packages' tests there with BENCH_TEST_STRICT=1
# (as `make test` does) and without BENCH_CONFORMANCE_DIR and
# BENCH_TEST_REQUIRE_CONFORMANCE. They must pass, every conformance test
# must be skipped with a message that says how to run it, and
# FuzzParseParams must run on its own seeds. Extra arguments go to
# `go test` (e.g. -race). CI runs it after `make test` (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."

pkgs=(./schemas ./configs/check ./tunables ./internal/testenv)
skipped=(TestConformance TestConformanceSchemaOnly TestConformanceGoodTunableParams)

tmp=$(mktemp -d /tmp/bench-fresh-clone.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/bench"
git ls-files -z --cached --others --exclude-standard |
  while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
  tar --null -T - -cf - | tar -xf - -C "$tmp/bench"
[ ! -e "$tmp/shared" ] || { echo "test-fresh-clone: $tmp/shared exists" >&2; exit 1; }

echo "== go test in a copy without ../shared: $tmp/bench" >&2
out="$tmp/out.txt"
rc=0
(cd "$tmp/bench" &&
  env -u BENCH_CONFORMANCE_DIR -u BENCH_TEST_REQUIRE_CONFORMANCE BENCH_TEST_STRICT=1 \
    go test -count=1 -v -run 'Conformance|FuzzParseParams' "$@" "${pkgs[@]}") >"$out" 2>&1 || rc=$?
grep -E '^(---|ok|FAIL|PASS)|skipped:|running without' "$out" >&2 || true
fail() { echo "test-fresh-clone: FAIL: $*" >&2; exit 1; }
[ "$rc" -eq 0 ] || { cat "$out" >&2; fail "go test exited $rc in a clone without ../shared"; }
for t in "${skipped[@]}"; do
  grep -q -- "--- SKIP: $t " "$out" || fail "$t was not skipped"
done
grep -q -- "--- PASS: FuzzParseParams " "$out" || fail "FuzzParseParams did not run on its own seeds"
n=$(grep -c 'skipped: this test needs mlos_bench.s schema test cases.*set BENCH_CONFORMANCE_DIR' "$out" || true)
[ "$n" -ge "${#skipped[@]}" ] || fail "only $n skip messages say how to run the tests"
echo "test-fresh-clone: ok: a clone without ../shared passes, ${#skipped[@]} conformance tests skipped with the message" >&2
