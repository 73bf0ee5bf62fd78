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
#   AGENT_SERVER_PYTHON   use this interpreter instead of probing (must be >= 3.12)
#   AGENT_CP_CACHE_DIR    cache root (default ${XDG_CACHE_HOME:-$HOME/.cache}/agent-control-plane)
#   PYENV_ROOT            where pyenv versions are looked for (default $HOME/.pyenv)
#
# Exit codes: 0 ok, 3 no usable Python >= 3.12, 4 install failed, other = unexpected error.
#
# The venv is built in a temporary sibling directory and renamed into place only when the
# install succeeded, so a venv directory that exists is complete. A flock on a sibling .lock
# file keeps concurrent runs from installing twice; the loser waits, then takes the fast path.
#
# 1.58.0 is the newest release that resolves against PyPI as reachable here: 1.58.1 and 1.58.2
# require certifi>=2026.10.19, which is not published there.
set -euo pipefail

DEFAULT_VERSION=1.58.0

log() { printf 'setup-agent-server: %s\n' "$*" >&2; }
die() {
  local code=$1
  shift
  log "ERROR: $*"
  exit "$code"
}

# Sets $python (absolute path of an interpreter >= 3.12) and $py_mm ("3.12"), or exits 3.
# pyenv shims (python3.12, python3.13) may be on PATH yet fail when that version is not
# selected, so every candidate is executed, not just looked up.
find_python() {
  local candidates=() pyenv_pythons=() rejected=() cand p ver exe name
  if [[ -n ${AGENT_SERVER_PYTHON:-} ]]; then
    candidates+=("$AGENT_SERVER_PYTHON")
  else
    for name in python3.13 python3.12; do
      if p=$(command -v "$name"); then candidates+=("$p"); fi
    done
    shopt -s nullglob
    pyenv_pythons=("$pyenv_root"/versions/3.1[2-9]*/bin/python)
    shopt -u nullglob
    if ((${#pyenv_pythons[@]})); then
      mapfile -t pyenv_pythons < <(printf '%s\n' "${pyenv_pythons[@]}" | sort -rV)
      candidates+=("${pyenv_pythons[@]}")
    fi
    if p=$(command -v python3); then candidates+=("$p"); fi
  fi

  python='' py_mm=''
  for cand in ${candidates[@]+"${candidates[@]}"}; do
    if ! ver=$("$cand" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3]); assert sys.version_info >= (3,12)' 2>/dev/null); then
      if [[ -n $ver ]]; then
        rejected+=("$cand: Python $ver is older than 3.12")
      else
        rejected+=("$cand: does not run (a pyenv shim whose version is not selected?)")
      fi
      continue
    fi
    if ! exe=$("$cand" -c 'import sys, venv, ensurepip; print(sys.executable)' 2>/dev/null); then
      rejected+=("$cand: Python $ver lacks the venv/ensurepip modules (Debian: apt-get install python${ver%.*}-venv)")
      continue
    fi
    python=${exe:-$cand} py_mm=${ver%.*}
    return 0
  done

  {
    echo "setup-agent-server: ERROR: no usable Python >= 3.12 found; the OpenHands agent server"
    echo "  (openhands-agent-server $version) requires Python >= 3.12."
    if [[ -n ${AGENT_SERVER_PYTHON:-} ]]; then
      echo "  Checked AGENT_SERVER_PYTHON=$AGENT_SERVER_PYTHON only."
    else
      echo "  Looked for: python3.13 and python3.12 on PATH, $pyenv_root/versions/3.1[2-9]*/bin/python, python3."
    fi
    if ((${#rejected[@]})); then
      echo "  Rejected:"
      printf '    %s\n' "${rejected[@]}"
    else
      echo "  None of them exists."
    fi
    echo "  Install CPython >= 3.12 (e.g. 'pyenv install 3.12') or set AGENT_SERVER_PYTHON."
  } >&2
  exit 3
}

venv_ok() { [[ -x $venv/bin/python ]] && "$venv/bin/python" -c 'import openhands.agent_server' >/dev/null 2>&1; }

done_ok() {
  log "ready: $venv"
  printf '%s\n' "$venv/bin/python"
  exit 0
}

# Builds the venv in a temporary sibling of $venv and renames it into place. Caller holds the lock.
install_venv() {
  local start=$SECONDS broken
  # Nobody else is building: clear leftovers of killed runs, and move a broken venv away.
  rm -rf "$cache_root/.$name.tmp."* "$cache_root/.$name.broken."*
  if [[ -e $venv ]]; then
    log "existing $venv does not import openhands.agent_server; rebuilding"
    broken=$(mktemp -d "$cache_root/.$name.broken.XXXXXX")
    "$python" -c 'import os, sys; os.rename(sys.argv[1], sys.argv[2])' "$venv" "$broken/venv"
    rm -rf "$broken"
  fi

  tmp=$(mktemp -d "$cache_root/.$name.tmp.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  chmod "$(umask -S)" "$tmp" # mktemp -d makes it 0700; a venv is normally 0755

  log "creating venv in $tmp"
  "$python" -m venv "$tmp" >&2 || die 4 "python -m venv failed"
  log "pip install openhands-agent-server==$version openhands-sdk==$version openhands-tools==$version (about a minute)"
  "$tmp/bin/python" -m pip install --disable-pip-version-check --no-input \
    "openhands-agent-server==$version" "openhands-sdk==$version" "openhands-tools==$version" >&2 \
    || die 4 "pip install failed (PyPI reachable? $version published and resolvable for Python $py_mm?)"
  "$tmp/bin/python" -m pip freeze --disable-pip-version-check >"$tmp/agent-server-freeze.txt"

  # Console scripts, activate scripts and pyvenv.cfg embed the build path: point them at the
  # final path, then rename the complete venv into place (os.rename fails if the target exists).
  "$python" - "$tmp" "$venv" <<'PY'
import os, sys
tmp, final = sys.argv[1], sys.argv[2]
old, new = tmp.encode(), final.encode()
bindir = os.path.join(tmp, "bin")
paths = [os.path.join(tmp, "pyvenv.cfg")] + [os.path.join(bindir, n) for n in os.listdir(bindir)]
for p in paths:
    if os.path.islink(p) or not os.path.isfile(p):
        continue
    with open(p, "rb") as f:
        data = f.read()
    if old in data:
        with open(p, "wb") as f:
            f.write(data.replace(old, new))
os.rename(tmp, final)
PY
  trap - EXIT

  venv_ok || die 4 "installed venv at $venv cannot import openhands.agent_server"
  log "installed in $((SECONDS - start)) s"
}

main() {
  version=${AGENT_SERVER_VERSION:-$DEFAULT_VERSION}
  cache_root=${AGENT_CP_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/agent-control-plane}
  pyenv_root=${PYENV_ROOT:-$HOME/.pyenv}

  find_python
  log "using $python (Python $py_mm)"

  name=agent-server-$version-py$py_mm
  venv=$cache_root/$name
  venv_ok && done_ok

  mkdir -p "$cache_root"
  if command -v flock >/dev/null 2>&1; then
    exec 9>"$cache_root/$name.lock"
    if ! flock -n 9; then
      log "another run is installing $name; waiting for it"
      flock 9
    fi
    venv_ok && done_ok # the other run finished it
  else
    log "flock not found; continuing without a lock (the final rename is still atomic)"
  fi

  install_venv
  done_ok
}

# Everything runs from main, so bash has parsed the whole file before the long pip install
# (editing or updating the script mid-run cannot break a running install).
main "$@"
