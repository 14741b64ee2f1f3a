#!/usr/bin/env bash
# Test fixture: a real Kubernetes API server (kube-apiserver + etcd) on
# loopback for the Kubernetes engine tests (engines/kubernetes).
#
#   kube.sh build     build etcd and kube-apiserver from the Go module proxy
#                     (wrapper modules, see below) into the cache
#                     ($BENCH_TESTENV_CACHE, default ~/.cache/bench-testenv);
#                     a no-op when both binaries are there
#   kube.sh up DIR    build if needed, start etcd and kube-apiserver on free
#                     127.0.0.1 ports with their data, certificates, pids and
#                     logs under DIR/kube, wait until the API answers, and
#                     print `export BENCH_TEST_KUBECONFIG=DIR/kube/admin.kubeconfig`
#                     (an admin in system:masters) and
#                     `export BENCH_TEST_KUBE_ENGINE_KUBECONFIG=...` (user
#                     bench-engine, with no rights until a test binds the
#                     documented Role to it)
#   kube.sh down DIR  stop both servers
#
# The API server runs with token authentication (a static token file with
# an admin user in system:masters and an unprivileged user "bench-engine"
# that only the tests' RBAC Role grants anything), RBAC authorization
# on, the default admission plugins, and a service account signing key
# (TokenRequest works: the played kubelet gives each pod its service
# account's token). There is no
# controller manager, scheduler or kubelet: nothing runs pods. The tests
# play the Job controller and the kubelet themselves (engines/kubernetes
# kubetest), in the open.
#
# The first build takes about 5-6 minutes of CPU on 2 cores (kube-apiserver
# is large; etcd about 25 s). Binaries are cached outside the clone so later
# runs start in seconds. Set BENCH_KUBE_APISERVER and BENCH_ETCD to use
# binaries you already have (e.g. from envtest's KUBEBUILDER_ASSETS).
#
# Everything except the export lines goes to stderr.
set -euo pipefail

log() { echo "kube.sh: $*" >&2; }
die() { log "$*"; exit 1; }

K8S_VERSION=v1.37.2
K8S_STAGING_VERSION=v0.37.2
ETCD_VERSION=v3.7.3

cache=${BENCH_TESTENV_CACHE:-$HOME/.cache/bench-testenv}
bindir="$cache/kube-$K8S_VERSION-etcd-$ETCD_VERSION"
apiserver=${BENCH_KUBE_APISERVER:-$bindir/kube-apiserver}
etcd=${BENCH_ETCD:-$bindir/etcd}

cmd=${1:-}
dir=${2:-}

build_etcd() {
  [ -x "$etcd" ] && return 0
  command -v go >/dev/null || die "go is needed to build etcd"
  local w="$cache/src/wrap-etcd-$ETCD_VERSION"
  log "building etcd $ETCD_VERSION into $bindir (wrapper module $w; about 30 s)"
  rm -rf "$w" && mkdir -p "$w" "$bindir"
  (
    cd "$w"
    export GOFLAGS=-mod=mod GOTOOLCHAIN=local
    go mod init wrap >/dev/null 2>&1
    printf '//go:build tools\npackage tools\nimport _ "go.etcd.io/etcd/server/v3"\n' >tools.go
    go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION" "go.etcd.io/etcd/api/v3@$ETCD_VERSION" \
      "go.etcd.io/etcd/client/v3@$ETCD_VERSION" "go.etcd.io/etcd/client/pkg/v3@$ETCD_VERSION" \
      "go.etcd.io/etcd/pkg/v3@$ETCD_VERSION" >&2
    go build -trimpath -o "$bindir/etcd.tmp" go.etcd.io/etcd/server/v3 >&2
  )
  mv "$bindir/etcd.tmp" "$bindir/etcd"
}

