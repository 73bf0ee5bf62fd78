#!/usr/bin/env bash
# Provides PostgreSQL's server programs (initdb, postgres) for the automation service's
# database (AUTOMATIONS=on, src/automations/embedded-postgres.ts), and prints the directory
# holding them as the LAST line of stdout. All progress goes to stderr.
#
#   PG_BIN=$(scripts/setup-postgres.sh | tail -n1)
#
# Order: $POSTGRES_BIN_DIR, initdb on PATH, Debian's installed server (/usr/lib/postgresql/<v>/bin,
# newest first), then Debian's postgresql-<v> and libpq5 packages unpacked into the cache
# (AGENT_CP_CACHE_DIR, default ~/.cache/agent-control-plane) in postgresql-<Debian version>/
# (needs no root; the server's other libraries come with every Debian base that has ICU 72).
# POSTGRES_FROM_CACHE=1 skips the system's programs (to try the unpacked ones).
#
# Exit codes: 0 ok, 3 cannot provide it here (no apt-get/dpkg-deb), 4 download failed.
set -euo pipefail

log() { printf 'setup-postgres: %s\n' "$*" >&2; }
die() {
  local code=$1
  shift
  log "ERROR: $*"
  exit "$code"
}
runs() { [[ -x $1/initdb && -x $1/postgres ]] && "$1/postgres" --version >/dev/null 2>&1; }
done_ok() {
  log "ready: $1 ($("$1/postgres" --version))"
  printf '%s\n' "$1"
  exit 0
}

main() {
  if [[ -n ${POSTGRES_BIN_DIR:-} ]]; then
    runs "$POSTGRES_BIN_DIR" || die 3 "POSTGRES_BIN_DIR=$POSTGRES_BIN_DIR has no working initdb and postgres"
    done_ok "$POSTGRES_BIN_DIR"
  fi
  local found
  if [[ -z ${POSTGRES_FROM_CACHE:-} ]]; then
    if found=$(command -v initdb) && found=$(dirname "$(readlink -f "$found")") && runs "$found"; then done_ok "$found"; fi
    for found in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k4 -n -r); do
      if runs "$found"; then done_ok "$found"; fi
    done
  fi

  local cache_root=${AGENT_CP_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/agent-control-plane}
  for found in "$cache_root"/postgresql-*/usr/lib/postgresql/*/bin; do
    if runs "$found"; then done_ok "$found"; fi
  done

  command -v apt-get >/dev/null 2>&1 && command -v dpkg-deb >/dev/null 2>&1 ||
    die 3 "no PostgreSQL here and no apt-get/dpkg-deb to fetch Debian's; install postgresql or set POSTGRES_BIN_DIR"
  mkdir -p "$cache_root"
  exec 9>"$cache_root/postgresql.lock"
  flock 9
  # The server package the `postgresql` metapackage names (postgresql-15 on Debian 12).
  local server version
  server=$(apt-cache depends postgresql 2>/dev/null | sed -n 's/^ *Depends: \(postgresql-[0-9][0-9]*\)$/\1/p' | head -n1)
  if [[ -z $server ]]; then
    log "apt knows no postgresql package; running apt-get update"
    apt-get update -q >&2 || die 4 "apt-get update failed (needs root, or a Debian mirror)"
    server=$(apt-cache depends postgresql 2>/dev/null | sed -n 's/^ *Depends: \(postgresql-[0-9][0-9]*\)$/\1/p' | head -n1)
    [[ -n $server ]] || die 4 "Debian offers no postgresql package for this system"
  fi
  version=$(apt-cache policy "$server" | sed -n 's/^ *Candidate: //p')
  local dir=$cache_root/postgresql-$version tmp
  tmp=$(mktemp -d "$cache_root/postgresql-build.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  log "downloading Debian's $server $version and libpq5"
  (cd "$tmp" && apt-get download -q "$server=$version" libpq5 >&2 2>/dev/null) || die 4 "apt-get download $server failed"
  for deb in "$tmp"/*.deb; do dpkg-deb -x "$deb" "$tmp/root"; done
  found=$(ls -d "$tmp"/root/usr/lib/postgresql/*/bin | head -n1)
  LD_LIBRARY_PATH=$(ls -d "$tmp"/root/usr/lib/*-linux-gnu | head -n1) runs "$found" ||
    die 4 "the unpacked postgres does not run (missing libraries?)"
  rm -rf "$dir"
  mv "$tmp/root" "$dir"
  done_ok "$(ls -d "$dir"/usr/lib/postgresql/*/bin | head -n1)"
}

main "$@"
