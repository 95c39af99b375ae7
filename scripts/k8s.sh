#!/usr/bin/env bash
# A Kubernetes control plane on this machine, for tests (docs/k8s-harness.md).
#
#   scripts/k8s.sh build            builds kube-apiserver, kube-controller-manager, kube-scheduler and
#                                   kubectl from test/k8s/harness (once per pinned version, cached)
#   scripts/k8s.sh up --dir DIR     starts etcd and the control plane on loopback under DIR and writes
#                                   DIR/kubeconfig (admin) and DIR/env (KUBECONFIG, PATH)
#   scripts/k8s.sh up --dir DIR --with-kubelet
#                                   also a node: containerd and kubelet of this machine under DIR/node,
#                                   the images imported, Cellium applied as its DaemonSet, the node
#                                   Ready (scripts/lib/k8s-node.sh)
#   scripts/k8s.sh down --dir DIR   stops what `up` started (by PID), removes the node's pods,
#                                   mounts and cgroups, and removes DIR
#   scripts/k8s.sh check            why the binaries cannot be built here (exit 3), are not built
#                                   yet (exit 4), or where they are (exit 0); one line
#   scripts/k8s.sh prepare          builds when Go and the module proxy are there; otherwise says in
#                                   one line why the Kubernetes tests will skip (scripts/test.sh)
#
# The cache is ${XDG_CACHE_HOME:-~/.cache}/cellium-k8s (CELLIUM_K8S_CACHE overrides): the Go module
# and build caches, and <version>/bin-<key of go.mod and go.sum> with the binaries. A lock keeps concurrent builds to one.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SELF="$ROOT/scripts/k8s.sh"
MOD="$ROOT/test/k8s/harness"
VERSION=$(awk '$1 == "require" { $1 = "" ; $0 = $0 } $1 == "k8s.io/kubernetes" { print $2; exit }' "$MOD/go.mod")
GO_NEED=$(awk '$1 == "go" { print $2 }' "$MOD/go.mod")
# The commands to build: the tool block of the harness's go.mod (k8s.io/kubernetes/cmd/<name>).
mapfile -t TOOLS < <(sed -n '/^tool (/,/^)/p' "$MOD/go.mod" | awk '/k8s.io\/kubernetes\/cmd\// { print $1 }')
CACHE="${CELLIUM_K8S_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cellium-k8s}"
# Keyed by go.mod and go.sum, so worktrees whose harness differs (one adds a command) each keep
# their own binaries instead of rebuilding over each other's.
BIN="$CACHE/$VERSION/bin-$(cat "$MOD/go.mod" "$MOD/go.sum" | sha256sum | cut -c1-12)"
SERVICE_CIDR=10.96.0.0/16
# The IPv6 service range: the apiserver is dual-stack (a Service asks for IPv6 or both by ipFamilyPolicy).
SERVICE_CIDR6=fd00:10:96::/108
SERVICE_IP=10.96.0.1
CLUSTER_CIDR=10.244.0.0/16
ETCD="${CELLIUM_TEST_ETCD:-etcd}"
# Stop order for `down` (the reverse of the start order); their parent, the supervisor, is last.
COMPONENTS=(kube-scheduler kube-controller-manager kube-apiserver etcd)

die() {
  echo "k8s: $*" >&2
  exit 1
}

# --- Go and the build ------------------------------------------------------------------------

# find_go, go_env and k8s_ldflags (CELLIUM_*_GO names a Go to use instead of the one found)
# shellcheck source=lib/go.sh
source "$ROOT/scripts/lib/go.sh"
# node_up and node_down (up --with-kubelet)
# shellcheck source=lib/k8s-node.sh
source "$ROOT/scripts/lib/k8s-node.sh"

# The link flags: stripped, with the version the binaries report (scripts/lib/go.sh).
ldflags() {
  k8s_ldflags "$VERSION"
}

# What the binaries were built from: a change of go.mod, go.sum or the link flags rebuilds them.
stamp() {
  { cat "$MOD/go.mod" "$MOD/go.sum"; ldflags; } | sha256sum | cut -d' ' -f1
}

