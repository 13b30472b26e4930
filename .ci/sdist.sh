#!/usr/bin/env bash
# Sdist job: build rnngraph's source distribution, install it with the test extra in a fresh
# venv (pip compiles rnngraph from the sdist, as for a user without a wheel), unpack it and run
# the whole test suite there against the installed package. Fails on any error, on a test
# that fails and on a test that skips.
#
#   .ci/sdist.sh                       build, install, test
#   SDIST_DIR=... .ci/sdist.sh         another work directory (default build/sdist)
#
# The sdist is left in $SDIST_DIR/dist.
set -euo pipefail
source "$(dirname "$0")/jobs.sh"
job_start sdist "${SDIST_DIR:-build/sdist}"

# 1. A venv with the build frontend at a pinned version and the build system (pyproject.toml's
#    build requirements); the sdist is made in it without isolation.
tools_venv build==1.6.1

# 2. The sdist (pyproject.toml's sdist.include: sources, docs, tests and what they read).
rm -rf "$work/dist"
"$py" -m build --sdist --no-isolation --outdir "$work/dist" .
shopt -s nullglob
built=("$work"/dist/rnngraph-*.tar.gz)
if [ "${#built[@]}" -ne 1 ]; then
  echo "sdist: expected one sdist in $work/dist, found ${#built[@]}" >&2
  exit 1
fi
sdist="${built[0]}"
phase "built ${sdist##*/}"

# 3. A fresh venv (no system site packages) with the sdist and its test extra, as a user
#    installs it: pip builds the wheel in an isolated environment of its own. --no-cache-dir:
#    a wheel cached from an earlier sdist of the same name and version must not stand in for
#    this one.
venv="$work/venv"
rm -rf "$venv"
python3 -m venv "$venv"
vpy="$venv/bin/python"
"$vpy" -m pip install --quiet --upgrade pip
"$vpy" -m pip install --quiet --no-cache-dir "$sdist[test]"
phase "installed from the sdist in a fresh venv"

# 4. The sdist unpacked in a directory of its own (no git checkout, no build outputs), and
#    the suite run from there with the venv's interpreter. rnngraph must come from the venv:
#    the unpacked tree has python/rnngraph's sources but no compiled module, and nothing puts
#    python/ on the path (pytest's pythonpath is tests/ only).
outside="$(mktemp -d)"
trap 'rm -rf "$outside"' EXIT
tar -xzf "$sdist" -C "$outside"
unpacked=("$outside"/rnngraph-*/)
if [ "${#unpacked[@]}" -ne 1 ] || [ ! -f "${unpacked[0]}/PKG-INFO" ]; then
  echo "sdist: ${sdist##*/} did not unpack to one rnngraph-<version>/ with PKG-INFO" >&2
  exit 1
fi
cd "${unpacked[0]}"
imported_from_venv "$venv" "$source_tree/python" "$(pwd)"
phase "unpacked in $(pwd)"
# The summary line is kept to check that no test skipped (-ra, from pyproject.toml, lists any).
log="$work/pytest.log"
set +e
"$vpy" -m pytest 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
if [ "$status" -ne 0 ]; then
  echo "sdist: the test suite failed from the unpacked sdist (exit $status)" >&2
  exit "$status"
fi
summary="$(grep -E '^=+ .*(passed|failed|error).* in [0-9.]+s' "$log" | tail -n 1)"
if [ -z "$summary" ] || grep -q "skipped" <<<"$summary"; then
  echo "sdist: tests skipped from the unpacked sdist: ${summary:-no summary line}" >&2
  exit 1
fi
phase "the suite passed from the unpacked sdist, no test skipped; done"