build_apiserver() {
  [ -x "$apiserver" ] && return 0
  command -v go >/dev/null || die "go is needed to build kube-apiserver"
  local w="$cache/src/wrap-k8s-$K8S_VERSION"
  log "building kube-apiserver $K8S_VERSION into $bindir (wrapper module $w; about 5-6 minutes on 2 cores, peak 3 GB)"
  rm -rf "$w" && mkdir -p "$w" "$bindir"
  (
    cd "$w"
    export GOFLAGS=-mod=mod GOTOOLCHAIN=local
    go mod init wrap >/dev/null 2>&1
    local gomod
    gomod=$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
    [ -n "$gomod" ] || die "could not download k8s.io/kubernetes@$K8S_VERSION"
    # k8s.io/kubernetes replaces every k8s.io/* staging module with ./staging;
    # map each to its published module of the same release.
    {
      echo "require k8s.io/kubernetes $K8S_VERSION"
      echo "replace ("
      grep "=> ./staging" "$gomod" | awk -v v="$K8S_STAGING_VERSION" '{print "\t"$1" => "$1" "v}'
      echo ")"
    } >>go.mod
    printf '//go:build tools\npackage tools\nimport _ "k8s.io/kubernetes/cmd/kube-apiserver"\n' >tools.go
    go mod tidy >&2
    go build -trimpath -ldflags "-X k8s.io/component-base/version.gitVersion=$K8S_VERSION" \
      -o "$bindir/kube-apiserver.tmp" k8s.io/kubernetes/cmd/kube-apiserver >&2
  )
  mv "$bindir/kube-apiserver.tmp" "$bindir/kube-apiserver"
}

build() {
  mkdir -p "$cache"
  # One build at a time per cache (several checkouts may share it).
  exec 9>"$cache/.kube-build.lock"
  flock 9
  build_etcd
  build_apiserver
  flock -u 9
  log "binaries: $etcd, $apiserver"
}

kdir="$dir/kube"

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

stop_pid() {
  local name=$1 pidfile=$2 pid
  [ -f "$pidfile" ] || return 0
  pid=$(cat "$pidfile")
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
      log "$name $pid did not stop on SIGTERM; sending SIGKILL"
      kill -9 "$pid" 2>/dev/null || true
    fi
  fi
  rm -f "$pidfile"
  log "stopped $name (pid $pid)"
}

stop() {
  [ -n "$dir" ] || die "usage: $0 down DIR"
  stop_pid kube-apiserver "$kdir/apiserver.pid"
  stop_pid etcd "$kdir/etcd.pid"
}

# kubeconfig FILE USER TOKEN writes a kubeconfig for one token user.
kubeconfig() {
  local file=$1 user=$2 token=$3
  cat >"$file" <<KC
apiVersion: v1
kind: Config
clusters:
- name: bench-test
  cluster:
    server: https://127.0.0.1:$apiport
    certificate-authority: $kdir/pki/ca.crt
users:
- name: $user
  user:
    token: $token
contexts:
- name: bench-test
  context:
    cluster: bench-test
    user: $user
    namespace: default
current-context: bench-test
KC
  chmod 600 "$file"
}