built() {
  [ -f "$BIN/.stamp" ] && [ "$(cat "$BIN/.stamp")" = "$(stamp)" ] || return 1
  local t
  for t in "${TOOLS[@]}"; do [ -x "$BIN/${t##*/}" ] || return 1; done
}

# One line on why the binaries cannot be built here, or nothing when they can.
unbuildable() {
  local go out
  go=$(find_go "${CELLIUM_K8S_GO:-}")
  if [ -z "$go" ]; then
    local looked="PATH's go or /usr/local/go/bin/go"
    [ -z "${CELLIUM_K8S_GO:-}" ] || looked="CELLIUM_K8S_GO=$CELLIUM_K8S_GO"
    echo "no Go >= $GO_NEED ($looked; Debian's Go 1.19 is too old): the Kubernetes binaries cannot be built"
    return
  fi
  mkdir -p "$CACHE"
  if ! out=$(cd "$MOD" && go_env timeout 120 "$go" mod download "k8s.io/kubernetes@$VERSION" 2>&1); then
    echo "Go module proxy unreachable ($(go_env "$go" env GOPROXY)): cannot download k8s.io/kubernetes $VERSION: $(echo "$out" | tail -n1)"
  fi
}

check() {
  if built; then
    echo "k8s: Kubernetes $VERSION binaries ready in $BIN"
    return 0
  fi
  local why
  why=$(unbuildable)
  if [ -n "$why" ]; then
    echo "k8s: $why"
    return 3
  fi
  echo "k8s: Kubernetes $VERSION binaries not built yet: run npm run k8s -- build (scripts/test.sh does before tap)"
  return 4
}

build() {
  local go why start tmp
  mkdir -p "$CACHE/$VERSION"
  exec 9>"$CACHE/$VERSION/build.lock"
  flock 9
  if built; then
    echo "k8s: Kubernetes $VERSION binaries ready in $BIN"
    return 0
  fi
  why=$(unbuildable)
  [ -z "$why" ] || die "$why"
  go=$(find_go "${CELLIUM_K8S_GO:-}")
  echo "k8s: building ${TOOLS[*]##*/} of k8s.io/kubernetes $VERSION (test/k8s/harness, $("$go" version | cut -d' ' -f3)) into $BIN"
  echo "k8s: once per version; cold (download and compile) takes tens of minutes on 2 cores, warm a minute"
  start=$(date +%s)
  tmp="$CACHE/$VERSION/bin.tmp.$$"
  rm -rf "$tmp"
  mkdir -p "$tmp"
  # A line a minute, so a log watcher sees a long cold build is alive.
  (
    trap 'kill $! 2>/dev/null; exit 0' TERM
    while :; do
      sleep 60 &
      wait $!
      echo "k8s: still building ($(($(date +%s) - start)) s)"
    done
  ) &
  local ticker=$! rc=0
  # One invocation for all commands: they share most packages, compiled once.
  (cd "$MOD" && GOMAXPROCS=2 go_env nice -n 10 "$go" build -trimpath -ldflags="$(ldflags)" -o "$tmp/" "${TOOLS[@]}") || rc=$?
  kill "$ticker" 2>/dev/null || true
  wait "$ticker" 2>/dev/null || true
  if [ $rc -ne 0 ]; then
    rm -rf "$tmp"
    die "go build of ${TOOLS[*]##*/} failed (output above)"
  fi
  stamp >"$tmp/.stamp"
  rm -rf "$BIN"
  mv "$tmp" "$BIN"
  echo "k8s: built in $(($(date +%s) - start)) s: $BIN"
}

prepare() {
  local rc=0
  check >/dev/null || rc=$?
  case $rc in
    0) check ;;
    3) echo "$(check || true); the Kubernetes tests (test/k8s/) will skip" ;;
    *) build ;;
  esac
}

# --- The control plane -------------------------------------------------------------------------

