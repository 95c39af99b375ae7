#!/usr/bin/env bash
# npm run conformance: Kubernetes' own sig-network e2e tests against this node (docs/conformance.md).
#
#   scripts/conformance.sh [run] [--suite S] [--dir DIR] [--out OUT] [--focus RE] [--procs N] [--timeout D]
#       builds what is missing (the Kubernetes binaries, e2e.test, agnhost and the e2e images),
#       brings up a one-node cluster (`npm run k8s -- up --with-kubelet`: containerd, kubelet and
#       Cellium as its DaemonSet) unless --dir names one already up, runs suite S of e2e.test, takes
#       the cluster down again (only one it started), and prints one line per test (PASS/FAIL/SKIP,
#       seconds, the full name), the Netpol bench line, then `conformance: N passed, M failed,
#       K skipped` last. Exit 1 when a test failed.
#         S = netpol    [sig-network] Netpol (NetworkPolicy; the SCTP-feature ones skipped)
#             services  [sig-network] Services, minus what disrupts the node (restarts of kube-proxy
#                       and the apiserver over SSH, the sctp kernel module)
#             all       both (the default)
#             ci        the subset CI runs (test/conformance/conformance.test.ts)
#       OUT (default build/conformance) keeps report.json (ginkgo's), junit, e2e.log, results.txt.
#       --procs N runs N ginkgo processes in parallel (the ginkgo CLI; default 1: e2e.test alone);
#       --timeout D (ginkgo's, e.g. 50m; default 4h) ends the run with the tests not reached unrun
#       and a report of the ones that were.
#   scripts/conformance.sh build      builds e2e.test, agnhost and the images (cached, see below)
#   scripts/conformance.sh prepare    builds when Go and the module proxy are there, else one line why
#                                     the conformance test skips (scripts/test.sh)
#   scripts/conformance.sh check      one line: why it cannot be built (exit 3), not built (4), ready (0)
#   scripts/conformance.sh list [S]   the tests suite S selects (e2e.test --ginkgo.dry-run)
#
# The cache is the harness's (~/.cache/cellium-k8s): <version>/e2e (e2e.test, agnhost) and images/.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=lib/e2e.sh
source "$ROOT/scripts/lib/e2e.sh"
# shellcheck source=lib/e2e-images.sh
source "$ROOT/scripts/lib/e2e-images.sh"
# shellcheck source=lib/e2e-dns.sh
source "$ROOT/scripts/lib/e2e-dns.sh"
K8S="$ROOT/scripts/k8s.sh"

# What each suite selects: a ginkgo focus and skip (regular expressions on the full test name).
NETPOL_FOCUS='\[sig-network\] Netpol '
NETPOL_SKIP='\[Feature:SCTPConnectivity\]'
SERVICES_FOCUS='\[sig-network\] Services '
# [Disruptive]: they restart kube-proxy or the apiserver over SSH (the e2e framework's way), which
# this harness does not offer. [Serial]: the SCTP Service test, which loads the sctp kernel module on
# the node. (The cloud load balancer tests are [sig-network] LoadBalancers, outside this suite.)
SERVICES_SKIP='\[Disruptive\]|\[Serial\]'
# CI: three NetworkPolicy tests (ingress, egress and ports) and two Services tests (a ClusterIP by
# name, one port number over TCP and UDP).
CI_FOCUS="${NETPOL_FOCUS}.*(should support a 'default-deny-ingress' policy|should allow egress access on one named port|should enforce policy based on Ports)|${SERVICES_FOCUS}.*(should serve a basic endpoint from pods|should serve endpoints on same port and different protocols)"

suite_filter() {
  case $1 in
    netpol) FOCUS=$NETPOL_FOCUS; SKIP=$NETPOL_SKIP ;;
    services) FOCUS=$SERVICES_FOCUS; SKIP=$SERVICES_SKIP ;;
    all) FOCUS="$NETPOL_FOCUS|$SERVICES_FOCUS"; SKIP="$NETPOL_SKIP|$SERVICES_SKIP" ;;
    ci) FOCUS=$CI_FOCUS; SKIP="$NETPOL_SKIP|$SERVICES_SKIP|\[LinuxOnly\]" ;;
    *) e2e_die "unknown suite $1 (netpol, services, all, ci)" ;;
  esac
}

check() {
  local why rc=0
  why=$(e2e_check) || rc=$?
  if [ $rc -ne 0 ]; then
    echo "conformance: $why"
    return 3
  fi
  if e2e_built && [ -f "$E2E_IMAGES/agnhost.tar" ] && [ -f "$E2E_IMAGES/busybox.tar" ] && [ -f "$E2E_IMAGES/coredns.tar" ]; then
    echo "conformance: e2e.test $E2E_VERSION and its images ready ($E2E_BIN, $E2E_IMAGES)"
    return 0
  fi
  echo "conformance: e2e.test $E2E_VERSION or its images not built yet: run npm run conformance -- build (scripts/test.sh does before tap)"
  return 4
}

