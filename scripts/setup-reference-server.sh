#!/usr/bin/env bash
# Install the reference OpenHands app server (openhands-ai, one pinned version from PyPI) into a
# cached virtualenv outside the repository, for the bench to measure against, and print that
# venv's python path as the LAST line of stdout. All progress goes to stderr.
#
#   PY=$(scripts/setup-reference-server.sh | tail -n1)
#   "$PY" bench/reference-server.py --port "$PORT"
#
# Not part of the tests' preparation: the bench (npm run bench) runs it when it needs the peer.
#
# Environment:
#   REFERENCE_SERVER_VERSION  openhands-ai version (default below)
#   REFERENCE_SERVER_PYTHON   use this interpreter instead of probing (3.12 or 3.13: openhands-ai
#                             declares requires-python >=3.12,<3.14)
#   AGENT_CP_CACHE_DIR        cache root (default ${XDG_CACHE_HOME:-$HOME/.cache}/agent-control-plane)
#   PYENV_ROOT                where pyenv versions are looked for (default $HOME/.pyenv)
#
# Exit codes: 0 ok, 3 no usable Python 3.12/3.13, 4 install failed, other = unexpected error.
# Cache folder: openhands-ai-<version>-<constraints hash>-py<major.minor> (see
# scripts/lib/cached-venv.sh). The default version installs with every dependency pinned by
# bench/reference-server-constraints.txt (its pip freeze): the same code everywhere, and no
# resolver backtracking; another version installs unconstrained.
set -euo pipefail

DEFAULT_VERSION=1.11.0
tool=setup-reference-server
# shellcheck source=lib/cached-venv.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/cached-venv.sh"

# Importing the app module itself would start its side effects; the package and uvicorn suffice.
imports_app_server() { "$1/bin/python" -c 'import openhands.app_server, uvicorn'; }

main() {
  local version=${REFERENCE_SERVER_VERSION:-$DEFAULT_VERSION} name pins=() constraints
  constraints="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/bench/reference-server-constraints.txt"
  name=openhands-ai-$version
  if [[ $version == "$DEFAULT_VERSION" ]]; then
    name+=-$(sha256sum "$constraints" | cut -c1-8)
    pins=(-c "$constraints")
  fi
  provide_venv "$name" 12 13 REFERENCE_SERVER_PYTHON "the reference server (openhands-ai $version)" \
    imports_app_server bin/python "openhands-ai==$version" ${pins[@]+"${pins[@]}"}
}

main "$@"
