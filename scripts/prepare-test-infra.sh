#!/usr/bin/env bash
# Builds (or finds in the cache) everything the tests run against, one after the other,
# before any test starts: on a machine without the caches the builds would otherwise run
# alongside timing-sensitive tests on the same 2 cores. Each step is instant when cached.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bash "$here/build-ferretdb.sh" >/dev/null
bash "$here/build-kube.sh" >/dev/null

# Exit 3 means "cannot be installed on this machine" (no Python >= 3.12, no apt-get or root):
# not fatal here, the tests that need the tool fail loudly saying what is missing instead.
optional() {
  local status=0
  bash "$here/$1" "${@:2}" >/dev/null || status=$?
  if [ "$status" -ne 0 ] && [ "$status" -ne 3 ]; then exit "$status"; fi
}
optional setup-agent-server.sh
# The agent server the d6 web UI's conversations run on (test/e2e/d6-agent-server.test.ts).
AGENT_SERVER_VERSION=1.0.0a6 optional setup-agent-server.sh
optional setup-browser.sh
optional setup-schemathesis.sh
optional setup-debian-tool.sh bubblewrap bwrap
optional setup-debian-tool.sh passt pasta
optional setup-sdk-workspace.sh
optional setup-ts-client.sh
optional setup-openhands-cli.sh
optional setup-agent-canvas.sh
# The automation service (test/automations/): about 800 MB and 4 minutes on a cold machine.
optional setup-automation.sh
# Its PostgreSQL (Debian's, installed or unpacked into the cache).
optional setup-postgres.sh
