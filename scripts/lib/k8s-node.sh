# Sourced by scripts/k8s.sh: a node for the harness's control plane (`up --with-kubelet`):
# containerd and kubelet for this machine (node name = its host name), everything they write under
# DIR/node, and Cellium deployed by `kubectl apply -k DIR/node/deploy` (deploy/ with this node's
# paths patched in). `node_down` removes all of it. See docs/k8s-harness.md.
#
# DIR/node/                 a shared mount (bind of itself): hostPath volumes with mount
#                           propagation (Bidirectional, HostToContainer) must be on one
#   bpf/                    a bpffs of this node's own (the DaemonSet's /sys/fs/bpf): its pins go with it
#   containerd/             root, state (pods' netns under state/io.containerd.grpc.v1.cri/netns), containerd.sock, config.toml
#   runc/                   runc's state (the runtime's Root)
#   cni/bin, cni/net.d      the CNI directories (loopback, bridge, host-local copied from Debian's plugins)
#   cni/bridge.d            the reference network of the runtime handler `bridge` (RuntimeClass bridge)
#   kubelet/                kubelet's root dir; kubelet.yaml, kubelet.kubeconfig beside it
#   pod-logs/               kubelet's podLogsDir
#   run/cellium/            the DaemonSet's /var/run/cellium: the agent's socket, state, delete queue
#   deploy/                 the kustomization applied (copies of deploy/*.yaml and this node's patches)
#   images/cellium.tar      Cellium's image as imported

# shellcheck source=k8s-node-images.sh
source "$ROOT/scripts/lib/k8s-node-images.sh"

NODE_NAME=$(hostname | tr 'A-Z' 'a-z')
# The reference plugins (bridge, host-local) and the loopback plugin containerd runs for lo.
CNI_PLUGINS_DIR=${CELLIUM_K8S_CNI_PLUGINS:-/usr/lib/cni}
# The reference network's pool (RuntimeClass bridge; bench/k8s-pods.bench.ts).
BRIDGE_SUBNET=10.245.0.0/16

node_paths() {
  NODE_DIR="$DIR/node"
  NODE_ID=$(printf '%s' "$DIR" | sha256sum | cut -c1-8)
  CTR_SOCK="$NODE_DIR/containerd/containerd.sock"
  # kubelet's cgroupRoot: the node's pods under a cgroup of their own in every hierarchy
  NODE_CGROUP="/cellium-k8s-$NODE_ID"
}

# The address of the default route's device (kubelet refuses a loopback node IP).
node_ip() {
  local dev
  dev=$(ip -4 route show default | awk '{ for (i = 1; i < NF; i++) if ($i == "dev") { print $(i + 1); exit } }')
  [ -n "$dev" ] || die "no IPv4 default route: the node needs an address that is not loopback (kubelet refuses 127.0.0.1)"
  ip -4 -o addr show dev "$dev" scope global | awk '{ split($4, a, "/"); print a[1]; exit }'
}

# One line on what this machine lacks for a node, or nothing.
node_missing() {
  [ "$(id -u)" = 0 ] || { echo "needs root (containerd, kubelet and Cellium's datapath)"; return; }
  local c
  for c in containerd containerd-shim-runc-v2 ctr runc conntrack podman mmdebstrap gcc; do
    command -v "$c" >/dev/null || { echo "$c missing: npm run setup as root installs it (scripts/packages.d/70-k8s-node.txt)"; return; }
  done
  for c in loopback bridge host-local; do
    [ -x "$CNI_PLUGINS_DIR/$c" ] || { echo "$CNI_PLUGINS_DIR/$c missing: apt-get install containernetworking-plugins"; return; }
  done
  [ -d /sys/fs/cgroup/unified ] || [ -f /sys/fs/cgroup/cgroup.controllers ] || { echo "no cgroup v2 mount (/sys/fs/cgroup/unified or /sys/fs/cgroup)"; return; }
}

