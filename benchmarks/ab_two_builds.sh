#!/bin/bash
# A/B between the installed rnngraph ('new') and an older source tree ('old') built into its
# own directory, each process alone, alternating (the first build of each round alternates
# too), ROUNDS rounds (default 4):
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
run_old() { PYTHONPATH=$old_site python3 "$here/ab_sweep.py" old "$threads" "$rows"; }
run_new() { python3 "$here/ab_sweep.py" new "$threads" "$rows"; }
# Rounds alternate which build goes first (old-new, new-old, ...): a process that runs right
# after another (or after the build) may find the machine in another state, and a fixed order
# would charge that to one build.
for round in $(seq "$rounds"); do
  if (( round % 2 )); then run_old; run_new; else run_new; run_old; fi
done
