#!/usr/bin/env bash
# Install LiteLLM's proxy (PyPI litellm[proxy], one pinned version) into a cached virtualenv
# outside the repository, for the LLM gateway bench (bench/llm-gateway.ts) to measure against,
# and print the venv's `litellm` command as the LAST line of stdout. All progress goes to stderr.
#
#   LITELLM=$(scripts/setup-litellm-proxy.sh | tail -n1)
#   LITELLM_LOCAL_MODEL_COST_MAP=True "$LITELLM" --config config.yaml --host 127.0.0.1 --port "$PORT" --num_workers 1
#
# Not part of the tests' preparation: the bench runs it when it needs the peer (about a minute
# and 720 MB the first time).
#
# Environment:
#   LITELLM_PROXY_VERSION  litellm version (default below)
#   LITELLM_PROXY_PYTHON   use this interpreter instead of probing (3.11 or 3.12)
#   AGENT_CP_CACHE_DIR     cache root (default ${XDG_CACHE_HOME:-$HOME/.cache}/agent-control-plane)
#   PYENV_ROOT             where pyenv versions are looked for (default $HOME/.pyenv)
#
# Exit codes: 0 ok, 3 no usable Python 3.11/3.12, 4 install failed, other = unexpected error.
# Cache folder: litellm-proxy-<version>-py<major.minor> (see scripts/lib/cached-venv.sh).
set -euo pipefail

# The version the issue 38 brief verified (config-file mode, no database).
DEFAULT_VERSION=1.105.7
tool=setup-litellm-proxy
# shellcheck source=lib/cached-venv.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/cached-venv.sh"

# The proxy's app with its extras (fastapi, uvicorn, gunicorn ...); the local price map, so no fetch.
imports_proxy() { LITELLM_LOCAL_MODEL_COST_MAP=True "$1/bin/python" -c 'import litellm.proxy.proxy_server, uvicorn'; }

main() {
  local version=${LITELLM_PROXY_VERSION:-$DEFAULT_VERSION}
  provide_venv "litellm-proxy-$version" 11 12 LITELLM_PROXY_PYTHON "LiteLLM's proxy (litellm[proxy] $version)" \
    imports_proxy bin/litellm "litellm[proxy]==$version"
}

# Everything runs from main, so bash has parsed the whole file before the long pip install.
main "$@"
