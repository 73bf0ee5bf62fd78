#!/usr/bin/env bash
# Build kube-apiserver, etcd, kubectl and kwok from the Go module proxy into a cache
# outside the repository, and reuse them when they are already there.
#
#   scripts/build-kube.sh            # prints the bin dir as the last stdout line
#   BIN=$(scripts/build-kube.sh | tail -n1)
#
# Environment:
#   K8S_VERSION         Kubernetes version (default 1.34.2; 1.32-1.35 work the same way)
#   KWOK_VERSION        kwok version (default v0.7.0; v0.8.0 also builds, but it has no
#                       built-in default stages: it exits "no stages found" unless given
#                       stage YAMLs with -c, e.g. kustomize/stage/{node,pod}/fast/*.yaml)
#   AGENT_CP_CACHE_DIR  cache root (default ${XDG_CACHE_HOME:-$HOME/.cache}/agent-control-plane)
#
# Layout: $AGENT_CP_CACHE_DIR/kube-<K8S_VERSION>/
#   bin/{kube-apiserver,etcd,kubectl,kwok}   the binaries
#   mod/{go.mod,go.sum}               wrapper module used to build kube-apiserver, kubectl and etcd
#   kwok.version                      kwok version the cached bin/kwok was built from
#
# Why a wrapper module: k8s.io/kubernetes requires its staging modules at v0.0.0 and
# maps them with `replace => ./staging/...`, so `go install k8s.io/kubernetes/cmd/...@v1.x`
# cannot work. Our own module requires k8s.io/kubernetes and replaces every staging
# module with its published v0.<minor>.<patch> tag (list derived from k8s' go.mod).
# etcd is built from the same module graph at the version k8s.io/kubernetes pins.
# kubectl (the tests render the kustomizations with `kubectl kustomize`) comes from the
# same module graph, so its version always matches the API server's.
# kwok's go.mod has no replace directives, so a plain `go install pkg@version` works.
#
# Progress goes to stderr; the bin dir is the last line on stdout.
set -euo pipefail

K8S_VERSION="${K8S_VERSION:-1.34.2}"
K8S_VERSION="${K8S_VERSION#v}"
KWOK_VERSION="${KWOK_VERSION:-v0.7.0}"
[[ $KWOK_VERSION == v* ]] || KWOK_VERSION="v$KWOK_VERSION"

CACHE_ROOT="${AGENT_CP_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/agent-control-plane}"
KDIR="$CACHE_ROOT/kube-$K8S_VERSION"
BIN="$KDIR/bin"
MODDIR="$KDIR/mod"

have_bin() {
  case "$1" in
    kwok) [[ -x "$BIN/kwok" && -f "$KDIR/kwok.version" && "$(<"$KDIR/kwok.version")" == "$KWOK_VERSION" ]] ;;
    *) [[ -x "$BIN/$1" ]] ;;
  esac
}
all_present() { have_bin kube-apiserver && have_bin etcd && have_bin kubectl && have_bin kwok; }

# Fast path: nothing to do.
if all_present; then
  printf '%s\n' "$BIN"
  exit 0
fi

