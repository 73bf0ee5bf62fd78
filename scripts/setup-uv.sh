#!/usr/bin/env bash
# Install uv (PyPI `uv`, Astral's Python package installer: one static binary in its wheel) into
# a cached virtualenv outside the repository, and print the uv binary as the LAST line of stdout.
# Automation runs need it inside their sandboxes: the automation service's preset setup.sh runs
# `uv venv` and `uv pip install` there (docs/automation-service-notes.md).
#
#   UV=$(scripts/setup-uv.sh | tail -n1)
#
# Environment:
#   UV_VERSION          version to install (default below)
#   UV_SETUP_PYTHON     use this interpreter for the venv instead of probing (3.9 to 3.13)
#   AGENT_CP_CACHE_DIR  cache root (default ${XDG_CACHE_HOME:-$HOME/.cache}/agent-control-plane)
#
# Exit codes: 0 ok, 3 no usable Python, 4 install failed, other = unexpected error.
set -euo pipefail

DEFAULT_VERSION=0.13.9
tool=setup-uv
# shellcheck source=lib/cached-venv.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/cached-venv.sh"

runs_uv() { "$1/bin/uv" --version >/dev/null; }

main() {
  local version=${UV_VERSION:-$DEFAULT_VERSION}
  provide_venv "uv-$version" 9 13 UV_SETUP_PYTHON "uv $version" runs_uv bin/uv "uv==$version"
}

main "$@"
