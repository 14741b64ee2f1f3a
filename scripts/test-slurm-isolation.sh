#!/usr/bin/env bash
# Checks that two test runs share the single-node Slurm of slurm.sh without
# breaking each other (issue 29): a reusing run's `down` stops nothing of
# the run that started the daemons; a slurmdbd that died is noticed and
# started again by the next `up`, which does not restart slurmctld under
# the other run; the starter's `down` while another run uses the cluster
# hands the daemons over; the last `down` stops them.
#
#   scripts/test-slurm-isolation.sh
#
# Needs root, and no other run using the cluster (it ends with the daemons
# stopped): it refuses to run otherwise.
set -euo pipefail
cd "$(dirname "$0")/testenv"
run=/run/bench-testenv-slurm
fail() { echo "FAIL: $*" >&2; exit 1; }
pid() { cat "$run/$1.pid" 2>/dev/null || echo none; }
owner() { cat "$run/$1.owner" 2>/dev/null || echo none; }
key() { printf '%s' "$(cd "$1" && pwd -P)" | md5sum | cut -c1-16; }
for f in "$run"/users/*; do
  [ -f "$f" ] && [ -d "$(cat "$f")" ] && fail "the cluster is in use by $(cat "$f"): run this test alone"
done
A=$(mktemp -d) B=$(mktemp -d) C=$(mktemp -d)
trap 'rm -rf "$A" "$B" "$C"' EXIT

exA=$(./slurm.sh up "$A")
ctld=$(pid slurmctld)
kill -0 "$ctld" || fail "slurmctld does not run after up A"
acct=$(sed -n 's/^export BENCH_TEST_SLURM_ACCOUNTING=//p' <<<"$exA")
[ "$(owner slurmctld)" = "$(key "$A")" ] || fail "slurmctld's owner is $(owner slurmctld), want A"

./slurm.sh up "$B" >/dev/null
[ "$(pid slurmctld)" = "$ctld" ] || fail "up B restarted slurmctld"
./slurm.sh down "$B"
kill -0 "$ctld" || fail "down B (a reusing run) stopped slurmctld, started by A"
sinfo -h >/dev/null || fail "the cluster does not answer after down B"

if [ "$acct" = 1 ]; then
  # The database side dies under the runs.
  kill -9 "$(pid slurmdbd)"
  exC=$(./slurm.sh up "$C")
  grep -q 'BENCH_TEST_SLURM_ACCOUNTING=1' <<<"$exC" || fail "up C after slurmdbd died: $exC"
  sacct -n -X -S now-1hour >/dev/null || fail "sacct does not work after up C"
  [ "$(owner slurmdbd)" = "$(key "$C")" ] || fail "the restarted slurmdbd is not C's"
else
  ./slurm.sh up "$C" >/dev/null
fi
[ "$(pid slurmctld)" = "$ctld" ] || fail "up C restarted slurmctld under A"

./slurm.sh down "$A"
kill -0 "$ctld" || fail "down A stopped slurmctld while C uses it"
[ "$(owner slurmctld)" = "$(key "$C")" ] || fail "down A did not hand slurmctld over to C"
sinfo -h >/dev/null || fail "the cluster does not answer after down A"

./slurm.sh down "$C"
! kill -0 "$ctld" 2>/dev/null || fail "the last down did not stop slurmctld"
echo "PASS: slurm.sh runs share the cluster without breaking each other" >&2
