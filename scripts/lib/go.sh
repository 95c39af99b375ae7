# Sourced by scripts/k8s.sh and scripts/hubble.sh (after they set GO_NEED, the oldest Go their
# go.mod accepts, and CACHE, their cache directory): finding a Go that new, and running it with the
# script's own module and build caches, never the user's or a go.work.

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