# The cgroup v2 directory of the node's cgroupRoot (Cellium's --cgroup-root: socket LB for its pods).
node_cgroup_v2() {
  if [ -f /sys/fs/cgroup/cgroup.controllers ]; then echo "/sys/fs/cgroup$NODE_CGROUP"; else echo "/sys/fs/cgroup/unified$NODE_CGROUP"; fi
}

# The node's cgroupRoot in every hierarchy (kubelet refuses a cgroupRoot that does not exist); a
# v1 cpuset starts empty, so it gets its parent's CPUs and memory nodes.
node_cgroups() {
  local mnt
  while read -r _ mnt fstype _; do
    case $fstype in cgroup | cgroup2) ;; *) continue ;; esac
    mkdir -p "$mnt$NODE_CGROUP" || die "cannot create the cgroup $mnt$NODE_CGROUP"
    if [ -f "$mnt/cpuset.cpus" ] && [ -z "$(cat "$mnt$NODE_CGROUP/cpuset.cpus")" ]; then
      cat "$mnt/cpuset.cpus" >"$mnt$NODE_CGROUP/cpuset.cpus"
      cat "$mnt/cpuset.mems" >"$mnt$NODE_CGROUP/cpuset.mems"
    fi
  done </proc/mounts
}

# A client certificate for the kubelet (system:node:<name> in system:nodes, as the Node authorizer
# and NodeRestriction want) signed by the cluster CA, and its kubeconfig.
node_pki() {
  local p="$DIR/pki"
  printf 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n' >"$p/kubelet.ext"
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$p/kubelet.key" -out "$p/kubelet.csr" \
    -subj "/CN=system:node:$NODE_NAME/O=system:nodes" 2>/dev/null || die "openssl: the kubelet's key"
  openssl x509 -req -in "$p/kubelet.csr" -CA "$p/ca.crt" -CAkey "$p/ca.key" -CAcreateserial -days 30 \
    -extfile "$p/kubelet.ext" -out "$p/kubelet.crt" 2>/dev/null || die "openssl: the kubelet's certificate"
  rm -f "$p/kubelet.csr" "$p/kubelet.ext" "$p/ca.srl"
  chmod 600 "$p/kubelet.key"
  kubeconfig kubelet "$NODE_DIR/kubelet.kubeconfig"
}

node_containerd_config() {
  local runc_opts
  runc_opts="      [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.%s.options]
        Root = \"$NODE_DIR/runc\"
        SystemdCgroup = false"
  cat >"$NODE_DIR/containerd/config.toml" <<EOF
# Written by scripts/k8s.sh up --with-kubelet: a containerd of this node only (nothing under
# /var/lib/containerd, /run/containerd or /opt is used; shims put their sockets in /run/containerd/s).
version = 2
root = "$NODE_DIR/containerd/root"
state = "$NODE_DIR/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs"]
[grpc]
  address = "$CTR_SOCK"
[ttrpc]
  address = ""
[debug]
  address = ""
  level = "info"
[metrics]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = "$NODE_DIR/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  tolerate_missing_hugetlb_controller = true
  # no CAP_SYS_RESOURCE on this machine kind: a negative oom_score_adj (the sandbox's -998, a
  # critical pod's -997) fails runc's init; clamp scores to containerd's own instead
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$NODE_DIR/cni/bin"
    conf_dir = "$NODE_DIR/cni/net.d"
    max_conf_num = 1
  [plugins."io.containerd.grpc.v1.cri".containerd]
    default_runtime_name = "runc"
    snapshotter = "overlayfs"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
$(printf "$runc_opts" runc)
    # the reference network (bridge + host-local) for pods of RuntimeClass bridge, same node
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.bridge]
      runtime_type = "io.containerd.runc.v2"
      cni_conf_dir = "$NODE_DIR/cni/bridge.d"
      cni_max_conf_num = 1
$(printf "$runc_opts" bridge)
EOF
  cat >"$NODE_DIR/cni/bridge.d/10-bridge.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "reference-bridge",
  "plugins": [
    { "type": "bridge", "bridge": "ckb$NODE_ID", "isGateway": true, "ipMasq": false,
      "ipam": { "type": "host-local", "ranges": [[{ "subnet": "$BRIDGE_SUBNET" }]], "dataDir": "$NODE_DIR/cni/host-local" } }
  ]
}
EOF
}