up() {
  [ -n "$dir" ] || die "usage: $0 up DIR"
  command -v openssl >/dev/null || die "openssl is needed for the test certificates"
  command -v curl >/dev/null || die "curl is needed to probe the servers"
  build
  mkdir -p "$kdir"
  stop
  rm -rf "$kdir/etcd-data" "$kdir/pki"
  mkdir -p "$kdir/pki" "$kdir/etcd-data"
  chmod 700 "$kdir/pki"
  # A throwaway CA, the API server's serving certificate (127.0.0.1),
  # and the service account signing key.
  (
    cd "$kdir/pki"
    openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 2 -subj "/CN=bench-test-ca" 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -keyout apiserver.key -out apiserver.csr -subj "/CN=kube-apiserver" 2>/dev/null
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes.default.svc\n' >ext.cnf
    openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out apiserver.crt -days 2 -extfile ext.cnf 2>/dev/null
    openssl genrsa -out sa.key 2048 2>/dev/null
    openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
  )
  local admin engine
  admin=$(openssl rand -hex 16)
  engine=$(openssl rand -hex 16)
  # Static token users: an admin (system:masters: the tests' own setup,
  # playing the Job controller, the kubelet and the garbage collector)
  # and bench-engine, which only the tests' RBAC Role grants anything.
  {
    echo "$admin,bench-test-admin,bench-test-admin,system:masters"
    echo "$engine,bench-engine,bench-engine"
  } >"$kdir/pki/tokens.csv"
  chmod 600 "$kdir/pki/tokens.csv"

  local ok=0 cport pport pid
  for _ in $(seq 1 5); do
    cport=$(free_port); pport=$(free_port)
    setsid "$etcd" --name bench-test --data-dir "$kdir/etcd-data" \
      --listen-client-urls "http://127.0.0.1:$cport" --advertise-client-urls "http://127.0.0.1:$cport" \
      --listen-peer-urls "http://127.0.0.1:$pport" --initial-advertise-peer-urls "http://127.0.0.1:$pport" \
      --initial-cluster "bench-test=http://127.0.0.1:$pport" --unsafe-no-fsync --log-level warn \
      </dev/null >"$kdir/etcd.log" 2>&1 &
    pid=$!
    echo "$pid" >"$kdir/etcd.pid"
    for _ in $(seq 1 100); do
      if curl -fsS --max-time 2 "http://127.0.0.1:$cport/health" 2>/dev/null | grep -q '"health":"true"'; then ok=1; break; fi
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    [ "$ok" = 1 ] && break
    log "etcd did not answer on port $cport; retrying (log: $kdir/etcd.log)"
    stop_pid etcd "$kdir/etcd.pid"
  done
  [ "$ok" = 1 ] || die "could not start etcd; see $kdir/etcd.log"
  log "etcd on 127.0.0.1:$cport (pid $pid)"

  ok=0
  for _ in $(seq 1 5); do
    apiport=$(free_port)
    setsid "$apiserver" \
      --etcd-servers "http://127.0.0.1:$cport" \
      --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$apiport" \
      --tls-cert-file "$kdir/pki/apiserver.crt" --tls-private-key-file "$kdir/pki/apiserver.key" \
      --client-ca-file "$kdir/pki/ca.crt" \
      --token-auth-file "$kdir/pki/tokens.csv" \
      --authorization-mode RBAC \
      --service-account-issuer https://kubernetes.default.svc \
      --service-account-key-file "$kdir/pki/sa.pub" --service-account-signing-key-file "$kdir/pki/sa.key" \
      --service-cluster-ip-range 10.96.0.0/24 \
      --kubelet-preferred-address-types InternalIP --endpoint-reconciler-type none \
      --cert-dir "$kdir/pki" \
      </dev/null >"$kdir/apiserver.log" 2>&1 &
    pid=$!
    echo "$pid" >"$kdir/apiserver.pid"
    for _ in $(seq 1 600); do
      if curl -fsS --max-time 2 --cacert "$kdir/pki/ca.crt" -H "Authorization: Bearer $admin" \
        "https://127.0.0.1:$apiport/readyz" >/dev/null 2>&1; then ok=1; break; fi
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    [ "$ok" = 1 ] && break
    log "kube-apiserver did not become ready on port $apiport; retrying (log: $kdir/apiserver.log)"
    stop_pid kube-apiserver "$kdir/apiserver.pid"
  done
  [ "$ok" = 1 ] || { stop_pid etcd "$kdir/etcd.pid"; die "could not start kube-apiserver; see $kdir/apiserver.log"; }
  log "kube-apiserver on https://127.0.0.1:$apiport (pid $pid)"
  kubeconfig "$kdir/admin.kubeconfig" bench-test-admin "$admin"
  kubeconfig "$kdir/engine.kubeconfig" bench-engine "$engine"
  echo "export BENCH_TEST_KUBECONFIG=$kdir/admin.kubeconfig"
  echo "export BENCH_TEST_KUBE_ENGINE_KUBECONFIG=$kdir/engine.kubeconfig"
}

case "$cmd" in
  build) build ;;
  up) up ;;
  down) stop ;;
  *) die "usage: $0 build|up DIR|down DIR" ;;
esac
