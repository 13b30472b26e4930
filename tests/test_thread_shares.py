"""benchmarks/thread_shares.py: the per-thread CPU shares it reports come from this
process's own threads, and a thread that computes shows up with a share."""

import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import thread_shares


def test_a_busy_helper_thread_is_seen_with_its_share():
    stop = threading.Event()

    def burn():
        while not stop.is_set():
            sum(range(1000))

    helper = threading.Thread(target=burn)
    helper.start()
    try:
        measured = thread_shares.phase(lambda: time.sleep(0.001), seconds=0.5)
    finally:
        stop.set()
        helper.join()
    main, *others = measured["threads"]
    assert main["main"] and not any(t["main"] for t in others)
    assert measured["calls"] > 50 and measured["median_ms"] >= 1.0
    assert any(t["tid"] == helper.native_id and t["cpu_share"] > 0.1 for t in others), measured


def test_the_counters_list_every_thread_of_the_process():
    counters = thread_shares.thread_counters()
    assert threading.get_native_id() in counters
    cpu, waiting, voluntary, involuntary = counters[threading.get_native_id()]
    assert cpu >= 0 and waiting >= 0 and voluntary >= 0 and involuntary >= 0