node_kubelet_config() {
  local kport=$1 hport=$2
  cat >"$NODE_DIR/kubelet.yaml" <<EOF
# Written by scripts/k8s.sh up --with-kubelet (docs/k8s-harness.md says why each setting).
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $NODE_IP
port: $kport
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $hport
authentication:
  anonymous: { enabled: false }
  webhook: { enabled: true }
  x509: { clientCAFile: $DIR/pki/ca.crt }
authorization: { mode: Webhook }
containerRuntimeEndpoint: unix://$CTR_SOCK
cgroupDriver: cgroupfs
cgroupRoot: $NODE_CGROUP
failCgroupV1: false
failSwapOn: false
podLogsDir: $NODE_DIR/pod-logs
resolvConf: /etc/resolv.conf
clusterDomain: cluster.local
${CELLIUM_K8S_CLUSTER_DNS:+clusterDNS: [$CELLIUM_K8S_CLUSTER_DNS]}
registerNode: true
serializeImagePulls: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
imageMinimumGCAge: 87600h
evictionHard: { memory.available: 100Mi, nodefs.available: 1%, imagefs.available: 1%, nodefs.inodesFree: 1% }
syncFrequency: 10s
fileCheckFrequency: 0s
staticPodPath: ""
EOF
}

# Waits up to SECS for CMD… while NAME runs (wait_for of k8s.sh with the apiserver's kubectl).
kctl() { "$BIN/kubectl" --kubeconfig "$DIR/kubeconfig" "$@"; }
ctr_() { ctr --address "$CTR_SOCK" --namespace k8s.io "$@"; }