build() {
  bash "$K8S" build
  e2e_build
  e2e_images
  e2e_dns_build
}

# Imports this script's image archives into the containerd of the node under DIR ($1) unless it has
# them (up --with-kubelet imports them when it starts; a cluster up before they were built lacks them).
import_images() {
  local sock="$1/node/containerd/containerd.sock" f name
  [ -S "$sock" ] || e2e_die "$sock missing: is $1 a cluster of npm run k8s -- up --with-kubelet?"
  for f in agnhost busybox coredns; do
    name=$(tar -xOf "$E2E_IMAGES/$f.tar" manifest.json | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s)[0].RepoTags[0]))')
    ctr --address "$sock" -n k8s.io images ls -q | grep -qxF "$name" && continue
    echo "conformance: importing $name into $1's containerd" >&2
    ctr --address "$sock" -n k8s.io images import "$E2E_IMAGES/$f.tar" >&2 || e2e_die "ctr images import of $E2E_IMAGES/$f.tar failed"
  done
}

prepare() {
  local rc=0 line
  line=$(check) || rc=$?
  if [ $rc -eq 3 ]; then
    echo "$line; the conformance test (test/conformance/) will skip"
  elif [ $rc -eq 4 ]; then
    build
  else
    echo "$line"
  fi
}

# The e2e.test flags every run shares: this cluster, no cloud, nothing pulled, no SSH log dump.
e2e_flags() {
  echo --kubeconfig="$KUBECONFIG" --provider=skeleton --ginkgo.no-color --ginkgo.v \
    --dump-logs-on-failure=false --allowed-not-ready-nodes=0 --minStartupPods=1 \
    --system-pods-startup-timeout=5m --node-schedulable-timeout=5m
}

list() {
  suite_filter "${1:-all}"
  e2e_built || e2e_die "e2e.test not built: npm run conformance -- build"
  KUBECONFIG=/dev/null "$E2E_BIN/e2e.test" --ginkgo.dry-run --ginkgo.no-color --ginkgo.v \
    --ginkgo.focus="$FOCUS" --ginkgo.skip="$SKIP" 2>/dev/null | sed -n 's/^\(\[sig-network\] .*\)$/\1/p'
}

