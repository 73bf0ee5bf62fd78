#!/usr/bin/env bash
# Builds (or finds in the cache) everything the tests run against, one after the other,
# before any test starts: on a machine without the caches the builds would otherwise run
# alongside timing-sensitive tests on the same 2 cores. Each step is instant when cached.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bash "$here/build-ferretdb.sh" >/dev/null
bash "$here/build-kube.sh" >/dev/null
# No Python >= 3.12 (exit 3) is not fatal here: the real-agent tests say so loudly instead.
status=0
bash "$here/setup-agent-server.sh" >/dev/null || status=$?
if [ "$status" -ne 0 ] && [ "$status" -ne 3 ]; then exit "$status"; fi
