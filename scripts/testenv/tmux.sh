#!/usr/bin/env bash
# Test fixture: tmux, for the end-to-end test of the passive runner's
# terminal prompt (cmd/bench TestPassivePromptUnderTmux drives bench in a
# tmux session of its own, on its own socket).
#
#   tmux.sh up DIR    install tmux if missing and print
#                     `export BENCH_TEST_TMUX=PATH` on stdout
#   tmux.sh down DIR  nothing to stop (each test kills its own tmux server)
#
# Everything except the export line goes to stderr.
set -euo pipefail

log() { echo "tmux.sh: $*" >&2; }
die() { log "$*"; exit 1; }

cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || die "usage: $0 up|down DIR"

case "$cmd" in
  up)
    if ! command -v tmux >/dev/null; then
      [ "$(id -u)" = 0 ] || die "tmux is not installed and installing it needs root: apt-get install tmux"
      log "installing tmux"
      export DEBIAN_FRONTEND=noninteractive
      apt=(apt-get -y -q -o DPkg::Lock::Timeout=300)
      if ! "${apt[@]}" install --no-install-recommends --no-upgrade tmux >&2; then
        "${apt[@]}" update >&2
        "${apt[@]}" install --no-install-recommends --no-upgrade tmux >&2
      fi
    fi
    echo "export BENCH_TEST_TMUX=$(command -v tmux)"
    ;;
  down) ;;
  *) die "usage: $0 up|down DIR" ;;
esac
