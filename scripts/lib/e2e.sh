# Sourced by scripts/conformance.sh (after it sets ROOT): the upstream e2e test binary and the images
# its tests run, built offline from the pinned k8s.io/kubernetes module (docs/conformance.md).
#
#   e2e_check            one line: why e2e.test cannot be built here (exit 3) or nothing (exit 0)
#   e2e_build            e2e.test and agnhost into $E2E_BIN (once per go.mod, go.sum and link flags)
#   e2e_ginkgo           the ginkgo CLI of the version e2e.test links (parallel runs), printed path
#   e2e_images           the image archives into $E2E_IMAGES (once per their inputs)
#
# The cache is the Kubernetes harness's (${XDG_CACHE_HOME:-~/.cache}/cellium-k8s, CELLIUM_K8S_CACHE
# overrides), so the packages kube-apiserver, kubelet and kubectl share with e2e.test compile once:
# <version>/e2e/ holds e2e.test, agnhost and their stamp, images/ the archives that
# `npm run k8s -- up --with-kubelet` imports into containerd.

E2E_MOD="$ROOT/test/conformance/e2e"
E2E_HARNESS="$ROOT/test/k8s/harness"
E2E_VERSION=$(awk '$1 == "require" { $1 = "" ; $0 = $0 } $1 == "k8s.io/kubernetes" { print $2; exit }' "$E2E_MOD/go.mod")
GO_NEED=$(awk '$1 == "go" { print $2 }' "$E2E_MOD/go.mod")
CACHE="${CELLIUM_K8S_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cellium-k8s}"
E2E_BIN="$CACHE/$E2E_VERSION/e2e"
E2E_IMAGES="$CACHE/images"
# The module cache's copy of the pinned release (after `go mod download`): manifests and sources.
E2E_SRC="$CACHE/gomod/k8s.io/kubernetes@$E2E_VERSION"

# find_go, go_env and k8s_ldflags
# shellcheck source=go.sh
source "$ROOT/scripts/lib/go.sh"

e2e_die() {
  echo "conformance: $*" >&2
  exit 1
}

# The e2e module must build the same release as the harness, with the same replace lines.
e2e_same_pin() {
  local harness
  harness=$(awk '$1 == "require" { $1 = "" ; $0 = $0 } $1 == "k8s.io/kubernetes" { print $2; exit }' "$E2E_HARNESS/go.mod")
  [ "$harness" = "$E2E_VERSION" ] ||
    e2e_die "test/conformance/e2e/go.mod pins k8s.io/kubernetes $E2E_VERSION but test/k8s/harness/go.mod $harness: set both to one release (and copy the harness's replace block)"
  cmp -s <(sed -n '/^replace (/,/^)/p' "$E2E_MOD/go.mod") <(sed -n '/^replace (/,/^)/p' "$E2E_HARNESS/go.mod") ||
    e2e_die "the replace blocks of test/conformance/e2e/go.mod and test/k8s/harness/go.mod differ: copy the harness's into the e2e module and run go mod tidy there"
}

e2e_stamp() {
  { cat "$E2E_MOD/go.mod" "$E2E_MOD/go.sum"; k8s_ldflags "$E2E_VERSION"; } | sha256sum | cut -d' ' -f1
}

e2e_built() {
  [ -f "$E2E_BIN/.stamp" ] && [ "$(cat "$E2E_BIN/.stamp")" = "$(e2e_stamp)" ] &&
    [ -x "$E2E_BIN/e2e.test" ] && [ -x "$E2E_BIN/agnhost" ]
}

e2e_check() {
  local go out
  go=$(find_go "${CELLIUM_K8S_GO:-}")
  if [ -z "$go" ]; then
    echo "no Go >= $GO_NEED (CELLIUM_K8S_GO, PATH's go or /usr/local/go/bin/go): e2e.test cannot be built"
    return 3
  fi
  mkdir -p "$CACHE"
  if ! out=$(cd "$E2E_MOD" && go_env timeout 120 "$go" mod download "k8s.io/kubernetes@$E2E_VERSION" 2>&1); then
    echo "Go module proxy unreachable: cannot download k8s.io/kubernetes $E2E_VERSION: $(echo "$out" | tail -n1)"
    return 3
  fi
}

