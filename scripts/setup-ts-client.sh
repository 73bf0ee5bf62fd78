#!/usr/bin/env bash
# Install the OpenHands TypeScript client (npm @openhands/typescript-client, one pinned version,
# the CloudClient today's web clients are built on) into the cache outside the repository, and
# print the folder that holds its node_modules as the LAST line of stdout. Progress goes to stderr.
#
#   DIR=$(scripts/setup-ts-client.sh | tail -n1)
#   node --input-type=module -e "import('$DIR/node_modules/@openhands/typescript-client/dist/clients.js')"
#
# Environment:
#   TS_CLIENT_VERSION   version to install (default below)
#   AGENT_CP_CACHE_DIR  cache root (default ${XDG_CACHE_HOME:-$HOME/.cache}/agent-control-plane)
#
# Exit codes: 0 ok, 3 no npm on this machine, 4 install failed, other = unexpected error.
# Cache folder: typescript-client-<version>/ with a .ready file once installed and loadable; it
# is built in a temporary sibling under a lock and renamed into place, so a killed or
# concurrent run never leaves a half-installed folder behind.
set -euo pipefail

DEFAULT_VERSION=1.39.0
log() { printf 'setup-ts-client: %s\n' "$*" >&2; }
die() {
  local code=$1
  shift
  log "ERROR: $*"
  exit "$code"
}

main() {
  local version=${TS_CLIENT_VERSION:-$DEFAULT_VERSION}
  local cache_root=${AGENT_CP_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/agent-control-plane}
  local target=$cache_root/typescript-client-$version
  if [[ -f $target/.ready ]]; then
    printf '%s\n' "$target"
    return 0
  fi
  command -v npm >/dev/null 2>&1 || die 3 "npm is not installed"
  command -v node >/dev/null 2>&1 || die 3 "node is not installed"
  mkdir -p "$cache_root"
  exec 9>"$cache_root/typescript-client.lock"
  flock 9
  if [[ -f $target/.ready ]]; then # another run finished it while this one waited
    printf '%s\n' "$target"
    return 0
  fi
  local tmp
  tmp=$(mktemp -d "$cache_root/.typescript-client-$version.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  log "installing @openhands/typescript-client@$version"
  printf '{"name":"acp-ts-client-cache","private":true,"type":"module"}\n' >"$tmp/package.json"
  npm install --prefix "$tmp" --no-audit --no-fund --ignore-scripts --loglevel=error \
    "@openhands/typescript-client@$version" >&2 || die 4 "npm install failed"
  (cd "$tmp" && node --input-type=module -e "const m = await import('@openhands/typescript-client/clients'); if (typeof m.CloudClient !== 'function') process.exit(1);") ||
    die 4 "the installed client has no CloudClient"
  touch "$tmp/.ready"
  rm -rf "$target"
  mv "$tmp" "$target"
  trap - EXIT
  log "ready: $target"
  printf '%s\n' "$target"
}

main "$@"
