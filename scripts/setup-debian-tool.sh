#!/usr/bin/env bash
# Provides one of the programs the process runtime isolates sandboxes with, and prints the
# executable's path as the LAST line of stdout. All progress goes to stderr.
#
#   BWRAP=$(scripts/setup-debian-tool.sh bubblewrap bwrap | tail -n1)   # namespaces and mounts
#   PASTA=$(scripts/setup-debian-tool.sh passt pasta | tail -n1)        # each sandbox's network
#
# Order: $<TOOL>_PATH (BWRAP_PATH, PASTA_PATH), the program on PATH, then Debian's package
# unpacked into the cache (AGENT_CP_CACHE_DIR, default ~/.cache/agent-control-plane) in
# <package>-<Debian version>/. Unpacking (apt-get download + dpkg-deb -x) instead of installing
# needs no root and leaves the system alone; both programs need only libraries of every Debian base.
#
# Exit codes: 0 ok, 2 usage, 3 cannot provide it here (no apt-get/dpkg-deb), 4 download failed.
set -euo pipefail

package=${1:-}
program=${2:-}
[[ -n $package && -n $program ]] || {
  echo "usage: setup-debian-tool.sh <Debian package> <program>" >&2
  exit 2
}
log() { printf 'setup-%s: %s\n' "$package" "$*" >&2; }
die() {
  local code=$1
  shift
  log "ERROR: $*"
  exit "$code"
}
# pasta has no --version that exits 0 on every release; both answer --help.
runs() { "$1" --help >/dev/null 2>&1 || "$1" --version >/dev/null 2>&1; }
done_ok() {
  log "ready: $1"
  printf '%s\n' "$1"
  exit 0
}

candidate_version() {
  apt-cache policy "$package" 2>/dev/null | sed -n 's/^ *Candidate: //p' | grep -v '(none)' || true
}

main() {
  local override_var
  override_var="$(printf '%s' "$program" | tr '[:lower:]' '[:upper:]')_PATH"
  local override=${!override_var:-}
  if [[ -n $override ]]; then
    runs "$override" || die 3 "$override_var=$override does not run"
    done_ok "$override"
  fi
  local found
  if found=$(command -v "$program") && runs "$found"; then done_ok "$found"; fi

  local cache_root=${AGENT_CP_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/agent-control-plane}
  # The warm path: whichever cached version is there (no apt query).
  for found in "$cache_root/$package"-*/usr/bin/"$program"; do
    if [[ -x $found ]] && runs "$found"; then done_ok "$found"; fi
  done

  command -v apt-get >/dev/null 2>&1 && command -v dpkg-deb >/dev/null 2>&1 ||
    die 3 "no $program on PATH and no apt-get/dpkg-deb to fetch Debian's $package; install $package or set $override_var"
  mkdir -p "$cache_root"
  exec 9>"$cache_root/$package.lock"
  flock 9

  local version
  version=$(candidate_version)
  if [[ -z $version ]]; then
    log "apt knows no $package candidate; running apt-get update"
    apt-get update -q >&2 || die 4 "apt-get update failed (needs root, or a Debian mirror)"
    version=$(candidate_version)
    [[ -n $version ]] || die 4 "Debian offers no $package package for this system"
  fi
  local dir=$cache_root/$package-$version
  if [[ -x $dir/usr/bin/$program ]] && runs "$dir/usr/bin/$program"; then done_ok "$dir/usr/bin/$program"; fi

  local tmp
  tmp=$(mktemp -d "$cache_root/$package-build.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  log "downloading Debian's $package $version"
  (cd "$tmp" && apt-get download -q "$package=$version" >&2 2>/dev/null) || die 4 "apt-get download $package=$version failed"
  dpkg-deb -x "$tmp/$package"_*.deb "$tmp/root"
  runs "$tmp/root/usr/bin/$program" || die 4 "the unpacked $program does not run (missing libraries?)"
  rm -rf "$dir"
  mv "$tmp/root" "$dir"
  done_ok "$dir/usr/bin/$program"
}

main "$@"
