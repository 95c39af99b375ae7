# Sourced by scripts/conformance.sh after scripts/lib/e2e.sh and e2e-images.sh: cluster DNS for the
# Services tests (they reach a Service by its name, and nslookup it): CoreDNS at the version kubeadm
# v1.34 deploys (cmd/kubeadm/app/constants CoreDNSVersion), built from its Go module (it has no
# replace lines, so `go install …@version` builds it), static, wrapped as
# registry.k8s.io/coredns/coredns:<version> into $E2E_IMAGES/coredns.tar, and deployed by
# test/conformance/coredns.yaml (the kube-dns Service at 10.96.0.10). Pods use it when the node's
# kubelet has clusterDNS 10.96.0.10; e2e_dns_apply says so when it does not.

E2E_DNS_IP=10.96.0.10

e2e_dns_version() {
  local v
  v=$(sed -n 's/^\s*CoreDNSVersion\s*=\s*"\(v[^"]*\)".*/\1/p' "$E2E_SRC/cmd/kubeadm/app/constants/constants.go")
  [ -n "$v" ] || e2e_die "no CoreDNSVersion in $E2E_SRC/cmd/kubeadm/app/constants/constants.go"
  echo "$v"
}

# The coredns binary (once per version) and its image archive (once per binary and this file).
e2e_dns_build() {
  local v go dir key work name
  v=$(e2e_dns_version)
  dir="$CACHE/coredns/$v"
  if [ ! -x "$dir/coredns" ]; then
    go=$(find_go "${CELLIUM_K8S_GO:-}")
    [ -n "$go" ] || e2e_die "no Go >= $GO_NEED: CoreDNS cannot be built"
    echo "conformance: building CoreDNS $v (go install github.com/coredns/coredns@$v, static) into $dir"
    rm -rf "$dir.tmp"
    mkdir -p "$dir.tmp"
    e2e_ticking coredns go_env GOMAXPROCS=2 CGO_ENABLED=0 GOBIN="$dir.tmp" nice -n 10 "$go" install -trimpath \
      -ldflags='-s -w' "github.com/coredns/coredns@$v" || { rm -rf "$dir.tmp"; e2e_die "go install of CoreDNS $v failed (output above)"; }
    rm -rf "$dir"
    mv "$dir.tmp" "$dir"
  fi
  name=registry.k8s.io/coredns/coredns:$v
  key=$( { echo "$name"; cat "$dir/coredns" "$ROOT/scripts/lib/e2e-dns.sh"; } | sha256sum | cut -c1-16)
  if e2e_image_fresh coredns "$key"; then
    echo "conformance: image $name ready ($E2E_IMAGES/coredns.tar)"
    return
  fi
  work="$E2E_IMAGES/coredns.rootfs.$$"
  rm -rf "$work"
  mkdir -p "$work/etc" "$work/tmp"
  chmod 1777 "$work/tmp"
  install -m 755 "$dir/coredns" "$work/coredns"
  printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532::/home/nonroot:/sbin/nologin\n' >"$work/etc/passwd"
  printf 'root:x:0:\nnonroot:x:65532:\n' >"$work/etc/group"
  e2e_image_save "$work" "$name" coredns "$key" 'ENTRYPOINT ["/coredns"]' 'EXPOSE 53'
}

# Deploys CoreDNS into the cluster of $KUBECONFIG and waits until it is ready; warns (stderr) when
# the node's kubelet does not point pods at it.
e2e_dns_apply() {
  local node dns
  sed "s|@SERVER@|$CELLIUM_K8S_SERVER|" "$ROOT/test/conformance/coredns.yaml" | kubectl apply -f - >&2 ||
    e2e_die "kubectl apply of test/conformance/coredns.yaml failed"
  kubectl -n kube-system rollout status deployment/coredns --timeout=180s >&2 ||
    e2e_die "CoreDNS is not ready within 3 min (kubectl -n kube-system describe pod -l k8s-app=kube-dns)"
  node=$(kubectl get nodes -o jsonpath='{.items[0].metadata.name}')
  dns=$(kubectl get --raw "/api/v1/nodes/$node/proxy/configz" 2>/dev/null | node -e '
    let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => {
      try { console.log((JSON.parse(s).kubeletconfig.clusterDNS || []).join(",")); } catch { console.log(""); }
    });')
  if [ "$dns" != "$E2E_DNS_IP" ]; then
    echo "conformance: the kubelet of $node has clusterDNS '${dns}', not $E2E_DNS_IP: pods do not resolve Service names, and the Services tests that use them fail" >&2
  fi
}
