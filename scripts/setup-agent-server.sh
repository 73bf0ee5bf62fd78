#!/usr/bin/env bash
# Install the OpenHands agent server (openhands-agent-server, -sdk, -tools, one pinned version)
# into a cached virtualenv outside the repository, and print that venv's python path as the
# LAST line of stdout. All progress goes to stderr.
#
#   PY=$(scripts/setup-agent-server.sh | tail -n1)
#   "$PY" -m openhands.agent_server --host 127.0.0.1 --port "$PORT"
#
# Environment:
#   AGENT_SERVER_VERSION  version of all three packages (default below; they move in lockstep)
#   AGENT_SERVER_PYTHON   use this interpreter instead of probing (3.12 or 3.13)
#   AGENT_CP_CACHE_DIR    cache root (default ${XDG_CACHE_HOME:-$HOME/.cache}/agent-control-plane)
#   PYENV_ROOT            where pyenv versions are looked for (default $HOME/.pyenv)
#
# Exit codes: 0 ok, 3 no usable Python >= 3.12, 4 install failed, other = unexpected error.
# Cache folder: agent-server-<version>-py<major.minor> (see scripts/lib/cached-venv.sh).
#
# 1.58.0 is the newest release that resolves against PyPI as reachable here: 1.58.1 and 1.58.2
# require certifi>=2026.10.19, which is not published there.
#
# An older version (1.0.0a6: the agent server the d6 web UI's release pins; or 1.1.0) does not work with
# today's releases of its dependencies; agent-server-constraints/<version>.txt then pins every
# package as it was on that release's day, resolved on CPython 3.12, which that venv then uses.
set -euo pipefail

DEFAULT_VERSION=1.58.0
tool=setup-agent-server
# shellcheck source=lib/cached-venv.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/cached-venv.sh"

# The api module is what fails to import when a dependency is too new (see agent-server-constraints/).
imports_agent_server() { "$1/bin/python" -c 'import openhands.agent_server.api'; }

# 1.0.0a6 and 1.1.0 render their prompts through a jinja bytecode cache in its own package folders
# (<prompts>/.jinja_cache, openhands/sdk/context/prompts/prompt.py), which an isolated sandbox
# sees read-only: its first conversation failed with "Read-only file system". So the cache is
# filled here, in the venv's final place (the cache keys hold the templates' paths), for every
# template the SDK ships, readable by all; a sandbox then only reads it.
imports_and_warms_prompt_cache() {
  imports_agent_server "$1" || return 1
  "$1/bin/python" - <<'PY'
import pathlib
import openhands.sdk
from openhands.sdk.context.prompts.prompt import _get_env

package = pathlib.Path(openhands.sdk.__file__).parent.parent
for folder in sorted({template.parent for template in package.rglob("*.j2")}):
    env = _get_env(str(folder))
    for template in sorted(folder.glob("*.j2")):
        env.get_template(template.name)
    for cached in (folder / ".jinja_cache").iterdir():
        cached.chmod(0o644)  # jinja writes them 0600; each sandbox runs as a uid of its own
PY
}

main() {
  local version=${AGENT_SERVER_VERSION:-$DEFAULT_VERSION}
  local constraints max_minor=13 pins=() verify=imports_agent_server
  constraints="$(dirname "${BASH_SOURCE[0]}")/agent-server-constraints/$version.txt"
  if [[ -f $constraints ]]; then
    max_minor=12
    pins=(--constraint "$(realpath "$constraints")")
    verify=imports_and_warms_prompt_cache
  fi
  provide_venv "agent-server-$version" 12 "$max_minor" AGENT_SERVER_PYTHON \
    "the OpenHands agent server (openhands-agent-server $version)" "$verify" bin/python \
    ${pins[@]+"${pins[@]}"} "openhands-agent-server==$version" "openhands-sdk==$version" "openhands-tools==$version"
}

# Everything runs from main, so bash has parsed the whole file before the long pip install
# (editing or updating the script mid-run cannot break a running install).
main "$@"
