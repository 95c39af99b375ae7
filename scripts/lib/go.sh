# Sourced by scripts/k8s.sh, scripts/hubble.sh and scripts/lib/e2e.sh (after they set GO_NEED, the
# oldest Go their go.mod accepts, and CACHE, their cache directory): finding a Go that new, running
# it with the script's own module and build caches, never the user's or a go.work, and the link
# flags of a Kubernetes build.

# Prints the path of a Go at least GO_NEED, or nothing: OVERRIDE ($1) if given, else PATH's go,
# else /usr/local/go/bin/go. Debian's Go 1.19 (/usr/bin/go from golang-go) is too old and never chosen.
find_go() {
  local g v candidates=("$(command -v go || true)" /usr/local/go/bin/go)
  [ -z "${1:-}" ] || candidates=("$1")
  for g in "${candidates[@]}"; do
    [ -n "$g" ] && [ -x "$g" ] || continue
    v=$(GOTOOLCHAIN=local "$g" env GOVERSION 2>/dev/null) || continue
    v=${v#go}
    if [ "$(printf '%s\n%s\n' "$GO_NEED" "$v" | sort -V | head -n1)" = "$GO_NEED" ]; then
      echo "$g"
      return
    fi
  done
}

# Runs "$@" with the local toolchain only and the caches under $CACHE.
go_env() {
  env GOTOOLCHAIN=local GOWORK=off GOFLAGS="-mod=mod -buildvcs=false" \
    GOMODCACHE="$CACHE/gomod" GOCACHE="$CACHE/gocache" "$@"
}

# The link flags of a binary built from k8s.io/kubernetes VERSION ($1): stripped, and the version it
# reports (kubectl version, the apiserver's /version, what e2e tests and version-skew checks read)
# set with -X as Kubernetes' own hack/lib/version.sh does; without it they say v0.0.0-master. The
# build date is the release's time from the module proxy (in $CACHE/gomod once downloaded).
k8s_ldflags() {
  local version=$1 major minor date v pkg flags="-s -w"
  major=${version#v}
  minor=${major#*.}
  minor=${minor%%.*}
  major=${major%%.*}
  date=$(sed -n 's/.*"Time":"\([^"]*\)".*/\1/p' "$CACHE/gomod/cache/download/k8s.io/kubernetes/@v/$version.info" 2>/dev/null || true)
  for pkg in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
    for v in "gitVersion=$version" "gitMajor=$major" "gitMinor=$minor" "gitTreeState=clean" ${date:+"buildDate=$date"}; do
      flags+=" -X $pkg.$v"
    done
  done
  echo "$flags"
}
