#!/usr/bin/env bash
# Test fixture: Chromium, for the test that renders bench report's HTML
# page in a headless browser (cmd/bench TestReportInChromium: the page
# shows the experiment name and every plot with a non-zero size), and for
# cmd/bench TestDashboardInChromium, which drives it with chromedp through
# bench ui's pages (charts, live updates, sorting, trial detail, stop).
#
#   chromium.sh up DIR    install Debian's chromium if missing (only that
#                         package and what it needs; nothing else is
#                         upgraded) and print
#                         `export BENCH_TEST_CHROMIUM=PATH` on stdout
#   chromium.sh down DIR  nothing to stop (each test runs its own
#                         short-lived headless chromium)
#
# Everything except the export line goes to stderr.
set -euo pipefail

log() { echo "chromium.sh: $*" >&2; }
die() { log "$*"; exit 1; }

cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || die "usage: $0 up|down DIR"

find_chromium() { command -v chromium || command -v chromium-browser || true; }

case "$cmd" in
  up)
    bin=$(find_chromium)
    if [ -z "$bin" ]; then
      [ "$(id -u)" = 0 ] || die "chromium is not installed and installing it needs root: apt-get install chromium"
      log "installing chromium"
      export DEBIAN_FRONTEND=noninteractive
      apt=(apt-get -y -q -o DPkg::Lock::Timeout=300)
      if ! "${apt[@]}" install --no-install-recommends --no-upgrade chromium >&2; then
        "${apt[@]}" update >&2
        "${apt[@]}" install --no-install-recommends --no-upgrade chromium >&2
      fi
      bin=$(find_chromium)
      [ -n "$bin" ] || die "chromium was installed but is not on PATH"
    fi
    echo "export BENCH_TEST_CHROMIUM=$bin"
    ;;
  down) ;;
  *) die "usage: $0 up|down DIR" ;;
esac
