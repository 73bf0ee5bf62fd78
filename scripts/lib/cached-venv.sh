# Shared by the scripts that install a Python tool into a cached virtualenv
# (setup-agent-server.sh, setup-schemathesis.sh, setup-reference-server.sh). Source it, set
# $tool (the log prefix), then call the functions below. Progress goes to stderr.
#
# Layout: $cache_root/<name>-py<major.minor>/ is one complete venv; it holds a .ready file
# only once its install succeeded and was verified, so the warm path is a file test (no Python
# start-up). Builds happen in a temporary sibling renamed into place, under a flock, so a
# killed or concurrent run never leaves a half-built venv at the final path.
#
# Exit codes used: 3 no suitable Python, 4 install failed.

log() { printf '%s: %s\n' "$tool" "$*" >&2; }
die() {
  local code=$1
  shift
  log "ERROR: $*"
  exit "$code"
}

cache_root=${AGENT_CP_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/agent-control-plane}
pyenv_root=${PYENV_ROOT:-$HOME/.pyenv}

# Prints the newest ready venv named <prefix>-py3.N (any minor in [min, max]) and returns 0,
# or returns 1. For the warm path: no interpreter is probed.
ready_venv() {
  local prefix=$1 min=$2 max=$3 minor
  for ((minor = max; minor >= min; minor--)); do
    if [[ -f $cache_root/$prefix-py3.$minor/.ready && -x $cache_root/$prefix-py3.$minor/bin/python ]]; then
      printf '%s\n' "$cache_root/$prefix-py3.$minor"
      return 0
    fi
  done
  return 1
}

# find_python MIN MAX OVERRIDE_VAR WHAT: sets $python (absolute path) and $py_mm ("3.12") to an
# interpreter 3.MIN <= version <= 3.MAX that has venv and ensurepip, or exits 3 explaining
# what was tried. pyenv shims (python3.12...) may be on PATH yet fail when that version is not
# selected, so every candidate is executed, not just looked up.
find_python() {
  local min=$1 max=$2 override_var=$3 what=$4
  local override=${!override_var:-} candidates=() pyenv_pythons=() rejected=() cand p ver exe minor
  if [[ -n $override ]]; then
    candidates+=("$override")
  else
    for ((minor = max; minor >= min; minor--)); do
      if p=$(command -v "python3.$minor"); then candidates+=("$p"); fi
    done
    shopt -s nullglob
    pyenv_pythons=("$pyenv_root"/versions/3.*/bin/python)
    shopt -u nullglob
    if ((${#pyenv_pythons[@]})); then
      mapfile -t pyenv_pythons < <(printf '%s\n' "${pyenv_pythons[@]}" | sort -rV)
      candidates+=("${pyenv_pythons[@]}")
    fi
    if p=$(command -v python3); then candidates+=("$p"); fi
  fi

  python='' py_mm=''
  for cand in ${candidates[@]+"${candidates[@]}"}; do
    if ! ver=$("$cand" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3]); assert (3, '"$min"') <= sys.version_info[:2] <= (3, '"$max"')' 2>/dev/null); then
      if [[ -n $ver ]]; then
        rejected+=("$cand: Python $ver is outside 3.$min-3.$max")
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
    log "using $python (Python $ver)"
    return 0
  done

  {
    # "no usable Python >= 3.N" is matched by the service (src/sandbox/process/process-runtime.ts).
    echo "$tool: ERROR: no usable Python >= 3.$min (up to 3.$max) found; $what needs it."
    if [[ -n $override ]]; then
      echo "  Checked $override_var=$override only."
    else
      echo "  Looked for: python3.$max ... python3.$min on PATH, $pyenv_root/versions/3.*/bin/python, python3."
    fi
    if ((${#rejected[@]})); then
      echo "  Rejected:"
      printf '    %s\n' "${rejected[@]}"
    else
      echo "  None of them exists."
    fi
    echo "  Install CPython 3.$max (e.g. 'pyenv install 3.$max') or set $override_var."
  } >&2
  exit 3
}

# install_venv NAME VERIFY PIP_ARGS...: makes $cache_root/NAME a complete venv holding
# PIP_ARGS, verified by running the shell function VERIFY with the venv path as $1, and
# prints nothing. Reuses a ready venv (also one a concurrent run finished while this one waited).
install_venv() {
  local name=$1 verify=$2
  shift 2
  local venv=$cache_root/$name start=$SECONDS broken tmp
  [[ -f $venv/.ready ]] && return 0

  mkdir -p "$cache_root"
  exec 9>"$cache_root/$name.lock"
  if ! flock -n 9; then
    log "another run is installing $name; waiting for it"
    flock 9
  fi
  [[ -f $venv/.ready ]] && return 0

  # Holding the lock: leftovers of killed runs are debris.
  rm -rf "$cache_root/.$name.tmp."* "$cache_root/.$name.broken."*
  if [[ -e $venv ]]; then
    # A venv from before .ready existed: keep it if it verifies, else move it away.
    if [[ -x $venv/bin/python ]] && "$verify" "$venv" >/dev/null 2>&1; then
      touch "$venv/.ready"
      return 0
    fi
    log "existing $venv is incomplete; rebuilding"
    broken=$(mktemp -d "$cache_root/.$name.broken.XXXXXX")
    mv -T "$venv" "$broken/venv"
    rm -rf "$broken"
  fi

  tmp=$(mktemp -d "$cache_root/.$name.tmp.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  chmod "$(umask -S)" "$tmp" # mktemp -d makes it 0700; a venv is normally 0755

  log "creating venv in $tmp"
  "$python" -m venv "$tmp" >&2 || die 4 "python -m venv failed"
  log "pip install $*"
  "$tmp/bin/python" -m pip install --disable-pip-version-check --no-input "$@" >&2 ||
    die 4 "pip install failed (PyPI reachable? $* published and resolvable for Python $py_mm?)"
  "$tmp/bin/python" -m pip freeze --disable-pip-version-check >"$tmp/pip-freeze.txt"

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

  "$verify" "$venv" >&2 || die 4 "the venv installed at $venv does not work (see above)"
  touch "$venv/.ready"
  log "installed in $((SECONDS - start)) s ($(du -sh "$venv" | cut -f1))"
}

# provide_venv NAME MIN MAX OVERRIDE_VAR WHAT VERIFY EXECUTABLE PIP_ARGS...: the whole job of a
# setup script. Prints $cache_root/NAME-py3.N/EXECUTABLE: at once when a ready venv exists
# (and OVERRIDE_VAR does not name an interpreter), else after probing Python and installing.
provide_venv() {
  local name=$1 min=$2 max=$3 override_var=$4 what=$5 verify=$6 executable=$7 venv
  shift 7
  if [[ -z ${!override_var:-} ]] && venv=$(ready_venv "$name" "$min" "$max"); then
    printf '%s\n' "$venv/$executable"
    exit 0
  fi
  find_python "$min" "$max" "$override_var" "$what"
  install_venv "$name-py$py_mm" "$verify" "$@"
  log "ready: $cache_root/$name-py$py_mm"
  printf '%s\n' "$cache_root/$name-py$py_mm/$executable"
}
