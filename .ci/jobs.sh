# Shared by .ci/wheel.sh and .ci/sdist.sh (sourced, not run): a job's work directory, its
# timed phases, the tools venv with pyproject.toml's build requirements, and the check that
# rnngraph was imported from a fresh venv and not from a source tree.

# job_start NAME DIR: cd to the source tree; set source_tree, work (DIR, created, absolute)
# and phase ("NAME: message (seconds since the start)").
job_start() {
  job_name="$1"
  cd "$(dirname "${BASH_SOURCE[0]}")/.."
  source_tree="$(pwd)"
  started=$SECONDS
  mkdir -p "$2"
  work="$(cd "$2" && pwd)"
  # The machine is shared: at most two compile jobs unless the caller says otherwise.
  export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-2}"
}
phase() { echo "$job_name: $1 ($((SECONDS - started)) s)"; }

# tools_venv PACKAGE...: $work/tools (kept between runs) with pip, the build requirements and
# PACKAGE...; sets py to its interpreter.
tools_venv() {
  local tools="$work/tools"
  if [ ! -x "$tools/bin/python" ]; then
    python3 -m venv "$tools"
  fi
  py="$tools/bin/python"
  "$py" -m pip install --quiet --upgrade pip
  local requires
  mapfile -t requires < <("$py" .ci/deps.py build)
  "$py" -m pip install --quiet "${requires[@]}" "$@"
  phase "tools ready"
}

# imported_from_venv VENV [TREE...]: run in the directory the job tests from; fails unless
# VENV's interpreter imports rnngraph from VENV, and from none of the TREEs.
imported_from_venv() {
  local venv="$1"
  shift
  "$venv/bin/python" - "$job_name" "$venv" "$@" <<'PY'
import sys
from pathlib import Path

import rnngraph

job, venv, *trees = sys.argv[1:]
venv = Path(venv).resolve()
where = Path(rnngraph.__file__).resolve()
print(f"{job}: rnngraph {rnngraph.__version__} imported from {where.parent}")
if venv not in where.parents or {Path(t).resolve() for t in trees} & set(where.parents):
    sys.exit(f"{job}: rnngraph was imported from {where}, not from the venv {venv}")
PY
}
