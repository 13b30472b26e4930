"""Fork 2,000 times while another thread runs multi-threaded kernels; every child runs one
small op and exits, and none may hang, fail or die (probe_fork_driver.py, in a process of
its own: the children are waited for with a deadline, and a hung one is killed and
counted). A fork copies every mutex in the state the other thread holds it in; rnngraph
must hand its children usable locks."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

FORKS = 2000
DRIVER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "probe_fork_driver.py")


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_fork_while_kernels_run():
    try:
        run = subprocess.run([sys.executable, DRIVER, str(FORKS)], capture_output=True, check=False,
                             text=True, timeout=600)
    except subprocess.TimeoutExpired as timeout:
        raise AssertionError(f"the forking process itself hung:\n{timeout.stderr}") from None
    assert run.returncode == 0, f"driver failed ({run.returncode}):\n{run.stderr[-3000:]}"
    report = json.loads(run.stdout.strip().splitlines()[-1])
    assert report["kernel_error"] is None, report
    assert not report["kernel_thread_hung"], report
    assert report["kernel_runs"] > 0, report  # the kernels did run during the forks
    assert report["hung"] == 0 and report["failed"] == 0 and report["forks"] == FORKS, (
        f"{report['hung']} hung and {report['failed']} failed of {report['forks']} children "
        f"(ok: {report['ok']}): {report['examples']}\nchildren's stderr:\n{run.stderr[-3000:]}"
        + "\n".join(report["stacks"]))