# The kustomization `up` applies: deploy/*.yaml as they are plus this node's patches (its
# directories instead of /opt/cni/bin, /etc/cni/net.d, /var/run/cellium, /var/run/netns and
# /sys/fs/bpf; its cgroup; a metrics port of its own) and the ConfigMap cellium-config giving the
# agent the apiserver's real address (as Cilium's k8sServiceHost/k8sServicePort).
node_kustomization() {
  local d="$NODE_DIR/deploy" metrics=$1 modules=/lib/modules f
  mkdir -p "$d"
  for f in "$ROOT"/deploy/*.yaml; do cp "$f" "$d/"; done
  [ -d "$modules" ] || { modules="$NODE_DIR/lib-modules"; mkdir -p "$modules"; }
  local pool
  pool=$(node_pod_pool)
  echo "$pool" >"$NODE_DIR/pod-pool"
  cat >"$d/kustomization.yaml" <<EOF
# Written by scripts/k8s.sh up --with-kubelet: deploy/ for the node under $NODE_DIR.
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources: [rbac.yaml, daemonset.yaml]
configMapGenerator:
  - name: cellium-config
    namespace: kube-system
    options: { disableNameSuffixHash: true }
    literals: [k8s-service-host=127.0.0.1, k8s-service-port=$API_PORT]
patches:
  - target: { kind: DaemonSet, name: cellium }
    patch: |-
      - { op: test, path: /spec/template/spec/volumes/0/name, value: bpf-maps }
      - { op: replace, path: /spec/template/spec/volumes/0/hostPath/path, value: $NODE_DIR/bpf }
      - { op: test, path: /spec/template/spec/volumes/1/name, value: cellium-run }
      - { op: replace, path: /spec/template/spec/volumes/1/hostPath/path, value: $NODE_DIR/run/cellium }
      - { op: test, path: /spec/template/spec/volumes/2/name, value: netns }
      - { op: replace, path: /spec/template/spec/volumes/2/hostPath/path, value: $NODE_DIR/containerd/state/io.containerd.grpc.v1.cri/netns }
      - { op: test, path: /spec/template/spec/containers/0/volumeMounts/2/name, value: netns }
      - { op: replace, path: /spec/template/spec/containers/0/volumeMounts/2/mountPath, value: $NODE_DIR/containerd/state/io.containerd.grpc.v1.cri/netns }
      - { op: test, path: /spec/template/spec/volumes/3/name, value: cni-bin }
      - { op: replace, path: /spec/template/spec/volumes/3/hostPath/path, value: $NODE_DIR/cni/bin }
      - { op: test, path: /spec/template/spec/volumes/4/name, value: cni-conf }
      - { op: replace, path: /spec/template/spec/volumes/4/hostPath/path, value: $NODE_DIR/cni/net.d }
      - { op: test, path: /spec/template/spec/volumes/5/name, value: lib-modules }
      - { op: replace, path: /spec/template/spec/volumes/5/hostPath/path, value: $modules }
      - { op: test, path: /spec/template/spec/volumes/6/name, value: cgroup2 }
      - { op: replace, path: /spec/template/spec/volumes/6/hostPath/path, value: $(node_cgroup_v2) }
      - { op: test, path: /spec/template/spec/initContainers/0/command/6, value: --socket-path }
      - { op: replace, path: /spec/template/spec/initContainers/0/command/7, value: $NODE_DIR/run/cellium/cellium.sock }
      - { op: add, path: /spec/template/spec/initContainers/0/command/-, value: --cni-log-file }
      - { op: add, path: /spec/template/spec/initContainers/0/command/-, value: $NODE_DIR/run/cellium/cellium-cni.log }
      - { op: test, path: /spec/template/spec/containers/0/args/3, value: "--prometheus-serve-addr=:9962" }
      - { op: replace, path: /spec/template/spec/containers/0/args/3, value: "--prometheus-serve-addr=127.0.0.1:$metrics" }
      - { op: remove, path: /spec/template/spec/containers/0/ports }
      - { op: add, path: /spec/template/spec/containers/0/args/-, value: "--ipv4-range=$pool" }
EOF
}

# Starts containerd and kubelet (children of the supervisor, like the control plane), imports the
# images, deploys Cellium and waits for the node to be Ready.
node_up() {
  node_paths
  local why
  why=$(node_missing)
  [ -z "$why" ] || die "--with-kubelet: $why"
  [ -x "$BIN/kubelet" ] || die "$BIN/kubelet is not built: npm run k8s -- build"
  NODE_IP=$(node_ip)
  mkdir -p "$NODE_DIR"/{bpf,containerd/opt,runc,cni/bin,cni/net.d,cni/bridge.d,kubelet,pod-logs,run/cellium,images}
  echo "$NODE_NAME $NODE_IP $NODE_CGROUP" >"$NODE_DIR/.node"
  mount --bind "$NODE_DIR" "$NODE_DIR" && mount --make-rshared "$NODE_DIR" || die "cannot make $NODE_DIR a shared mount"
  mount -t bpf bpf "$NODE_DIR/bpf" || die "cannot mount a bpffs at $NODE_DIR/bpf"
  node_cgroups
  cp "$CNI_PLUGINS_DIR"/{loopback,bridge,host-local} "$NODE_DIR/cni/bin/"
  node_images "$NODE_DIR/images"
  node_pki
  node_containerd_config
  # the cellium-cni shim, run by containerd, queues DELs it cannot deliver where this node's agent reads them
  launch containerd env CELLIUM_CNI_DELETE_QUEUE="$NODE_DIR/run/cellium/delete-queue" \
    containerd --config "$NODE_DIR/containerd/config.toml"
  wait_for containerd 30 "containerd's socket" ctr --address "$CTR_SOCK" version
  node_import
  local kport hport metrics
  read -r kport hport metrics <<<"$(free_ports 3)"
  node_kubelet_config "$kport" "$hport"
  launch kubelet "$BIN/kubelet" --config "$NODE_DIR/kubelet.yaml" --kubeconfig "$NODE_DIR/kubelet.kubeconfig" \
    --root-dir "$NODE_DIR/kubelet" --cert-dir "$NODE_DIR/kubelet/pki" --node-ip "$NODE_IP" \
    --hostname-override "$NODE_NAME" --v 1
  wait_for kubelet 60 "the Node $NODE_NAME" kctl get node "$NODE_NAME"
  node_service_route add
  node_kustomization "$metrics"
  kctl apply -k "$NODE_DIR/deploy" >"$DIR/logs/deploy.log" 2>&1 || die "kubectl apply -k $NODE_DIR/deploy: $(cat "$DIR/logs/deploy.log")"
  # a bridge RuntimeClass: the reference network (bench/k8s-pods.bench.ts) on this same node
  printf 'apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: { name: bridge }\nhandler: bridge\n' | kctl apply -f - >>"$DIR/logs/deploy.log" 2>&1 ||
    die "kubectl apply of the RuntimeClass bridge failed: $(tail -n3 "$DIR/logs/deploy.log")"
  wait_for kubelet 180 "the Node $NODE_NAME Ready with Cellium (kubectl -n kube-system get pods -l k8s-app=cellium; logs in $DIR/logs)" \
    kctl wait --for=condition=Ready "node/$NODE_NAME" --timeout=1s
  wait_for kubelet 120 "the DaemonSet cellium rolled out" kctl -n kube-system rollout status ds/cellium --timeout=1s
  cat >>"$DIR/env" <<EOF
export CELLIUM_K8S_NODE='$NODE_NAME'
export CELLIUM_K8S_NODE_IP='$NODE_IP'
export CELLIUM_K8S_NODE_DIR='$NODE_DIR'
export CELLIUM_K8S_CONTAINERD='$CTR_SOCK'
export CELLIUM_K8S_BUSYBOX_IMAGE='$(busybox_image)'
EOF
}

# Imports every image archive into containerd's k8s.io namespace: the cache's (pause, busybox,
# whatever other tools put there) and Cellium's.
node_import() {
  local f
  for f in "$IMAGES"/*.tar "$NODE_DIR/images/cellium.tar"; do
    [ -f "$f" ] || continue
    ctr_ images import --no-unpack "$f" >>"$DIR/logs/images.log" 2>&1 || die "ctr images import $f failed: $(tail -n3 "$DIR/logs/images.log")"
  done
}

# PIDs of processes whose command line names this node's directory (containerd's shims; the
# pods' processes are found through their cgroups below), never anything else: one grep over
# /proc/*/cmdline.
node_pids() {
  local f
  # the pattern from a file: grep's own command line must not name the directory
  for f in $(grep -lsFf <(printf '%s\n' "$NODE_DIR") /proc/[0-9]*/cmdline); do
    f=${f#/proc/}
    echo "${f%/cmdline}"
  done
}

# PIDs in the node's cgroups (its pods' containers), any hierarchy.
node_cgroup_pids() {
  local f
  for f in $(node_cgroup_dirs); do
    find "$f" -name cgroup.procs -exec cat {} + 2>/dev/null
  done | sort -u
}

# The node's cgroupRoot in every mounted hierarchy that has it.
node_cgroup_dirs() {
  local mnt fstype
  while read -r _ mnt fstype _; do
    case $fstype in cgroup | cgroup2) [ -d "$mnt$NODE_CGROUP" ] && echo "$mnt$NODE_CGROUP" ;; esac
  done </proc/mounts
}

# Kills PIDs (SIGKILL) if they still run with the start time read now.
kill_pids() {
  local pid
  for pid in "$@"; do
    [ "$pid" != $$ ] && [ "$pid" != "$BASHPID" ] || continue
    kill -KILL "$pid" 2>/dev/null || true
  done
}

# Removes the node: kubelet first (it would restart what is stopped), containerd, then the pods'
# processes (SIGKILL to every process in the node's cgroups) and containerd's shims (their command
# line names DIR/node), by PID; nothing of containerd's metadata needs keeping (DIR goes), the mounts under DIR/node (netns, rootfs, volumes, bpffs),
# the node's cgroups, interfaces left routing its pod pool, the bridge of the reference network and
# /var/log/containers links into DIR.
node_down() {
  node_paths
  [ -d "$NODE_DIR" ] || return 0
  stop_one kubelet
  stop_one containerd
  local i f pids
  for ((i = 0; i < 20; i++)); do
    mapfile -t pids < <({ node_pids; node_cgroup_pids; } | sort -u)
    [ ${#pids[@]} -gt 0 ] || break
    kill_pids "${pids[@]}"
    sleep 0.2
  done
  [ ${#pids[@]} -eq 0 ] || echo "k8s: processes of the node still run after SIGKILL: ${pids[*]}" >&2
  # deepest first; the netns mounts included (their namespaces, and the pods' veths, go with them)
  local m
  for ((i = 0; i < 3; i++)); do
    mapfile -t m < <(awk -v d="$NODE_DIR" '$5 == d || index($5, d "/") == 1 { print $5 }' /proc/self/mountinfo | sort -r | uniq)
    [ ${#m[@]} -gt 0 ] || break
    for f in "${m[@]}"; do umount -l "$f" 2>/dev/null || true; done
  done
  for f in $(node_cgroup_dirs); do
    find "$f" -depth -type d -exec rmdir {} + 2>/dev/null
  done
  # the pods' host-side veths go with their namespaces, unless something outside the node still
  # holds one (seen after a test was killed mid-run): remove every interface routing this node's pool
  local pool dev
  pool=$(cat "$NODE_DIR/pod-pool" 2>/dev/null || true)
  if [ -n "$pool" ]; then
    for dev in $(ip -4 route show | awk -v p="${pool%0/24}" 'index($1, p) == 1 && $2 == "dev" && $3 ~ /^lxc/ { print $3 }' | sort -u); do
      ip link del "$dev" 2>/dev/null || true
    done
  fi
  ip link del "ckb$NODE_ID" 2>/dev/null || true
  node_service_route del
  for f in /var/log/containers/*.log; do
    [ -L "$f" ] || continue
    case $(readlink "$f") in "$NODE_DIR"/*) rm -f "$f" ;; esac
  done
  return 0
}

# The service ranges unreachable from this node (`node_service_route add|del`). On a real network
# an address of the service range that no Service holds leads nowhere; on this VM something outside
# answers TCP to every address (a curl to any 10.96.x.x:80 or :8080 from the host, with no cluster
# up, gets an HTTP 404), so the e2e checks that a deleted Service stops answering ("waiting for
# service to be down") would see that answer. Cellium translates live Services before routing (socket
# LB at connect, bpf_lxc on the pod's interface), so the route only catches addresses no Service
# holds. Each node's route has a metric of its own (harnesses share the host's routing table).
node_service_route() {
  local metric=$((16#${NODE_ID:0:4} + 1000))
  if [ "$1" = add ]; then
    ip -4 route replace unreachable "$SERVICE_CIDR" metric "$metric" || die "cannot add the route unreachable $SERVICE_CIDR"
    ip -6 route replace unreachable "$SERVICE_CIDR6" metric "$metric" || die "cannot add the route unreachable $SERVICE_CIDR6"
  else
    ip -4 route del unreachable "$SERVICE_CIDR" metric "$metric" 2>/dev/null || true
    ip -6 route del unreachable "$SERVICE_CIDR6" metric "$metric" 2>/dev/null || true
  fi
}

# This node's pod pool (the agent's --ipv4-range): a /24 of 10.64.0.0/16 that no route of the host
# uses, chosen once per node and kept in NODE_DIR/pod-pool. Nodes of several harnesses share the
# host's network namespace and its /32 routes to pods: with one pool for all (the agent's default
# 10.200.0.0/24), one node's CNI DEL removed another's route to a pod of the same address.
node_pod_pool() {
  local f="$NODE_DIR/pod-pool" n i
  if [ -s "$f" ]; then cat "$f"; return; fi
  for i in $(seq 1 64); do
    n=$((RANDOM % 256))
    if ! ip -4 route show | grep -q "^10\.64\.$n\."; then echo "10.64.$n.0/24"; return; fi
  done
  echo "10.64.$((RANDOM % 256)).0/24"
}
