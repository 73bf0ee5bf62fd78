#!/usr/bin/env bash
# Builds FerretDB v1 (SQLite backend) from the Go module proxy into a cache outside the
# repository and prints the absolute binary path as the last line of stdout.
# Why it is built this way: docs/decisions/0002-ferretdb-as-the-embedded-default.md.
set -euo pipefail

VERSION=v1.24.2
# The build differs from upstream's in how it narrows lookups by _id (below): its own cache key.
BUILD="$VERSION-id-lookups"
HERE="$(cd "$(dirname "$0")" && pwd)"
MODULE=github.com/FerretDB/FerretDB
DIR="${AGENT_CP_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/agent-control-plane}/ferretdb-$BUILD"
BIN="$DIR/bin/ferretdb"

log() { echo "build-ferretdb: $*" >&2; }

# Only a binary that actually starts counts as cached (guards against foreign/corrupt files).
usable() { [ -x "$BIN" ] && "$BIN" --version >/dev/null 2>&1; }

if usable; then echo "$BIN"; exit 0; fi

mkdir -p "$DIR/bin"
# Serialise concurrent callers (e.g. parallel test workers); whoever waited re-checks
# because the first holder has probably finished the build meanwhile.
exec 9>"$DIR/.lock"
flock 9
if usable; then echo "$BIN"; exit 0; fi

# Holding the lock, any build.* dir is debris from a build killed by SIGKILL (trap skipped).
chmod -R u+w "$DIR"/build.* 2>/dev/null || true
rm -rf "$DIR"/build.*

command -v go >/dev/null || { log "go not found in PATH"; exit 1; }
# Never let go.mod's toolchain line trigger a toolchain download; modernc sqlite is pure Go.
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-mod=mod

# Temp dir inside the cache dir: same filesystem, so the final mv is an atomic rename
# and a killed build never leaves a half-written binary at $BIN.
tmp="$(mktemp -d "$DIR/build.XXXXXX")"
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT

log "downloading $MODULE@$VERSION via the Go module proxy"
# Run outside any module so a go.mod in the caller's cwd cannot interfere.
src="$(cd "$tmp" && go mod download -json "$MODULE@$VERSION" |
  sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')"
[ -d "$src" ] || { log "could not locate module source (got '$src')"; exit 1; }

# The module cache is read-only, and `go install pkg@version` would panic at start-up:
# build/version/version.txt is git-ignored upstream, so it is missing from the module zip
# (FerretDB#2982). Build from a writable copy with that file written.
cp -R "$src" "$tmp/src"
chmod -R u+w "$tmp/src"
echo "$VERSION" >"$tmp/src/build/version/version.txt"

# FerretDB v1's SQLite backend declares each collection's unique _id index on the expression
# sjson->"_id" but narrows an _id equality with sjson->'$._id': SQLite matches index expressions
# by their text, so it never uses the index and every find, update and delete by _id scans the
# table (a document inserted late in a collection of 10k took 168 ms to find). '_id' is the
# same label as "_id" to SQLite; with it the lookups use the index. test/ferretdb-id-index.test.ts
# checks the query plan on the built server's own database file.
ids="$tmp/src/internal/backends/sqlite/metadata/metadata.go"
grep -q "IDColumn = DefaultColumn + \"->'\$._id'\"" "$ids" || { log "FerretDB's _id expression moved: review the patch"; exit 1; }
sed -i "s|IDColumn = DefaultColumn + \"->'\$._id'\"|IDColumn = DefaultColumn + \"->'_id'\"|" "$ids"
# Upstream narrows only a filter that is nothing but an _id equality; every other filter scans
# the table, so reading 20 records by _id took 20 queries. The patch narrows any filter holding an
# _id equality or an $in of ids through the index (the handler checks each document against the
# whole filter anyway). test/ferretdb-id-index.test.ts reads the query plans.
(cd "$tmp/src" && git apply "$HERE/ferretdb/id-lookups.patch")

log "compiling (~1-2 min with an empty Go build cache)"
(cd "$tmp/src" && go build -trimpath -buildvcs=false -o "$tmp/ferretdb" ./cmd/ferretdb)
"$tmp/ferretdb" --version >/dev/null
mv -f "$tmp/ferretdb" "$BIN"
log "built $BIN"
echo "$BIN"