# Runs "$@" with a line a minute on stdout, so a log watcher sees a long build is alive.
e2e_ticking() {
  local what=$1 start=$SECONDS ticker rc=0
  shift
  (
    trap 'kill $! 2>/dev/null; exit 0' TERM
    while :; do
      sleep 60 &
      wait $!
      echo "conformance: still building $what ($((SECONDS - start)) s)"
    done
  ) &
  ticker=$!
  "$@" || rc=$?
  kill "$ticker" 2>/dev/null || true
  wait "$ticker" 2>/dev/null || true
  return $rc
}

# e2e.test (`go test -c k8s.io/kubernetes/test/e2e`, what upstream CI runs; -vet=off: vet of every
# test package would double the build) and agnhost (static, as
# its image ships it). Niced, GOMAXPROCS=2: a cold build takes tens of minutes on 2 cores.
e2e_build() {
  local go why tmp start t1 t2 flags
  e2e_same_pin
  mkdir -p "$CACHE/$E2E_VERSION"
  exec 8>"$CACHE/$E2E_VERSION/e2e.lock"
  flock 8
  if e2e_built; then
    echo "conformance: e2e.test and agnhost $E2E_VERSION ready in $E2E_BIN"
    return 0
  fi
  why=$(e2e_check) || e2e_die "$why"
  go=$(find_go "${CELLIUM_K8S_GO:-}")
  flags=$(k8s_ldflags "$E2E_VERSION")
  tmp="$CACHE/$E2E_VERSION/e2e.tmp.$$"
  rm -rf "$tmp"
  mkdir -p "$tmp"
  echo "conformance: building e2e.test and agnhost of k8s.io/kubernetes $E2E_VERSION ($("$go" version | cut -d' ' -f3)) into $E2E_BIN"
  start=$SECONDS
  (cd "$E2E_MOD" && e2e_ticking e2e.test go_env GOMAXPROCS=2 nice -n 10 "$go" test -c -vet=off -trimpath -ldflags="$flags" \
    -o "$tmp/e2e.test" k8s.io/kubernetes/test/e2e) || { rm -rf "$tmp"; e2e_die "go test -c k8s.io/kubernetes/test/e2e failed (output above)"; }
  t1=$((SECONDS - start))
  (cd "$E2E_MOD" && e2e_ticking agnhost go_env GOMAXPROCS=2 CGO_ENABLED=0 nice -n 10 "$go" build -trimpath -ldflags="$flags" \
    -o "$tmp/agnhost" k8s.io/kubernetes/test/images/agnhost) || { rm -rf "$tmp"; e2e_die "go build of agnhost failed (output above)"; }
  t2=$((SECONDS - start - t1))
  e2e_stamp >"$tmp/.stamp"
  echo "e2e.test ${t1}s agnhost ${t2}s load $(cut -d' ' -f1-3 /proc/loadavg)" >"$tmp/build-times"
  rm -rf "$E2E_BIN"
  mv "$tmp" "$E2E_BIN"
  echo "conformance: built e2e.test in $t1 s and agnhost in $t2 s: $E2E_BIN"
}

# The ginkgo CLI at the version e2e.test is built with (its go.mod), for runs in parallel processes
# (`ginkgo --procs N e2e.test`); `go install …@version`, outside the module. Prints its path.
e2e_ginkgo() {
  local v go bin
  v=$(awk '$1 == "github.com/onsi/ginkgo/v2" { print $2; exit }' "$E2E_MOD/go.mod")
  [ -n "$v" ] || e2e_die "no github.com/onsi/ginkgo/v2 in test/conformance/e2e/go.mod"
  bin="$CACHE/ginkgo-$v/ginkgo"
  if [ ! -x "$bin" ]; then
    go=$(find_go "${CELLIUM_K8S_GO:-}")
    [ -n "$go" ] || e2e_die "no Go >= $GO_NEED: the ginkgo CLI cannot be built"
    echo "conformance: building the ginkgo CLI $v into ${bin%/*}" >&2
    (cd "$CACHE" && go_env GOMAXPROCS=2 GOBIN="${bin%/*}" nice -n 10 "$go" install -trimpath -ldflags='-s -w' \
      "github.com/onsi/ginkgo/v2/ginkgo@$v" >&2) || e2e_die "go install of the ginkgo CLI $v failed (output above)"
  fi
  echo "$bin"
}
