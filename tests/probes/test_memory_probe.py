"""RSS stays flat over repeated Graph builds and runs (constant weights, fed weights with
gradient ops, Graph.gradients, several graphs alive at once, the compiled module's packed
weights, a step over a batch of 65536 rows; one scenario with the garbage collector off),
and comes back within 20 MiB plus 1 MiB per worker thread (the driver's BACK_WITHIN_MIB) of
its starting point once the user's objects are gone (gc.collect() at most). The measurements
run in a process of their own (probe_memory_driver.py); no timing is asserted."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

LIMIT_MIB = 20
DRIVER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "probe_memory_driver.py")


# The default team, and a team of 8: on the 16-core machine (glibc 2.39) blocks freed in the
# worker threads' malloc arenas stayed resident at 8 threads (104-111 MiB after the large
# batch in two of three runs) but not at 16, before rnngraph mapped its large blocks itself.
@pytest.mark.parametrize("threads", [None, 8], ids=["default-threads", "8-threads"])
def test_rss_flat_over_builds_and_back_after_deletion(threads):
    env = dict(os.environ)
    if threads:
        env["RNNGRAPH_NUM_THREADS"] = str(threads)
    run = subprocess.run([sys.executable, DRIVER], capture_output=True, check=False, text=True,
                         timeout=600, env=env)
    assert run.returncode == 0, f"driver failed ({run.returncode}):\n{run.stderr[-3000:]}"
    report = json.loads(run.stdout.strip().splitlines()[-1])
    problems = []
    for name, r in report["scenarios"].items():
        if r["growth_mib"] > LIMIT_MIB:
            problems.append(f"{name}: RSS grew {r['growth_mib']} MiB over repeated builds "
                            f"(after each build: {r['series_mib']})")
        if r["excess_mib"] > report["back_within_mib"]:
            problems.append(f"{name}: {r['excess_mib']} MiB above the start "
                            f"({report['start_mib']} MiB) after everything was deleted")
    assert not problems, "\n".join(problems) + "\n" + json.dumps(report, indent=1)
