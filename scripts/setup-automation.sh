#!/usr/bin/env bash
# Install the OpenHands automation service (PyPI openhands-automation, MIT) into a cached
# virtualenv outside the repository, and print that venv's uvicorn as the LAST line of stdout.
# The service hosts Canvas Automations against this control plane in its cloud mode
# (docs/automation-service-notes.md); about 800 MB and 4 minutes on the first run.
#
#   UVICORN=$(scripts/setup-automation.sh | tail -n1)
#   "$UVICORN" openhands.automation.app:app --host 127.0.0.1 --port $PORT
#
# Environment:
#   AUTOMATION_VERSION  version to install (default below)
#   AUTOMATION_PYTHON   use this interpreter instead of probing (3.12 or 3.13)
#   AGENT_CP_CACHE_DIR  cache root (default ${XDG_CACHE_HOME:-$HOME/.cache}/agent-control-plane)
#
# Exit codes: 0 ok, 3 no usable Python >= 3.12, 4 install failed, other = unexpected error.
# Cache folder: openhands-automation-<version>-py<major.minor> (see scripts/lib/cached-venv.sh).
set -euo pipefail

DEFAULT_VERSION=1.26.0
tool=setup-automation
# shellcheck source=lib/cached-venv.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/cached-venv.sh"

imports_service() { "$1/bin/python" -c 'import openhands.automation.config'; }

main() {
  local version=${AUTOMATION_VERSION:-$DEFAULT_VERSION}
  provide_venv "openhands-automation-$version" 12 13 AUTOMATION_PYTHON \
    "the OpenHands automation service (openhands-automation $version)" imports_service bin/uvicorn \
    "openhands-automation==$version"
}

main "$@"
