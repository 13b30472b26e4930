"""An A/B (or A/B/C...) of prebuilt rnngraph builds, idle and beside K busy processes.

    python3 benchmarks/builds_under_load.py --builds /tmp/site_a,/tmp/site_b --threads 2 \
        --rows 2,4,5 --rounds 4 --loads 0,1,2

Each build is a directory made with ``pip install --target DIR .`` from a tree that differs
in one constant (e.g. tuning::kPhasePatienceUs). For each load K the busy processes run for the
whole phase (load.busy), and every round runs each build in its own process (ab_sweep.py),
alternating the order from round to round. Prints, per K, ab_summary.py's table: per
row@threads each build's median of the rounds' medians (ms), then every round's median.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from ab_summary import summarize_records
from load import busy

HERE = Path(__file__).resolve().parent


def one_process(build: str, threads: str, rows: str) -> dict:
    """ab_sweep.py's record for one process of ``build``, labelled by its directory's name.
    RuntimeError if that process imported an rnngraph from elsewhere (a build that failed
    leaves no package there, and Python then finds the installed one)."""
    env = dict(os.environ, PYTHONPATH=build)
    label = Path(build).name
    result = subprocess.run([sys.executable, str(HERE / "ab_sweep.py"), label, threads, rows],
                            env=env, capture_output=True, text=True, check=True)
    record = json.loads(result.stdout.strip().splitlines()[-1])
    if not Path(record["file"]).resolve().is_relative_to(Path(build).resolve()):
        raise RuntimeError(f"{build}: the process imported {record['file']}, not this build")
    return record


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--builds", required=True, help="comma-separated --target directories")
    parser.add_argument("--threads", default="2")
    parser.add_argument("--rows", default="2,4,5")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--loads", default="0,1,2", help="busy processes per phase")
    args = parser.parse_args()
    builds = args.builds.split(",")
    for k in (int(x) for x in args.loads.split(",")):
        with busy(k):
            records = [one_process(build, args.threads, args.rows)
                       for r in range(args.rounds)
                       for build in (builds if r % 2 == 0 else builds[::-1])]
        print(f"## {k} busy processes\n{summarize_records(records)}", flush=True)
        time.sleep(1)  # the busy processes gone


if __name__ == "__main__":
    main()
