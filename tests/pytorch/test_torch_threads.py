"""The adapter's thread policy (rnngraph/torch/_threads.py): unless the user chose rnngraph's
count (rnngraph.set_num_threads or RNNGRAPH_NUM_THREADS), each adapter call sets it to
torch.get_num_threads(). The counts are process-wide, so each case runs in a fresh process."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

PRELUDE = """
import json, torch, rnngraph, rnngraph.torch as rt
from rnngraph import LSTMDescriptor
torch.manual_seed(0)
module = rt.LSTM(8, 32, dtype=torch.float64, descriptor=LSTMDescriptor(bidirectional=True))
x = torch.randn(6, 16, 8, dtype=torch.float64, requires_grad=True)
weights = torch.randn(6, 16, 64, dtype=torch.float64)

def call(threads):
    '''Forward with torch at ``threads``: rnngraph's count after the call.'''
    torch.set_num_threads(threads)
    module(x)
    return rnngraph.get_num_threads()
"""


def run(body, environment=None):
    """``PRELUDE`` + ``body`` in a fresh interpreter, without RNNGRAPH_NUM_THREADS unless
    ``environment`` sets it; the JSON that ``body`` prints."""
    env = {k: v for k, v in os.environ.items() if k != "RNNGRAPH_NUM_THREADS"}
    env.update(environment or {})
    result = subprocess.run([sys.executable, "-W", "error", "-c", PRELUDE + body], env=env,
                            capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_by_default_rnngraph_follows_torch_in_forward_and_backward():
    counts = run("""
forward = [call(1), call(2), call(1)]
torch.set_num_threads(2)
output, _ = module(x)
torch.set_num_threads(1)
(output * weights).sum().backward()  # the gradient op follows torch too
print(json.dumps([*forward, rnngraph.get_num_threads()]))
""")
    assert counts == [1, 2, 1, 1]


@pytest.mark.parametrize(("body", "environment"), [
    ("rnngraph.set_num_threads(1)", None),
    ("", {"RNNGRAPH_NUM_THREADS": "1"}),
], ids=["set_num_threads", "environment"])
def test_a_chosen_count_is_kept(body, environment):
    counts = run(body + """
print(json.dumps([rnngraph.get_num_threads(), call(2), call(2), torch.get_num_threads()]))
""", environment)
    assert counts == [1, 1, 1, 2]


def test_a_limit_on_rnngraph_alone_holds_inside_its_block():
    """threadpoolctl's limit on rnngraph's pool (not torch's): the adapter keeps it inside
    the block, and follows torch's count again once the limit has restored rnngraph's."""
    counts = run("""
from threadpoolctl import threadpool_limits
seen = [call(2)]
for limits in ({"rnngraph": 1}, 1):  # rnngraph alone, as a dict and by user_api
    kwargs = {"limits": limits} if isinstance(limits, dict) else {"limits": 1, "user_api": "rnngraph"}
    with threadpool_limits(**kwargs):
        seen += [call(2), call(2)]
    seen += [rnngraph.get_num_threads(), call(1), call(2)]
print(json.dumps(seen))
""")
    assert counts == [2, 1, 1, 2, 1, 2, 1, 1, 2, 1, 2]


def test_a_limit_entered_before_the_first_call_holds():
    counts = run("""
from threadpoolctl import threadpool_limits
with threadpool_limits(limits=1, user_api="rnngraph"):
    seen = [call(2)]
print(json.dumps([*seen, call(2)]))
""")
    assert counts == [1, 2]


def test_one_and_two_threads_give_bit_identical_results():
    same = run("""
def results(threads):
    torch.set_num_threads(threads)
    x.grad = None
    module.zero_grad(set_to_none=True)
    h0 = torch.randn(2, 16, 32, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    output, (h_n, c_n) = module(x, (h0, torch.zeros_like(h0)))
    (output * weights).sum().backward()
    used = rnngraph.get_num_threads()
    return used, [output, h_n, c_n, x.grad, *(p.grad for p in module.parameters())]

one, two = results(1), results(2)
print(json.dumps([one[0], two[0], [torch.equal(a, b) for a, b in zip(one[1], two[1])]]))
""")
    assert same[:2] == [1, 2]
    assert same[2] == [True] * 7
