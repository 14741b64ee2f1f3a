#!/usr/bin/env bash
# Test fixture: a real OpenSSH server on loopback for the SSH service tests.
#
#   sshd.sh up DIR    install openssh-server/-client if missing, generate
#                     throwaway host and client keys under DIR/sshd, start
#                     /usr/sbin/sshd on a free 127.0.0.1 port and print
#                     `export BENCH_TEST_SSH_*=...` lines on stdout; then
#                     start a second sshd (DIR/sshd2, its own host key, the
#                     same user and client key) on another port, exported as
#                     BENCH_TEST_SSH_PORT2, so that tests have two hosts
#                     (both host keys are in BENCH_TEST_SSH_KNOWN_HOSTS)
#   sshd.sh down DIR  stop both sshd
#
# When run as root, logins go to a throwaway unprivileged user `benchssh`
# (created if missing, with no password and no sudo rights; it is left in
# place because other fixture instances may share it). Otherwise sshd runs
# as the current user and logins go to that user.
#
# Everything except the export lines goes to stderr.
set -euo pipefail

log() { echo "sshd.sh: $*" >&2; }
die() { log "$*"; exit 1; }

cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || die "usage: $0 up|down DIR"

sdir="$dir/sshd"
pidfile="$sdir/sshd.pid"
sdir2="$dir/sshd2"
pidfile2="$sdir2/sshd.pid"

stop() {
  stop_one "$sdir2" "$pidfile2"
  stop_one "$sdir" "$pidfile"
}

stop_one() {
  local sdir=$1 pidfile=$2
  [ -f "$pidfile" ] || { log "no sshd pid file in $sdir; nothing to stop"; return 0; }
  local pid
  pid=$(cat "$pidfile")
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill "$pid"
    for _ in $(seq 1 50); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
      log "sshd $pid did not stop on SIGTERM; sending SIGKILL"
      kill -9 "$pid" 2>/dev/null || true
    fi
  fi
  rm -f "$pidfile"
  log "stopped sshd (pid $pid)"
}

