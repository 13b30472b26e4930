#!/usr/bin/env bash
# The docs site with warnings as errors: mkdocs.yml's strict mode fails on a broken internal
# link or anchor, a page missing from the nav and any docstring the API reference cannot read.
# Installs only the docs extra's packages (the API reference reads the sources, not the build).
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t deps < <(python3 .ci/deps.py extra:docs)
python3 -m pip install --quiet "${deps[@]}"
NO_MKDOCS_2_WARNING=1 python3 -m mkdocs build --strict