# The starttime of a process (field 22 of /proc/PID/stat), so `down` never signals a reused PID.
starttime() {
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  stat=${stat##*) }
  awk '{ print $20 }' <<<"$stat"
}

# Whether the process recorded as NAME in DIR still runs (a zombie does not count).
running() {
  local pid st now state
  read -r pid st <"$DIR/pids/$1" 2>/dev/null || return 1
  now=$(starttime "$pid") || return 1
  [ "$now" = "$st" ] || return 1
  state=$(awk '{ print $1 }' <<<"$(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null)")
  [ "$state" != Z ]
}

# Starts NAME as a child of this shell (the supervisor, which reaps it), output in DIR/logs.
launch() {
  local name=$1
  shift
  "$@" </dev/null >"$DIR/logs/$name.log" 2>&1 &
  local pid=$!
  local st
  st=$(starttime "$pid") || die "$name exited at once: $(tail -n5 "$DIR/logs/$name.log")"
  echo "$pid $st" >"$DIR/pids/$name"
}

# Stops NAME: SIGTERM, SIGKILL after 10 s; waits until it is gone.
stop_one() {
  local name=$1 pid i
  running "$name" || return 0
  read -r pid _ <"$DIR/pids/$name"
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 100; i++)); do
    running "$name" || return 0
    sleep 0.1
  done
  echo "k8s: $name (pid $pid) ignored SIGTERM for 10 s: SIGKILL" >&2
  kill -KILL "$pid" 2>/dev/null || true
  for ((i = 0; i < 50; i++)); do
    running "$name" || return 0
    sleep 0.1
  done
  die "$name (pid $pid) still runs after SIGKILL"
}

stop_all() {
  local c
  node_down
  for c in "${COMPONENTS[@]}"; do stop_one "$c"; done
}

# Waits up to SECS for CMD… to succeed while NAME runs; on failure prints NAME's log tail and fails.
wait_for() {
  local name=$1 secs=$2 what=$3 i
  shift 3
  for ((i = 0; i < secs * 5; i++)); do
    running "$name" || die "$name exited while waiting for $what: $(tail -n20 "$DIR/logs/$name.log")"
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.2
  done
  die "$what not within $secs s; $name's log ends: $(tail -n20 "$DIR/logs/$name.log")"
}

# N free TCP ports on loopback, held together while chosen so they are distinct.
free_ports() {
  node -e '
    const net = require("node:net");
    const n = Number(process.argv[1]);
    const servers = [];
    const next = () => {
      if (servers.length === n) {
        console.log(servers.map((s) => s.address().port).join(" "));
        for (const s of servers) s.close();
        return;
      }
      const s = net.createServer();
      s.listen(0, "127.0.0.1", () => { servers.push(s); next(); });
    };
    next();' "$1"
}

