#!/bin/bash
# A/B between the installed rnngraph ('new') and an older source tree ('old') built into its
# own directory, each process alone, alternating, ROUNDS rounds (default 4):
#   bash benchmarks/ab_two_builds.sh OLD_TREE THREADS ROWS [ROUNDS]
# OLD_TREE: e.g. `mkdir -p .abold && git archive REV | tar -x -C .abold` (carry it to the
# 16-core machine). Prints ab_sweep.py's JSON lines; summarize them with ab_summary.py.
set -euo pipefail
old_tree=$1 threads=$2 rows=$3 rounds=${4:-4}
here=$(cd "$(dirname "$0")" && pwd)
old_site=/tmp/rnngraph-ab-old
if [ ! -d "$old_site/rnngraph" ]; then
  (cd "$old_tree" && python3 -m pip install -q --no-index --no-deps --no-build-isolation \
    --target "$old_site" .) > /tmp/rnngraph-ab-old.log 2>&1 || { tail -30 /tmp/rnngraph-ab-old.log; exit 1; }
fi
sleep 20  # the build's compiler processes gone
for _ in $(seq "$rounds"); do
  PYTHONPATH=$old_site python3 "$here/ab_sweep.py" old "$threads" "$rows"
  python3 "$here/ab_sweep.py" new "$threads" "$rows"
done
