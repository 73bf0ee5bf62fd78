#!/usr/bin/env bash
# Makes Debian's chromium available for the browser tests and prints its executable path as
# the LAST line of stdout. All progress goes to stderr.
#
#   CHROMIUM=$(scripts/setup-browser.sh | tail -n1)
#
# Environment:
#   CHROMIUM_PATH       use this browser instead (must be executable); nothing is installed
#   AGENT_CP_CACHE_DIR  cache root (default ${XDG_CACHE_HOME:-$HOME/.cache}/agent-control-plane)
#
# Exit codes: 0 ok, 3 cannot install here (no apt-get, or not root and no password-less sudo),
#             4 install failed, other = unexpected error.
#
# Why apt-get into the system rather than unpacking into the cache: chromium needs ~25 shared
# libraries that a base image lacks (gtk3, nss, pulse...); apt resolves them, and an unpacked
# tree would need a hand-maintained LD_LIBRARY_PATH and fontconfig setup. What the cache keeps
# is every .deb apt fetched, in a folder named after the chromium version (apt's
# Dir::Cache::archives), so a reinstall of that version runs with --no-download, without the
# network. The image's docker-clean hook only empties /var/cache/apt/archives, not this folder.
# Recommends (chromium-sandbox, desktop integration: ~100 more packages) are left out: the
# tests run headless as root with --no-sandbox.
set -euo pipefail

log() { printf 'setup-browser: %s\n' "$*" >&2; }
die() {
  local code=$1
  shift
  log "ERROR: $*"
  exit "$code"
}

readonly executable=/usr/bin/chromium

installed() {
  [[ -x $executable ]] && [[ $(dpkg-query -W -f='${db:Status-Abbrev}' chromium 2>/dev/null) == 'ii ' ]]
}

done_ok() {
  log "ready: $1"
  printf '%s\n' "$1"
  exit 0
}

candidate_version() {
  apt-cache policy chromium 2>/dev/null | sed -n 's/^ *Candidate: //p' | grep -v '(none)' || true
}

# apt-get with the cache folder as its archive dir; waits for other apt runs instead of failing.
apt_get() {
  "${sudo[@]}" apt-get -y -q --no-install-recommends \
    -o DPkg::Lock::Timeout=600 -o Dir::Cache::archives="$archives" "$@" >&2
}

install_chromium() {
  local start=$SECONDS version
  version=$(candidate_version)
  if [[ -z $version ]]; then
    log "apt knows no chromium candidate; running apt-get update"
    "${sudo[@]}" apt-get update -q >&2 || die 4 "apt-get update failed (Debian mirror reachable?)"
    version=$(candidate_version)
    [[ -n $version ]] || die 4 "Debian offers no chromium package for this system"
  fi
  archives=$cache_root/chromium-debs-$version
  mkdir -p "$archives/partial"
  export DEBIAN_FRONTEND=noninteractive

  if compgen -G "$archives/*.deb" >/dev/null && apt_get install --no-download chromium; then
    log "installed chromium $version from the cached .debs in $archives (no download)"
  else
    log "downloading chromium $version and its libraries into $archives (~110 MB)"
    if ! apt_get install chromium; then
      log "install failed; refreshing the package lists once and retrying"
      "${sudo[@]}" apt-get update -q >&2 || die 4 "apt-get update failed (Debian mirror reachable?)"
      version=$(candidate_version)
      archives=$cache_root/chromium-debs-$version
      mkdir -p "$archives/partial"
      apt_get install chromium || die 4 "apt-get install chromium failed"
    fi
  fi
  installed || die 4 "apt-get reported success but $executable is not installed"
  log "installed in $((SECONDS - start)) s: $("$executable" --version 2>/dev/null || echo '?')"
}

main() {
  if [[ -n ${CHROMIUM_PATH:-} ]]; then
    [[ -x $CHROMIUM_PATH ]] || die 3 "CHROMIUM_PATH=$CHROMIUM_PATH is not an executable file"
    done_ok "$CHROMIUM_PATH"
  fi
  installed && done_ok "$executable"

  command -v apt-get >/dev/null 2>&1 || die 3 "chromium is not installed at $executable and this system has no apt-get; install Chromium by hand and set CHROMIUM_PATH to its executable"
  sudo=()
  if [[ $(id -u) -ne 0 ]]; then
    sudo -n true 2>/dev/null || die 3 "chromium is not installed; installing it needs root: run 'sudo bash scripts/setup-browser.sh' once (or set CHROMIUM_PATH)"
    sudo=(sudo -n)
  fi

  cache_root=${AGENT_CP_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/agent-control-plane}
  mkdir -p "$cache_root"
  # Concurrent callers (several worktrees' pretests) install once; the others wait, then re-check.
  exec 9>"$cache_root/chromium.lock"
  if ! flock -n 9; then
    log "another run is installing chromium; waiting for it"
    flock 9
  fi
  installed && done_ok "$executable"

  install_chromium
  done_ok "$executable"
}

main "$@"
