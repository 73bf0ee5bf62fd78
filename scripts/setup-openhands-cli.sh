#!/usr/bin/env bash
# Install the OpenHands CLI (PyPI `openhands`, one pinned version) into a cached virtualenv
# outside the repository, and print the path of its `openhands` command as the LAST line of
# stdout. All progress goes to stderr. The device-flow test logs it in against the service.
#
#   OH=$(scripts/setup-openhands-cli.sh | tail -n1)
#   OPENHANDS_PERSISTENCE_DIR=$(mktemp -d) "$OH" login --server-url http://127.0.0.1:$PORT
#
# Environment:
#   OPENHANDS_CLI_VERSION  version to install (default below)
#   OPENHANDS_CLI_PYTHON   use this interpreter instead of probing (3.12: the release requires ==3.12.*)
#   AGENT_CP_CACHE_DIR     cache root (default ${XDG_CACHE_HOME:-$HOME/.cache}/agent-control-plane)
#   PYENV_ROOT             where pyenv versions are looked for (default $HOME/.pyenv)
#
# Exit codes: 0 ok, 3 no usable Python 3.12, 4 install failed, other = unexpected error.
# Cache folder: openhands-cli-<version>-py<major.minor> (see scripts/lib/cached-venv.sh).
set -euo pipefail

DEFAULT_VERSION=1.16.0
tool=setup-openhands-cli
# shellcheck source=lib/cached-venv.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/cached-venv.sh"

cli_runs() { "$1/bin/openhands" --help >/dev/null; }

main() {
  local version=${OPENHANDS_CLI_VERSION:-$DEFAULT_VERSION}
  provide_venv "openhands-cli-$version" 12 12 OPENHANDS_CLI_PYTHON "the OpenHands CLI (openhands $version)" cli_runs bin/openhands \
    "openhands==$version"
}

# Everything runs from main, so bash has parsed the whole file before the long pip install.
main "$@"