# The agent's process in this cluster's DaemonSet pod (its PID as this machine sees it), or nothing:
# the node process running cellium-agent in the cgroup of the container the apiserver names (other
# agents on this machine, of tests, benches or another cluster, are in other cgroups).
agent_pid() {
  local cid p cmd
  cid=$(kubectl -n kube-system get pods -l k8s-app=cellium \
    -o jsonpath='{.items[0].status.containerStatuses[?(@.name=="cellium-agent")].containerID}' 2>/dev/null) || return 0
  cid=${cid#*://}
  [ -n "$cid" ] || return 0
  for p in $(pgrep -f 'cellium-agent' || true); do
    cmd=$(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null) || continue
    [[ $cmd =~ ^[^\ ]*node\ [^\ ]*cellium-agent ]] || continue
    if grep -q "$cid" "/proc/$p/cgroup" 2>/dev/null; then
      echo "$p"
      return 0
    fi
  done
}

# Samples the agent's CPU time and RSS every second into OUT/agent.samples until stopped.
sample_agent() {
  local pid=$1 hz
  hz=$(getconf CLK_TCK)
  while [ -d "/proc/$pid" ]; do
    awk -v hz="$hz" -v now="$(date +%s.%N)" -v rss="$(awk '/^VmRSS/ { print $2 }' "/proc/$pid/status")" \
      '{ sub(/.*\) /, ""); print now, ($12 + $13) / hz, rss }' "/proc/$pid/stat" 2>/dev/null || break
    sleep 1
  done
}

run() {
  local suite=all dir= out="$ROOT/build/conformance" focus= started= rc=0 procs=1 timeout=4h
  while [ $# -gt 0 ]; do
    case $1 in
      --suite) suite=${2:-}; shift 2 ;;
      --dir) dir=${2:-}; shift 2 ;;
      --out) out=${2:-}; shift 2 ;;
      --focus) focus=${2:-}; shift 2 ;;
      --procs) procs=${2:-}; shift 2 ;;
      --timeout) timeout=${2:-}; shift 2 ;;
      *) e2e_die "unknown argument $1 (usage: $0 [run] [--suite netpol|services|all|ci] [--dir DIR] [--out OUT] [--focus RE] [--procs N] [--timeout D])" ;;
    esac
  done
  suite_filter "$suite"
  [ -z "$focus" ] || FOCUS=$focus
  [ "$(id -u)" = 0 ] || e2e_die "needs root (kubelet, containerd and Cellium's datapath run on this machine)"
  build
  local ginkgo=
  [ "$procs" = 1 ] || ginkgo=$(e2e_ginkgo)
  # npm runs scripts in the package's directory: relative paths are the caller's (INIT_CWD).
  [ -z "$dir" ] || [ "${dir:0:1}" = / ] || [ -z "${INIT_CWD:-}" ] || dir="$INIT_CWD/$dir"
  [ "${out:0:1}" = / ] || [ -z "${INIT_CWD:-}" ] || out="$INIT_CWD/$out"
  if [ -z "$dir" ]; then
    dir=$(mktemp -d /tmp/cellium-conformance.XXXXXX)
    rmdir "$dir"
    started=$dir
    # expanded now: $started is local to run(), gone when the trap runs
    # shellcheck disable=SC2064
    trap "bash '$K8S' down --dir '$started' >&2 || true" EXIT
    # kubelet points pods at the cluster DNS e2e_dns_apply deploys (scripts/lib/k8s-node.sh reads it)
    CELLIUM_K8S_CLUSTER_DNS=$E2E_DNS_IP bash "$K8S" up --dir "$dir" --with-kubelet >&2
  fi
  [ -f "$dir/env" ] || e2e_die "$dir/env missing: is a cluster up there (npm run k8s -- up --dir $dir --with-kubelet)?"
  # shellcheck disable=SC1091
  source "$dir/env"
  kubectl wait --for=condition=Ready node --all --timeout=300s >&2 ||
    e2e_die "the node is not Ready within 5 min (kubectl describe node; $dir/logs)"
  kubectl -n kube-system rollout status daemonset/cellium --timeout=300s >&2 ||
    e2e_die "Cellium's DaemonSet is not ready within 5 min (kubectl -n kube-system get pods)"
  import_images "$dir"
  e2e_dns_apply

  rm -rf "$out"
  mkdir -p "$out"
  local pid sampler= start=$SECONDS
  pid=$(agent_pid)
  if [ -n "$pid" ]; then
    sample_agent "$pid" >"$out/agent.samples" &
    sampler=$!
  fi
  echo "conformance: running e2e.test $E2E_VERSION ($suite) against $CELLIUM_K8S_SERVER; log: $out/e2e.log" >&2
  # e2e.test leaves kubeconfig copies (test-kuberc*) in its TMPDIR: give it one of its own, removed after
  local etmp
  etmp=$(mktemp -d)
  if [ "$procs" = 1 ]; then
    # shellcheck disable=SC2046
    TMPDIR="$etmp" "$E2E_BIN/e2e.test" $(e2e_flags) --report-dir="$out" --ginkgo.json-report="$out/report.json" \
      --ginkgo.timeout="$timeout" --ginkgo.focus="$FOCUS" --ginkgo.skip="$SKIP" >"$out/e2e.log" 2>&1 || rc=$?
  else
    # shellcheck disable=SC2046
    TMPDIR="$etmp" "$ginkgo" --procs="$procs" --no-color -v --timeout="$timeout" --focus="$FOCUS" --skip="$SKIP" \
      --output-dir="$out" --json-report=report.json "$E2E_BIN/e2e.test" -- \
      $(e2e_flags | sed 's/ --ginkgo\.[a-z-]*//g') --report-dir="$out" >"$out/e2e.log" 2>&1 || rc=$?
  fi
  local wall=$((SECONDS - start))
  rm -rf "$etmp"
  [ -z "$sampler" ] || { kill "$sampler" 2>/dev/null || true; wait "$sampler" 2>/dev/null || true; }
  [ -f "$out/report.json" ] || { tail -n 30 "$out/e2e.log" >&2; e2e_die "e2e.test exited $rc without a report (log: $out/e2e.log)"; }
  node --import="$ROOT/test/loader/register.mjs" "$ROOT/test/conformance/report-cli.ts" \
    --report "$out/report.json" --focus "$FOCUS" --skip "$SKIP" --wall "$wall" \
    ${sampler:+--samples "$out/agent.samples"} | tee "$out/results.txt"
}

case ${1:-run} in
  build) build ;;
  check) check ;;
  prepare) prepare ;;
  list) shift; list "$@" ;;
  run) shift; run "$@" ;;
  --*) run "$@" ;;
  *) e2e_die "usage: $0 [run] [--suite S] [--dir DIR] [--out OUT] | build | prepare | check | list [S]" ;;
esac