# Certificates: one CA signs everything (serving, clients, and the controller-manager's
# certificate signing); EC P-256 keys; the service-account key pair is RSA.
pki() {
  local p="$DIR/pki"
  ossl() { openssl "$@" 2>"$p/openssl.err" || die "openssl $*: $(cat "$p/openssl.err")"; }
  ossl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$p/ca.key" -out "$p/ca.crt" \
    -days 30 -subj /CN=cellium-k8s-ca -addext basicConstraints=critical,CA:TRUE \
    -addext keyUsage=critical,keyCertSign,cRLSign,digitalSignature
  # name subject extendedKeyUsage [subjectAltName]
  cert() {
    local name=$1 subj=$2 eku=$3 san=${4:-}
    {
      echo "basicConstraints=CA:FALSE"
      echo "keyUsage=critical,digitalSignature,keyEncipherment"
      echo "extendedKeyUsage=$eku"
      [ -z "$san" ] || echo "subjectAltName=$san"
    } >"$p/$name.ext"
    ossl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$p/$name.key" -out "$p/$name.csr" -subj "$subj"
    ossl x509 -req -in "$p/$name.csr" -CA "$p/ca.crt" -CAkey "$p/ca.key" -CAcreateserial -days 30 \
      -extfile "$p/$name.ext" -out "$p/$name.crt"
    rm -f "$p/$name.csr" "$p/$name.ext"
  }
  local local_san="IP:127.0.0.1,DNS:localhost"
  cert etcd /CN=etcd serverAuth,clientAuth "$local_san"
  cert apiserver-etcd-client /CN=kube-apiserver-etcd-client clientAuth
  cert apiserver /CN=kube-apiserver serverAuth \
    "$local_san,IP:$SERVICE_IP,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
  cert apiserver-kubelet-client /CN=kube-apiserver-kubelet-client/O=system:masters clientAuth
  cert admin /CN=kubernetes-admin/O=system:masters clientAuth
  cert controller-manager /CN=system:kube-controller-manager clientAuth
  cert controller-manager-serving /CN=kube-controller-manager serverAuth "$local_san"
  cert scheduler /CN=system:kube-scheduler clientAuth
  cert scheduler-serving /CN=kube-scheduler serverAuth "$local_san"
  ossl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$p/sa.key"
  ossl pkey -in "$p/sa.key" -pubout -out "$p/sa.pub"
  rm -f "$p/openssl.err" "$p/ca.srl"
  chmod 600 "$p"/*.key
}

# Writes a kubeconfig for the client certificate NAME to FILE.
kubeconfig() {
  local name=$1 file=$2 p="$DIR/pki"
  cat >"$file" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: cellium-k8s
  cluster:
    server: https://127.0.0.1:$API_PORT
    certificate-authority-data: $(base64 -w0 "$p/ca.crt")
users:
- name: $name
  user:
    client-certificate-data: $(base64 -w0 "$p/$name.crt")
    client-key-data: $(base64 -w0 "$p/$name.key")
contexts:
- name: $name@cellium-k8s
  context:
    cluster: cellium-k8s
    user: $name
current-context: $name@cellium-k8s
EOF
  chmod 600 "$file"
}

parse_dir() {
  DIR=
  while [ $# -gt 0 ]; do
    case $1 in
      --dir) DIR=${2:-}; shift 2 || die "--dir needs a directory" ;;
      --dir=*) DIR=${1#--dir=}; shift ;;
      --no-build) NO_BUILD=1; shift ;;
      --foreground) FOREGROUND=1; shift ;;
      --with-kubelet) WITH_KUBELET=1; shift ;;
      *) die "unknown argument $1 (usage: $0 up|down --dir DIR [--with-kubelet])" ;;
    esac
  done
  [ -n "$DIR" ] || die "--dir DIR is required: the directory up creates and down removes"
  # npm runs scripts in the package's directory: a relative DIR means the caller's (INIT_CWD).
  [ "${DIR:0:1}" = / ] || [ -z "${INIT_CWD:-}" ] || DIR="$INIT_CWD/$DIR"
  DIR=$(realpath -m "$DIR")
}

# The line `up` prints once the control plane is ready (the TypeScript helper waits for it too).
ready_line() {
  echo "k8s: Kubernetes $VERSION up: https://127.0.0.1:$API_PORT (etcd 127.0.0.1:$ETCD_PORT); . $DIR/env; down with: npm run k8s -- down --dir $DIR"
}

up() {
  NO_BUILD=
  FOREGROUND=
  WITH_KUBELET=
  parse_dir "$@"
  if [ -e "$DIR" ] && [ -n "$(ls -A "$DIR" 2>/dev/null)" ]; then
    die "$DIR exists and is not empty: give up a new directory (down removes it)"
  fi
  if ! built; then
    [ -z "$NO_BUILD" ] || die "Kubernetes $VERSION binaries not built: run npm run k8s -- build first (scripts/test.sh does before tap)"
    build
  fi
  command -v "$ETCD" >/dev/null || die "no etcd binary ($ETCD): apt-get install etcd-server (scripts/packages.d/50-kvstore.txt)"
  if [ -n "$WITH_KUBELET" ]; then
    local why
    why=$(node_missing)
    [ -z "$why" ] || die "--with-kubelet: $why"
  fi
  if [ -n "$FOREGROUND" ]; then
    serve
    return
  fi
  # The processes' parent is a supervisor in a session of its own (it reaps them, and outlives
  # this shell and its terminal); its output comes here until it says the control plane is ready.
  local line ready=
  while IFS= read -r line; do
    case $line in
      "k8s: Kubernetes $VERSION up: "*) echo "$line"; ready=1; break ;;
      *) echo "$line" >&2 ;;
    esac
  done < <(setsid -f bash "$SELF" up --dir "$DIR" --no-build --foreground ${WITH_KUBELET:+--with-kubelet} </dev/null 2>&1)
  [ -n "$ready" ] || exit 1
}

# Runs the control plane under DIR as the parent of its processes until they are gone (down stops
# them by PID; SIGTERM, SIGINT or SIGHUP here stop them too and remove DIR).
serve() {
  mkdir -p "$DIR"
  : >"$DIR/.cellium-k8s"
  mkdir -p "$DIR/pki" "$DIR/logs" "$DIR/pids" "$DIR/etcd"
  chmod 700 "$DIR/pki" "$DIR/etcd"
  echo "$$ $(starttime $$)" >"$DIR/pids/supervisor"
  # A failed up stops what it started and removes DIR (the failing step printed the log's end).
  trap 'rc=$?; if [ $rc -ne 0 ]; then stop_all; rm -rf "$DIR"; fi' EXIT
  trap 'exit 143' TERM INT HUP
  read -r ETCD_PORT ETCD_PEER API_PORT KCM_PORT SCHED_PORT <<<"$(free_ports 5)"
  pki
  local p="$DIR/pki"

  launch etcd "$ETCD" --name k8s --data-dir "$DIR/etcd/data" \
    --listen-client-urls "https://127.0.0.1:$ETCD_PORT" --advertise-client-urls "https://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$ETCD_PEER" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER" \
    --initial-cluster "k8s=http://127.0.0.1:$ETCD_PEER" --initial-cluster-state new \
    --cert-file "$p/etcd.crt" --key-file "$p/etcd.key" --trusted-ca-file "$p/ca.crt" --client-cert-auth \
    --logger zap --log-level warn
  wait_for etcd 30 "etcd's /health" sh -c "curl -sf --cacert '$p/ca.crt' --cert '$p/apiserver-etcd-client.crt' \
    --key '$p/apiserver-etcd-client.key' https://127.0.0.1:$ETCD_PORT/health | grep -q '\"health\":\"true\"'"

  # --endpoint-reconciler-type=none: the kubernetes Service's endpoints may not be loopback.
  # --kubelet-preferred-address-types: logs and exec reach a kubelet at its node IP (the host name
# may resolve to loopback, where the kubelet does not listen).
# --watch-cache-sizes podtemplates#0: PodTemplates are watched straight from etcd, so a test can
  # compact etcd and get a real "410 Gone" (the watch cache would serve any old version).
  launch kube-apiserver "$BIN/kube-apiserver" \
    --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$API_PORT" \
    --etcd-servers "https://127.0.0.1:$ETCD_PORT" --etcd-cafile "$p/ca.crt" \
    --etcd-certfile "$p/apiserver-etcd-client.crt" --etcd-keyfile "$p/apiserver-etcd-client.key" \
    --tls-cert-file "$p/apiserver.crt" --tls-private-key-file "$p/apiserver.key" \
    --client-ca-file "$p/ca.crt" \
    --kubelet-client-certificate "$p/apiserver-kubelet-client.crt" --kubelet-client-key "$p/apiserver-kubelet-client.key" \
    --kubelet-preferred-address-types InternalIP,ExternalIP,Hostname \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --service-account-key-file "$p/sa.pub" --service-account-signing-key-file "$p/sa.key" \
    --service-cluster-ip-range "$SERVICE_CIDR,$SERVICE_CIDR6" --endpoint-reconciler-type none \
    --authorization-mode Node,RBAC --enable-admission-plugins NodeRestriction --allow-privileged \
    --watch-cache-sizes podtemplates#0
  kubeconfig admin "$DIR/kubeconfig"
  wait_for kube-apiserver 90 "kube-apiserver's /readyz" "$BIN/kubectl" --kubeconfig "$DIR/kubeconfig" get --raw /readyz

  kubeconfig controller-manager "$DIR/controller-manager.kubeconfig"
  kubeconfig scheduler "$DIR/scheduler.kubeconfig"
  launch kube-controller-manager "$BIN/kube-controller-manager" \
    --kubeconfig "$DIR/controller-manager.kubeconfig" \
    --authentication-kubeconfig "$DIR/controller-manager.kubeconfig" --authorization-kubeconfig "$DIR/controller-manager.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port "$KCM_PORT" \
    --tls-cert-file "$p/controller-manager-serving.crt" --tls-private-key-file "$p/controller-manager-serving.key" \
    --leader-elect=false --use-service-account-credentials \
    --service-account-private-key-file "$p/sa.key" --root-ca-file "$p/ca.crt" \
    --cluster-signing-cert-file "$p/ca.crt" --cluster-signing-key-file "$p/ca.key" \
    --service-cluster-ip-range "$SERVICE_CIDR" --allocate-node-cidrs --cluster-cidr "$CLUSTER_CIDR"
  launch kube-scheduler "$BIN/kube-scheduler" \
    --kubeconfig "$DIR/scheduler.kubeconfig" \
    --authentication-kubeconfig "$DIR/scheduler.kubeconfig" --authorization-kubeconfig "$DIR/scheduler.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port "$SCHED_PORT" \
    --tls-cert-file "$p/scheduler-serving.crt" --tls-private-key-file "$p/scheduler-serving.key" \
    --leader-elect=false
  wait_for kube-controller-manager 60 "kube-controller-manager's /healthz" \
    curl -sf --cacert "$p/ca.crt" "https://127.0.0.1:$KCM_PORT/healthz"
  wait_for kube-scheduler 60 "kube-scheduler's /healthz" \
    curl -sf --cacert "$p/ca.crt" "https://127.0.0.1:$SCHED_PORT/healthz"
  # The controller-manager makes the default ServiceAccount once its controllers run.
  wait_for kube-controller-manager 60 "the default ServiceAccount" \
    "$BIN/kubectl" --kubeconfig "$DIR/kubeconfig" get serviceaccount default --namespace default

  cat >"$DIR/env" <<EOF
# Written by scripts/k8s.sh up: source it to use this control plane.
export KUBECONFIG='$DIR/kubeconfig'
export PATH='$BIN':"\$PATH"
export CELLIUM_K8S_DIR='$DIR'
export CELLIUM_K8S_SERVER='https://127.0.0.1:$API_PORT'
export CELLIUM_K8S_VERSION='$VERSION'
export CELLIUM_K8S_ETCD='https://127.0.0.1:$ETCD_PORT'
EOF
  [ -z "$WITH_KUBELET" ] || node_up
  ready_line
  exec >>"$DIR/logs/supervisor.log" 2>&1 </dev/null
  trap - EXIT
  trap 'stop_all; rm -rf "$DIR"; exit 143' TERM INT HUP
  # Reap the processes as they exit until none is left (down stops them).
  local pid rc
  while :; do
    pid=
    wait -n -p pid && rc=0 || rc=$?
    [ -n "$pid" ] || break
    echo "k8s: process $pid exited ($rc)"
  done
}

down() {
  parse_dir "$@"
  if [ ! -e "$DIR" ]; then
    echo "k8s: $DIR does not exist: nothing to stop"
    return 0
  fi
  [ -f "$DIR/.cellium-k8s" ] || die "$DIR was not made by scripts/k8s.sh up (no .cellium-k8s): not touching it"
  stop_all
  # The supervisor exits once it has reaped them; it is stopped only if it lingers.
  local i
  for ((i = 0; i < 100; i++)); do
    running supervisor || break
    sleep 0.1
  done
  stop_one supervisor
  rm -rf "$DIR"
  echo "k8s: stopped and removed $DIR"
}

case ${1:-} in
  build) build ;;
  check) check ;;
  prepare) prepare ;;
  up) shift; up "$@" ;;
  down) shift; down "$@" ;;
  *) die "usage: $0 build|check|prepare|up --dir DIR [--with-kubelet]|down --dir DIR" ;;
esac
