#!/usr/bin/env bash
# Provides bubblewrap (bwrap), which the process runtime wraps every sandbox in (its own user,
# pid, mount, ipc and uts namespaces; see src/sandbox/isolation.ts), and prints the executable's
# path as the LAST line of stdout. All progress goes to stderr.
#
#   BWRAP=$(scripts/setup-bubblewrap.sh | tail -n1)
#
# Order: $BWRAP_PATH, a bwrap on PATH, then Debian's package unpacked into the cache
# (AGENT_CP_CACHE_DIR, default ~/.cache/agent-control-plane) in bubblewrap-<Debian version>/.
# Unpacking (apt-get download + dpkg-deb -x) instead of installing needs no root and leaves
# the system alone; bwrap's libraries (libcap2, libselinux1) are part of every Debian base.
#
# Exit codes: 0 ok, 3 cannot provide it here (no apt-get/dpkg-deb), 4 download failed.
set -euo pipefail

log() { printf 'setup-bubblewrap: %s\n' "$*" >&2; }
die() {
  local code=$1
  shift
  log "ERROR: $*"
  exit "$code"
}
runs() { "$1" --version >/dev/null 2>&1; }
done_ok() {
  log "ready: $1"
  printf '%s\n' "$1"
  exit 0
}

candidate_version() {
  apt-cache policy bubblewrap 2>/dev/null | sed -n 's/^ *Candidate: //p' | grep -v '(none)' || true
}

main() {
  if [[ -n ${BWRAP_PATH:-} ]]; then
    runs "$BWRAP_PATH" || die 3 "BWRAP_PATH=$BWRAP_PATH does not run"
    done_ok "$BWRAP_PATH"
  fi
  local found
  if found=$(command -v bwrap) && runs "$found"; then done_ok "$found"; fi

  local cache_root=${AGENT_CP_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/agent-control-plane}
  # The warm path: whichever cached version is there (no apt query).
  for found in "$cache_root"/bubblewrap-*/usr/bin/bwrap; do
    if [[ -x $found ]] && runs "$found"; then done_ok "$found"; fi
  done

  command -v apt-get >/dev/null 2>&1 && command -v dpkg-deb >/dev/null 2>&1 ||
    die 3 "no bwrap on PATH and no apt-get/dpkg-deb to fetch Debian's bubblewrap; install bubblewrap or set BWRAP_PATH"
  mkdir -p "$cache_root"
  exec 9>"$cache_root/bubblewrap.lock"
  flock 9

  local version
  version=$(candidate_version)
  if [[ -z $version ]]; then
    log "apt knows no bubblewrap candidate; running apt-get update"
    apt-get update -q >&2 || die 4 "apt-get update failed (needs root, or a Debian mirror)"
    version=$(candidate_version)
    [[ -n $version ]] || die 4 "Debian offers no bubblewrap package for this system"
  fi
  local dir=$cache_root/bubblewrap-$version
  if [[ -x $dir/usr/bin/bwrap ]] && runs "$dir/usr/bin/bwrap"; then done_ok "$dir/usr/bin/bwrap"; fi

  local tmp
  tmp=$(mktemp -d "$cache_root/bubblewrap-build.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  log "downloading Debian's bubblewrap $version"
  (cd "$tmp" && apt-get download -q "bubblewrap=$version" >&2 2>/dev/null) || die 4 "apt-get download bubblewrap=$version failed"
  dpkg-deb -x "$tmp"/bubblewrap_*.deb "$tmp/root"
  runs "$tmp/root/usr/bin/bwrap" || die 4 "the unpacked bwrap does not run (missing libraries?)"
  rm -rf "$dir"
  mv "$tmp/root" "$dir"
  done_ok "$dir/usr/bin/bwrap"
}

main "$@"