install_openssh() {
  # curl: the remote end-to-end tests use it on the SSH host as the host's
  # own S3 client.
  if [ -x /usr/sbin/sshd ] && command -v ssh-keygen >/dev/null && command -v ssh >/dev/null && command -v curl >/dev/null; then
    return 0
  fi
  [ "$(id -u)" = 0 ] || die "openssh-server is not installed and installing it needs root: apt-get install openssh-server openssh-client"
  log "installing openssh-server and openssh-client"
  export DEBIAN_FRONTEND=noninteractive
  local apt=(apt-get -y -q -o DPkg::Lock::Timeout=300)
  # The package's postinst would start a system-wide sshd on port 22;
  # a policy-rc.d that refuses service starts prevents that (only when
  # none exists, and removed afterwards).
  local policy=/usr/sbin/policy-rc.d ours=0
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod 755 "$policy" && ours=1
  fi
  # Only what is missing, and no upgrade of what is installed: the server
  # is pinned to the installed client's version when there is a client.
  local pkgs=() p
  for p in openssh-server openssh-client curl; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" && continue
    if [ "$p" = openssh-server ] && dpkg-query -W -f='${Status}' openssh-client 2>/dev/null | grep -q "ok installed"; then
      p="openssh-server=$(dpkg-query -W -f='${Version}' openssh-client)"
    fi
    pkgs+=("$p")
  done
  if [ ${#pkgs[@]} -gt 0 ]; then
    if ! "${apt[@]}" install --no-install-recommends --no-upgrade "${pkgs[@]}" >&2; then
      "${apt[@]}" update >&2
      "${apt[@]}" install --no-install-recommends --no-upgrade "${pkgs[@]}" >&2 ||
        "${apt[@]}" install --no-install-recommends --no-upgrade "${pkgs[@]%%=*}" >&2
    fi
  fi
  [ "$ours" = 1 ] && rm -f "$policy"
  [ -x /usr/sbin/sshd ] || die "openssh-server installed but /usr/sbin/sshd is missing"
}

ensure_user() {
  local user=benchssh
  if ! getent passwd "$user" >/dev/null; then
    log "creating throwaway user $user"
    useradd --create-home --shell /bin/bash "$user" >&2
  fi
  # A locked account ('!' password) is refused by sshd without PAM; '*'
  # means "no password login" without locking public-key logins.
  usermod -p '*' "$user" >&2
  echo "$user"
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

up() {
  install_openssh
  mkdir -p "$sdir"
  chmod 755 "$dir" "$sdir"
  if [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
    log "an sshd from $sdir is already running; stopping it first"
    stop
  fi

  local user
  if [ "$(id -u)" = 0 ]; then
    mkdir -p /run/sshd && chmod 755 /run/sshd
    user=$(ensure_user)
  else
    user=$(id -un)
  fi

  rm -f "$sdir"/hostkey* "$sdir"/clientkey*
  ssh-keygen -q -t ed25519 -N '' -C bench-test-host -f "$sdir/hostkey"
  ssh-keygen -q -t ed25519 -N '' -C bench-test-client -f "$sdir/clientkey"
  cp "$sdir/clientkey.pub" "$sdir/authorized_keys"
  chmod 644 "$sdir/authorized_keys"
  if [ "$(id -u)" = 0 ] && ! su -s /bin/sh -c "test -r '$sdir/authorized_keys'" "$user"; then
    die "user $user cannot read $sdir/authorized_keys: DIR and its parents must be world-traversable (mode o+x)"
  fi

  local port
  port=$(start_sshd "$sdir" "$pidfile" "$user")

  printf '[127.0.0.1]:%s %s\n' "$port" "$(cut -d' ' -f1,2 "$sdir/hostkey.pub")" >"$sdir/known_hosts"
  chmod 600 "$sdir/clientkey"

  # The second host: its own host key, the same login and client key.
  mkdir -p "$sdir2"
  chmod 755 "$sdir2"
  if [ -f "$pidfile2" ] && kill -0 "$(cat "$pidfile2")" 2>/dev/null; then
    stop_one "$sdir2" "$pidfile2"
  fi
  rm -f "$sdir2"/hostkey*
  ssh-keygen -q -t ed25519 -N '' -C bench-test-host2 -f "$sdir2/hostkey"
  cp "$sdir/authorized_keys" "$sdir2/authorized_keys"
  chmod 644 "$sdir2/authorized_keys"
  local port2
  port2=$(start_sshd "$sdir2" "$pidfile2" "$user")
  printf '[127.0.0.1]:%s %s\n' "$port2" "$(cut -d' ' -f1,2 "$sdir2/hostkey.pub")" >>"$sdir/known_hosts"

  # Check a real login on each before handing out the coordinates.
  check_login "$port" "$user" "$sdir"
  log "sshd listening on 127.0.0.1:$port (pid $(cat "$pidfile")), login user $user"
  check_login "$port2" "$user" "$sdir2"
  log "second sshd listening on 127.0.0.1:$port2 (pid $(cat "$pidfile2"))"

  cat <<EOF
export BENCH_TEST_SSH_HOST=127.0.0.1
export BENCH_TEST_SSH_PORT=$port
export BENCH_TEST_SSH_USER=$user
export BENCH_TEST_SSH_KEY=$sdir/clientkey
export BENCH_TEST_SSH_KNOWN_HOSTS=$sdir/known_hosts
export BENCH_TEST_SSH_PORT2=$port2
EOF
}

# check_login PORT USER LOGDIR: a real login with the client key.
check_login() {
  local port=$1 user=$2 ldir=$3 ok=0
  for _ in $(seq 1 30); do
    if ssh -q -i "$sdir/clientkey" -p "$port" -o BatchMode=yes -o IdentitiesOnly=yes \
      -o UserKnownHostsFile="$sdir/known_hosts" -o StrictHostKeyChecking=yes \
      -o ConnectTimeout=5 "$user@127.0.0.1" true </dev/null >&2; then
      ok=1
      break
    fi
    sleep 0.2
  done
  [ "$ok" = 1 ] || die "sshd runs on port $port but a test login as $user failed; see $ldir/sshd.log"
}

# start_sshd SDIR PIDFILE USER: start sshd with SDIR's host key and
# authorized_keys on a free port; print the port (logs go to stderr).
start_sshd() {
  local sdir=$1 pidfile=$2 user=$3 port started=0
  for _ in $(seq 1 10); do
    port=$(free_port)
    cat >"$sdir/sshd_config" <<EOF
Port $port
ListenAddress 127.0.0.1
HostKey $sdir/hostkey
PidFile $pidfile
AuthorizedKeysFile $sdir/authorized_keys
AllowUsers $user
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PermitRootLogin no
X11Forwarding no
Subsystem sftp internal-sftp
EOF
    /usr/sbin/sshd -t -f "$sdir/sshd_config" >&2
    rm -f "$pidfile"
    # sshd daemonizes once it listens; a failed bind exits non-zero.
    if /usr/sbin/sshd -f "$sdir/sshd_config" -E "$sdir/sshd.log"; then
      for _ in $(seq 1 50); do
        [ -s "$pidfile" ] && break
        sleep 0.1
      done
      if [ -s "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
        started=1
        break
      fi
    fi
    log "sshd did not start on port $port; retrying (log: $sdir/sshd.log)"
  done
  [ "$started" = 1 ] || die "could not start sshd; see $sdir/sshd.log"

  [ "$started" = 1 ] || die "could not start sshd; see $sdir/sshd.log"
  echo "$port"
}

case "$cmd" in
  up) up ;;
  down) stop ;;
  *) die "usage: $0 up|down DIR" ;;
esac
