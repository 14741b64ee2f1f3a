#!/usr/bin/env bash
# Test fixture: a moto server (a local emulation of the AWS APIs) on
# loopback for the S3, EC2 and SSM service tests.
#
#   moto.sh up DIR    start `python3 -m moto.server` (or `moto_server`) on a
#                     free 127.0.0.1 port with its pid and log under DIR/moto,
#                     wait until it answers, and print
#                     `export BENCH_TEST_MOTO_ENDPOINT=http://127.0.0.1:PORT`
#   moto.sh down DIR  stop that server
#
# moto keeps its state in memory only. Tests talk to it with static fake
# credentials and region us-east-1 that they set themselves; nothing here
# reads or writes ~/.aws.
#
# Everything except the export line goes to stderr.
set -euo pipefail

log() { echo "moto.sh: $*" >&2; }
die() { log "$*"; exit 1; }

cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || die "usage: $0 up|down DIR"

mdir="$dir/moto"
pidfile="$mdir/moto.pid"

stop() {
  [ -f "$pidfile" ] || { log "no moto pid file in $mdir; nothing to stop"; return 0; }
  local pid
  pid=$(cat "$pidfile")
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
      log "moto $pid did not stop on SIGTERM; sending SIGKILL"
      kill -9 "$pid" 2>/dev/null || true
    fi
  fi
  rm -f "$pidfile"
  log "stopped moto (pid $pid)"
}

# moto_cmd prints the command that starts moto's server, or fails.
moto_cmd() {
  if python3 -c 'import moto.server' 2>/dev/null; then
    echo "python3 -m moto.server"
    return 0
  fi
  if command -v moto_server >/dev/null; then
    echo "moto_server"
    return 0
  fi
  return 1
}

install_moto() {
  moto_cmd >/dev/null && return 0
  log "moto is not installed; trying pip (moto[server] 5.x)"
  python3 -m pip install --quiet 'moto[server]>=5,<6' >&2 || true
  moto_cmd >/dev/null || die "moto is not available: install it with \`python3 -m pip install 'moto[server]>=5,<6'\`"
}

free_port() {
  local p
  for _ in $(seq 1 50); do
    p=$((20000 + RANDOM % 40000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      echo "$p"
      return 0
    fi
  done
  die "no free port found"
}

# answers PORT succeeds once moto serves its API on PORT.
answers() {
  if command -v curl >/dev/null; then
    curl -fsS -o /dev/null --max-time 2 "http://127.0.0.1:$1/moto-api/data.json" 2>/dev/null
  else
    python3 - "$1" <<'EOF' 2>/dev/null
import sys, urllib.request
urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/moto-api/data.json", timeout=2).read()
EOF
  fi
}

up() {
  install_moto
  mkdir -p "$mdir"
  if [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
    log "a moto server from $mdir is already running; stopping it first"
    stop
  fi
  local start port pid ok=0
  read -r -a start <<<"$(moto_cmd)"
  for _ in $(seq 1 10); do
    port=$(free_port)
    # setsid: the server must not die with the shell that started it, and
    # its output must not hold the caller's stdout open.
    setsid "${start[@]}" -H 127.0.0.1 -p "$port" </dev/null >"$mdir/moto.log" 2>&1 &
    pid=$!
    echo "$pid" >"$pidfile"
    for _ in $(seq 1 150); do
      if answers "$port"; then ok=1; break; fi
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    [ "$ok" = 1 ] && break
    log "moto did not answer on port $port; retrying (log: $mdir/moto.log)"
    kill "$pid" 2>/dev/null || true
    rm -f "$pidfile"
  done
  [ "$ok" = 1 ] || die "could not start moto; see $mdir/moto.log"
  log "moto listening on 127.0.0.1:$port (pid $pid)"
  echo "export BENCH_TEST_MOTO_ENDPOINT=http://127.0.0.1:$port"
}

case "$cmd" in
  up) up ;;
  down) stop ;;
  *) die "usage: $0 up|down DIR" ;;
esac
