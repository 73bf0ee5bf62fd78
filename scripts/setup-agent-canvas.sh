#!/usr/bin/env bash
# Fetch Agent Canvas (npm @openhands/agent-canvas, one pinned version: today's OpenHands web UI)
# into the cache outside the repository and print its prebuilt browser build folder (the one
# holding index.html) as the LAST line of stdout. Progress goes to stderr.
#
#   DIR=$(scripts/setup-agent-canvas.sh | tail -n1)   # → …/agent-canvas-1.20.0/build
#
# Only the package's tarball is fetched (`npm pack`): nothing is installed and no dependency is
# resolved. `npm install` of this package cannot work here (engines.node >=24, and two pinned
# dependencies are missing from the registry), and the service needs only `package/build/`.
# The files are kept exactly as published; the service adds its settings at serve time.
#
# Environment:
#   AGENT_CANVAS_VERSION    version to fetch (default below)
#   AGENT_CANVAS_INTEGRITY  expected sha512 integrity of the tarball (default: pinned for the
#                           default version; other versions rely on npm's own registry check)
#   AGENT_CP_CACHE_DIR      cache root (default ${XDG_CACHE_HOME:-$HOME/.cache}/agent-control-plane)
#
# Exit codes: 0 ok; 3 cannot fetch on this machine (no npm, tar or openssl, or the registry is
# unreachable or lacks that version); 4 the tarball is not what was expected (integrity, no
# build/index.html); other = unexpected error.
# Cache folder: agent-canvas-<version>/ (build/, LICENSE, package.json and a .ready file), made
# in a temporary sibling under a lock and renamed into place, so a killed or concurrent run
# never leaves a half-extracted folder behind.
set -euo pipefail

DEFAULT_VERSION=1.20.0
DEFAULT_INTEGRITY=sha512-uq28bmdMapsDN0ltp5ZHYm9xfuk7cHktNkd0NY38w/UTq25wJTqSKSPya+2+ky0+HpGX2vmn0uF3mHuNCoOb2w==
PACKAGE=@openhands/agent-canvas
log() { printf 'setup-agent-canvas: %s\n' "$*" >&2; }
die() {
  local code=$1
  shift
  log "ERROR: $*"
  exit "$code"
}

main() {
  local version=${AGENT_CANVAS_VERSION:-$DEFAULT_VERSION}
  local integrity=${AGENT_CANVAS_INTEGRITY:-}
  [[ -z $integrity && $version == "$DEFAULT_VERSION" ]] && integrity=$DEFAULT_INTEGRITY
  [[ $version =~ ^[0-9A-Za-z.+-]+$ ]] || die 2 "not a version: $version"
  local cache_root=${AGENT_CP_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/agent-control-plane}
  local target=$cache_root/agent-canvas-$version
  if [[ -f $target/.ready ]]; then
    printf '%s\n' "$target/build"
    return 0
  fi
  for tool in npm tar openssl flock; do
    command -v "$tool" >/dev/null 2>&1 || die 3 "$tool is not installed"
  done
  mkdir -p "$cache_root"
  exec 9>"$cache_root/agent-canvas.lock"
  flock 9
  if [[ -f $target/.ready ]]; then # another run finished it while this one waited
    printf '%s\n' "$target/build"
    return 0
  fi
  local tmp
  tmp=$(mktemp -d "$cache_root/.agent-canvas-$version.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  log "fetching $PACKAGE@$version (the package tarball only)"
  # Few, short retries: the service waits for this at its first start and starts without a UI
  # when the registry cannot be reached.
  (cd "$tmp" && npm pack "$PACKAGE@$version" --ignore-scripts --loglevel=error \
    --fetch-retries=1 --fetch-retry-mintimeout=2000 --fetch-retry-maxtimeout=5000 --fetch-timeout=60000 >&2) ||
    die 3 "npm pack $PACKAGE@$version failed (registry unreachable, or no such version)"
  local tarball
  tarball=$(find "$tmp" -maxdepth 1 -name '*.tgz' -print -quit)
  [[ -n $tarball ]] || die 4 "npm pack wrote no tarball"
  if [[ -n $integrity ]]; then
    local actual
    actual="sha512-$(openssl dgst -sha512 -binary "$tarball" | base64 -w0)"
    [[ $actual == "$integrity" ]] || die 4 "the tarball's integrity is $actual, expected $integrity"
  fi
  tar -xzf "$tarball" -C "$tmp" package/build package/LICENSE package/package.json ||
    die 4 "the tarball has no package/build"
  [[ -f $tmp/package/build/index.html ]] || die 4 "the tarball's build has no index.html"
  mv "$tmp/package/build" "$tmp/package/LICENSE" "$tmp/package/package.json" "$tmp/"
  rm -rf "$tmp/package" "$tarball"
  touch "$tmp/.ready"
  rm -rf "$target"
  mv "$tmp" "$target"
  trap - EXIT
  log "ready: $target"
  printf '%s\n' "$target/build"
}

# Everything runs from main, so bash has parsed the whole file before the download.
main "$@"