log() { printf '[build-kube] %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

command -v go >/dev/null 2>&1 || die "go not found in PATH"
command -v flock >/dev/null 2>&1 || die "flock not found in PATH (util-linux)"

[[ $K8S_VERSION =~ ^1\.([0-9]+)\.([0-9]+)$ ]] || die "K8S_VERSION must look like 1.34.2, got '$K8S_VERSION'"
K8S_MINOR="${BASH_REMATCH[1]}"
STAGING_VERSION="v0.${K8S_VERSION#1.}" # staging modules are tagged v0.<minor>.<patch>

mkdir -p "$BIN" "$MODDIR"

# Serialize concurrent runs: the second one waits and then finds the binaries.
exec 9>"$KDIR/.lock"
if ! flock -n 9; then
  log "another build holds $KDIR/.lock, waiting..."
  flock 9
fi
if all_present; then
  printf '%s\n' "$BIN"
  exit 0
fi

export GOTOOLCHAIN=local CGO_ENABLED=0 GOWORK=off GOFLAGS=-buildvcs=false
log "go: $(go version)"
log "cache: $KDIR (GOMODCACHE=$(go env GOMODCACHE), GOCACHE=$(go env GOCACHE))"

TMPFILES=()
cleanup() { local f; for f in "${TMPFILES[@]+"${TMPFILES[@]}"}"; do rm -rf -- "$f"; done; }
trap cleanup EXIT

elapsed() { local s=$1; printf '%dm%02ds' $(((SECONDS - s) / 60)) $(((SECONDS - s) % 60)); }

# --- k8s.io/kubernetes go.mod from the proxy --------------------------------------
k8s_gomod() {
  local json file
  json="$(cd "$KDIR" && go mod download -json "k8s.io/kubernetes@v$K8S_VERSION")" \
    || die "go mod download k8s.io/kubernetes@v$K8S_VERSION failed: $json"
  file="$(printf '%s\n' "$json" | sed -n 's/^[[:space:]]*"GoMod":[[:space:]]*"\(.*\)",\{0,1\}[[:space:]]*$/\1/p')"
  [[ -n $file && -f $file ]] || die "no GoMod in: $json"
  printf '%s\n' "$file"
}

# Prints one line per replace directive of a go.mod:
#   staging <module>            for `<module> => ./staging/src/...`
#   module  <old> <new>@<ver>   for module replacements (copied as-is)
#   local   <old> <path>        for other filesystem replacements (cannot be copied)
parse_replaces() {
  awk '
    { sub(/\/\/.*/, "") }
    /^replace[ \t]*\(/ { blk = 1; next }
    blk && /^[ \t]*\)/ { blk = 0; next }
    /^replace[ \t]/ { sub(/^replace[ \t]+/, ""); one = 1 }
    blk || one {
      one = 0
      $0 = $0
      if (NF == 0) next
      if ($2 == "=>") { old = $1; nw = $3; nv = $4 } else { old = $1 "@" $2; nw = $4; nv = $5 }
      if (nw ~ /^\.\/staging\/src\//) print "staging", $1
      else if (nw ~ /^(\.|\/)/) print "local", old, nw
      else print "module", old, nw "@" nv
    }
  ' "$1"
}

prepare_wrapper() {
  local gomod etcd_version start=$SECONDS
  local -a edits=()
  local kind a b n_staging=0
  gomod="$(k8s_gomod)"
  while read -r kind a b; do
    case "$kind" in
      staging) edits+=("-replace=$a=$a@$STAGING_VERSION"); n_staging=$((n_staging + 1)) ;;
      module) edits+=("-replace=$a=$b") ;;
      local) log "warning: ignoring non-staging local replace $a => $b" ;;
    esac
  done < <(parse_replaces "$gomod")
  ((n_staging > 0)) || die "found no staging replace lines in $gomod"
  etcd_version="$(awk '$1 == "go.etcd.io/etcd/server/v3" { print $2; exit }' "$gomod")"
  [[ -n $etcd_version ]] || die "k8s.io/kubernetes@v$K8S_VERSION does not pin go.etcd.io/etcd/server/v3"
  ETCD_VERSION="$etcd_version"
  K8S_BUILD_DATE="$(sed -n 's/.*"Time":"\([^"]*\)".*/\1/p' "${gomod%.mod}.info" 2>/dev/null || true)"

  cd "$MODDIR"
  [[ -f go.mod ]] || go mod init local/agent-control-plane-kube >/dev/null 2>&1
  log "wrapper module: $n_staging staging replaces -> $STAGING_VERSION, etcd $ETCD_VERSION"
  go mod edit "${edits[@]}"
  # go get prints one "go: added" line per module (~150); keep only the downloads.
  go get "k8s.io/kubernetes/cmd/kube-apiserver@v$K8S_VERSION" "k8s.io/kubernetes/cmd/kubectl@v$K8S_VERSION" \
    "go.etcd.io/etcd/server/v3@$ETCD_VERSION" 2>&1 | { grep -v '^go: added ' || true; } >&2
  log "wrapper module ready ($(elapsed "$start"))"
}

# go build inside the wrapper module to a temp name, then rename atomically.
build_in_wrapper() {
  local name=$1 pkg=$2 ldflags=$3 start=$SECONDS tmp
  tmp="$BIN/.$name.tmp.$$"
  TMPFILES+=("$tmp")
  log "building $name ($pkg)..."
  (cd "$MODDIR" && go build -mod=mod -trimpath -ldflags "$ldflags" -o "$tmp" "$pkg")
  mv -f "$tmp" "$BIN/$name"
  log "built $name in $(elapsed "$start")"
}

ETCD_VERSION=""
K8S_BUILD_DATE=""
if ! have_bin kube-apiserver || ! have_bin etcd || ! have_bin kubectl; then
  prepare_wrapper
fi

if ! have_bin etcd; then
  build_in_wrapper etcd go.etcd.io/etcd/server/v3 \
    "-s -w -X go.etcd.io/etcd/api/v3/version.GitSHA=$ETCD_VERSION"
fi

vflags=""
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  vflags+=" -X $p.gitVersion=v$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$K8S_MINOR"
  # The proxy does not tell the git commit; an empty one beats "$Format:%H$".
  vflags+=" -X $p.gitTreeState=clean -X $p.gitCommit="
  [[ -z $K8S_BUILD_DATE ]] || vflags+=" -X $p.buildDate=$K8S_BUILD_DATE"
done

if ! have_bin kube-apiserver; then
  build_in_wrapper kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver "-s -w$vflags"
fi

if ! have_bin kubectl; then
  build_in_wrapper kubectl k8s.io/kubernetes/cmd/kubectl "-s -w$vflags"
fi

if ! have_bin kwok; then
  start=$SECONDS
  gobin="$KDIR/.kwok-gobin.$$"
  TMPFILES+=("$gobin")
  mkdir -p "$gobin"
  log "building kwok (sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION)..."
  # go install pkg@version uses kwok's own go.mod (it has no replace directives).
  (cd "$KDIR" && GOBIN="$gobin" go install -trimpath \
    -ldflags "-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=${KWOK_VERSION#v}" \
    "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION")
  mv -f "$gobin/kwok" "$BIN/kwok"
  printf '%s\n' "$KWOK_VERSION" >"$KDIR/kwok.version.tmp"
  mv -f "$KDIR/kwok.version.tmp" "$KDIR/kwok.version"
  log "built kwok in $(elapsed "$start")"
fi

all_present || die "binaries missing after build in $BIN"
log "done: $BIN"
printf '%s\n' "$BIN"
