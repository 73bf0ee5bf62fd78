#!/usr/bin/env bash
# Install the OpenHands SDK's cloud workspace client (PyPI openhands-workspace, which brings
# openhands-sdk and the agent server client) into a cached virtualenv outside the repository,
# and print that venv's python as the LAST line of stdout. The tests drive it against the
# service as a user of today's SDK would (OpenHandsCloudWorkspace with a Bearer API key).
#
#   PY=$(scripts/setup-sdk-workspace.sh | tail -n1)
#
# Environment:
#   SDK_WORKSPACE_VERSION  version to install (default below)
#   SDK_WORKSPACE_PYTHON   use this interpreter instead of probing (3.12 or 3.13)
#   AGENT_CP_CACHE_DIR     cache root (default ${XDG_CACHE_HOME:-$HOME/.cache}/agent-control-plane)
#
# Exit codes: 0 ok, 3 no usable Python >= 3.12, 4 install failed, other = unexpected error.
# Cache folder: openhands-workspace-<version>-py<major.minor> (see scripts/lib/cached-venv.sh).
set -euo pipefail

DEFAULT_VERSION=1.58.2
tool=setup-sdk-workspace
# shellcheck source=lib/cached-venv.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/cached-venv.sh"

imports_workspace() { "$1/bin/python" -c 'from openhands.workspace import OpenHandsCloudWorkspace'; }

main() {
  local version=${SDK_WORKSPACE_VERSION:-$DEFAULT_VERSION}
  provide_venv "openhands-workspace-$version" 12 13 SDK_WORKSPACE_PYTHON \
    "the OpenHands SDK cloud workspace (openhands-workspace $version)" imports_workspace bin/python \
    "openhands-workspace==$version"
}

main "$@"
