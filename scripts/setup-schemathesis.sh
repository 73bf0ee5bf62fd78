#!/usr/bin/env bash
# Install schemathesis (the property-based API tester, one pinned version from PyPI) into a
# cached virtualenv outside the repository, and print the path of its CLI as the LAST line of
# stdout. All progress goes to stderr. docs/schemathesis-notes.md lists the CLI's flags.
#
#   ST=$(scripts/setup-schemathesis.sh | tail -n1)
#   "$ST" run http://127.0.0.1:$PORT/openapi.json --url http://127.0.0.1:$PORT ...
#
# Environment:
#   SCHEMATHESIS_VERSION  version to install (default below)
#   SCHEMATHESIS_PYTHON   use this interpreter instead of probing (3.10 to 3.13)
#   AGENT_CP_CACHE_DIR    cache root (default ${XDG_CACHE_HOME:-$HOME/.cache}/agent-control-plane)
#   PYENV_ROOT            where pyenv versions are looked for (default $HOME/.pyenv)
#
# Exit codes: 0 ok, 3 no usable Python, 4 install failed, other = unexpected error.
# Cache folder: schemathesis-<version>-py<major.minor> (see scripts/lib/cached-venv.sh).
set -euo pipefail

DEFAULT_VERSION=4.32.5
tool=setup-schemathesis
# shellcheck source=lib/cached-venv.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/cached-venv.sh"

cli_runs() { "$1/bin/schemathesis" --version; }

main() {
  local version=${SCHEMATHESIS_VERSION:-$DEFAULT_VERSION}
  provide_venv "schemathesis-$version" 10 13 SCHEMATHESIS_PYTHON "schemathesis $version" cli_runs bin/schemathesis \
    "schemathesis==$version"
}

main "$@"
