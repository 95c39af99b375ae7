#!/usr/bin/env bash
# The real hubble CLI, for the tests and benchmarks of Cellium's Hubble server (docs/cells/hubble.md).
#
#   scripts/hubble.sh build     builds github.com/cilium/cilium/hubble at the version test/hubble-cli/go.mod
#                               pins (once per version and go.sum, cached)
#   scripts/hubble.sh check     why it cannot be built here (exit 3), is not built yet (exit 4), or
#                               where it is (exit 0, the path on the last line); one line
#   scripts/hubble.sh path      the binary's path (exit 0 only when built)
#   scripts/hubble.sh prepare   builds when Go and the module proxy are there; otherwise says in one
#                               line why the Hubble CLI tests will skip (scripts/test.sh)
#
# The cache is ${XDG_CACHE_HOME:-~/.cache}/cellium-hubble (CELLIUM_HUBBLE_CACHE overrides): the Go
# module and build caches and <version>/hubble. Go: CELLIUM_HUBBLE_GO, PATH's go, /usr/local/go/bin/go,
# the first at least as new as go.mod asks (Debian's old golang-go is never chosen).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
MOD="$ROOT/test/hubble-cli"
PKG=github.com/cilium/cilium/hubble
VERSION=$(awk '$1 == "github.com/cilium/cilium" { print $2; exit }' "$MOD/go.mod")
GO_NEED=$(awk '$1 == "go" { print $2 }' "$MOD/go.mod")
CACHE="${CELLIUM_HUBBLE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cellium-hubble}"
BIN="$CACHE/$VERSION/hubble"

die() {
  echo "hubble: $*" >&2
  exit 1
}

# find_go and go_env (CELLIUM_*_GO names a Go to use instead of the one found)
# shellcheck source=lib/go.sh
source "$ROOT/scripts/lib/go.sh"

stamp() {
  cat "$MOD/go.mod" "$MOD/go.sum" | sha256sum | cut -d' ' -f1
}

built() {
  [ -x "$BIN" ] && [ -f "$BIN.stamp" ] && [ "$(cat "$BIN.stamp")" = "$(stamp)" ]
}

unbuildable() {
  local go out
  go=$(find_go "${CELLIUM_HUBBLE_GO:-}")
  if [ -z "$go" ]; then
    echo "no Go >= $GO_NEED (PATH's go or /usr/local/go/bin/go; Debian's golang-go is too old): the hubble CLI cannot be built"
    return
  fi
  mkdir -p "$CACHE"
  if ! out=$(cd "$MOD" && go_env timeout 120 "$go" mod download "github.com/cilium/cilium@$VERSION" 2>&1); then
    echo "Go module proxy unreachable ($(go_env "$go" env GOPROXY)): cannot download github.com/cilium/cilium $VERSION: $(echo "$out" | tail -n1)"
  fi
}

check() {
  if built; then
    echo "hubble: hubble CLI $VERSION ready: $BIN"
    return 0
  fi
  local why
  why=$(unbuildable)
  if [ -n "$why" ]; then
    echo "hubble: $why"
    return 3
  fi
  echo "hubble: hubble CLI $VERSION not built yet: run bash scripts/hubble.sh build (scripts/test.sh does before tap)"
  return 4
}

build() {
  local go why start rc=0
  mkdir -p "$CACHE/$VERSION"
  exec 9>"$CACHE/$VERSION/build.lock"
  flock 9
  if built; then
    echo "hubble: hubble CLI $VERSION ready: $BIN"
    return 0
  fi
  why=$(unbuildable)
  [ -z "$why" ] || die "$why"
  go=$(find_go "${CELLIUM_HUBBLE_GO:-}")
  echo "hubble: building $PKG $VERSION (test/hubble-cli, $("$go" version | cut -d' ' -f3)) into $BIN; cold: about 15 minutes on 2 cores"
  start=$(date +%s)
  (cd "$MOD" && go_env "$go" build -trimpath -ldflags="-s -w" -o "$BIN.tmp" "$PKG") || rc=$?
  if [ $rc -ne 0 ]; then
    rm -f "$BIN.tmp"
    die "go build of $PKG failed (output above)"
  fi
  mv "$BIN.tmp" "$BIN"
  stamp >"$BIN.stamp"
  echo "hubble: built in $(($(date +%s) - start)) s: $BIN"
}

case "${1:-}" in
  build) build ;;
  check) check ;;
  path)
    built || exit 4
    echo "$BIN"
    ;;
  prepare)
    rc=0
    check >/dev/null || rc=$?
    case $rc in
      0) check ;;
      3) echo "$(check || true); the Hubble CLI tests will skip" ;;
      *) build ;;
    esac
    ;;
  *) die "usage: scripts/hubble.sh build|check|path|prepare" ;;
esac
