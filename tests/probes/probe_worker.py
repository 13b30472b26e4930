"""A child process that runs fuzz cases (probe_fuzz_cases.run_case) for probe_pool.

Protocol: one JSON object ``{"i": index, "spec": spec}`` per line on stdin; for each, one
line ``@@{"i": index, "result": result}`` on stdout, written and flushed when the case ends,
so the parent knows which case a crash or a hang belongs to.

The child bounds its own memory so that a case whose outputs cannot exist fails to
allocate instead of swapping the machine: its address space is limited to what it uses at
start plus ``HEADROOM`` (under AddressSanitizer, which reserves terabytes of shadow memory,
ASAN_OPTIONS's max_allocation_size_mb does that job instead; probe_pool sets it).

Reproduce a case by hand::

    python3 tests/probes/probe_worker.py --case '<the spec JSON from a failure report>'
"""

from __future__ import annotations

import json
import os
import resource
import sys
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

HEADROOM = 4 << 30  # bytes of address space beyond the child's size at start
MARK = "@@"


def under_asan() -> bool:
    return "libasan" in os.environ.get("LD_PRELOAD", "")


def limit_memory() -> None:
    if under_asan():
        return
    from probe_process import status_bytes

    limit = status_bytes("VmSize") + HEADROOM
    resource.setrlimit(resource.RLIMIT_AS, (limit, resource.getrlimit(resource.RLIMIT_AS)[1]))


def main() -> None:
    # NumPy's cast warnings (NaN to int, ...) belong to the harness, not to the outcome.
    warnings.simplefilter("ignore")
    from probe_fuzz_cases import run_case

    import rnngraph  # noqa: F401 - imported (and its threads started) before the limit

    if len(sys.argv) == 3 and sys.argv[1] == "--case":
        limit_memory()
        print(json.dumps(run_case(json.loads(sys.argv[2])), indent=1))
        return
    limit_memory()
    out = sys.stdout
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        result = run_case(request["spec"])
        out.write(MARK + json.dumps({"i": request["i"], "result": result}, default=repr) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
