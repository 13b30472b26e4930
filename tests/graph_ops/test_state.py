"""variable, read and assign: their errors, named by op and label, at build time where the shape
or type is known and at run time otherwise; run(targetOperations=)'s; and the gradient that
reaches a variable, directly and through read, against central differences. (The
read-before-assign semantic is in test_optimizers.py.)"""

from __future__ import annotations

import numpy as np
import pytest

import rnngraph as rg
from graph_ops.helpers import FD_BOUND, refused_at_run
from toolkit.finite_differences import numerical_gradients, record
from toolkit.tolerances import relative_error


def variable(g: rg.Graph, shape=(2, 3), dataType=rg.float32) -> rg.Tensor:
    return g.variable(np.zeros(shape), shape=list(shape), dataType=dataType, name="v")


ONES = np.ones((2, 3), np.float32)

BUILD_ERRORS = [
    (lambda g: g.variable(np.zeros(5), shape=[2, 3], dataType=rg.float32), ValueError,
     r"variable: shape: \[2, 3\] holds 6 elements, with_ \[5\] has 5"),
    (lambda g: g.variable("a", shape=[2], dataType=rg.float32), TypeError,
     "variable: with_: expected real numbers"),
    (lambda g: g.variable(1.0, shape=[2], dataType="float16"), TypeError,
     "variable: dataType: expected rnngraph.float32"),
    (lambda g: g.variable(1.0, shape=None, dataType=rg.float32), TypeError,
     "variable: shape: expected a sequence of sizes, got None"),
    (lambda g: g.variable(1.0, shape=[-1], dataType=rg.float32), ValueError,
     r"variable: shape: sizes must be non-negative ints, got \[-1\]"),
    (lambda g: g.variable(1.0, shape=[None], dataType=rg.float32), ValueError,
     "variable: shape: sizes must be non-negative ints"),
    (lambda g: g.variable(1.0, shape=[2**40, 2**30], dataType=rg.float32), MemoryError,
     "variable: shape: .* more than an array can address"),
    (lambda g: g.variable(1.0, shape=[2], dataType=rg.float32, name=3), TypeError,
     "variable: name: expected a str or None"),
    (lambda g: g.read(g.placeholder((2,), rg.float32)), TypeError,
     "read: variable: 'placeholder_0' is not a variable"),
    (lambda g: g.read(np.ones(2)), TypeError, "read: variable: expected an rnngraph Tensor"),
    (lambda g: g.read(variable(g), name=[]), TypeError, "read: name: "),
    (lambda g: g.assign(g.placeholder((2,), rg.float32), tensor=ONES), TypeError,
     "assign: variable: 'placeholder_0' is not a variable"),
    (lambda g: g.assign(variable(g), tensor=g.placeholder((3, 2), rg.float32)), ValueError,
     r"assign: tensor: expected the variable's shape \[2, 3\], got \[3, 2\]"),
    (lambda g: g.assign(variable(g), tensor=np.ones((3, 3), np.float32)), ValueError,
     r"assign: tensor: expected the variable's shape \[2, 3\], got \[3, 3\]"),
    (lambda g: g.assign(variable(g), tensor=g.placeholder((2, 3), rg.float64)), TypeError,
     "assign: tensor: expected dataType float32 like the variable, got float64"),
    (lambda g: g.assign(variable(g), tensor="a"), TypeError,
     "assign: tensor: expected an rnngraph Tensor, a number or an array"),
    (lambda g: g.assign(variable(g), tensor=ONES, name=1), TypeError, "assign: name: "),
    (lambda g: g.run(targetOperations=g.assign(variable(g), tensor=ONES)), TypeError,
     "run: targetOperations: expected a list of Operations"),
    (lambda g: g.run(targetOperations=[variable(g)]), TypeError,
     "run: targetOperations: expected Operations .from assign., got Tensor"),
    (lambda g: g.run(targetOperations=[variable(g).op]), ValueError,
     "run: targetOperations: 'v' is a variable op; only assign operations"),
]


@pytest.mark.parametrize(("build", "error", "message"), BUILD_ERRORS,
                         ids=[case[2].split(":")[0] + f"-{n}" for n, case in
                              enumerate(BUILD_ERRORS)])
def test_errors_name_the_op_and_the_label(build, error, message):
    g = rg.Graph()
    ops_before = len(g._ops)
    with pytest.raises(error, match=f"^{message}"):
        build(g)
    built = {op.kind for op in g._ops[ops_before:]}  # the refused op itself is not among them
    assert built <= {"placeholder", "variable", "constant", "assign"} - {message.split(":")[0]}


def test_a_variable_or_assign_of_another_graph_is_refused():
    g, other = rg.Graph(), rg.Graph()
    elsewhere = variable(other)
    with pytest.raises(ValueError, match="^read: variable: .*another Graph"):
        g.read(elsewhere)
    with pytest.raises(ValueError, match="^assign: variable: .*another Graph"):
        g.assign(elsewhere, tensor=ONES)
    with pytest.raises(ValueError, match="^run: targetOperations: .* belongs to another Graph"):
        g.run(targetOperations=[other.assign(elsewhere, tensor=ONES)])


def test_an_assign_whose_shape_is_known_only_at_run_time_is_checked_then():
    g = rg.Graph()
    v = variable(g)
    p = g.placeholder((None, 3), rg.float32)
    update = g.assign(v, tensor=p)
    refused_at_run(g, r"^assign: tensor \('v'\): expected shape \[2, 3\], got \[4, 3\]",
                   {p: np.ones((4, 3), np.float32)}, targetOperations=[update])
    np.testing.assert_array_equal(g.run(targetTensors=[v])[v], np.zeros((2, 3)))  # unchanged
    g.run(feeds={p: np.ones((2, 3), np.float32)}, targetOperations=[update])
    np.testing.assert_array_equal(g.run(targetTensors=[v])[v], np.ones((2, 3)))


def test_a_returned_variable_is_a_snapshot_no_one_can_write_through():
    """run returns a variable's value (directly, through read, or an assign's kept array) read
    only: setting it writeable again is refused, and a later assign leaves it as it was."""
    g = rg.Graph()
    v = variable(g)
    update = g.assign(v, g.addition(g.read(v), g.constant(ONES)))
    first = g.run(targetTensors=[v, g.read(v)])
    for array in first.values():
        with pytest.raises(ValueError, match="WRITEABLE"):
            array.setflags(write=True)
    g.run(targetOperations=[update])
    g.run(targetOperations=[update])
    later = g.run(targetTensors=[v])[v]
    with pytest.raises(ValueError, match="WRITEABLE"):
        later.setflags(write=True)
    assert all(np.array_equal(a, np.zeros((2, 3))) for a in first.values())
    np.testing.assert_array_equal(later, 2 * ONES)


@pytest.mark.parametrize("through_read", [False, True], ids=["direct", "read"])
def test_the_gradient_reaching_a_variable_matches_central_differences(through_read, rng):
    """loss = Σ W ⊙ tanh(v·M + v): the variable used twice, read or directly; the numeric
    gradient perturbs the variable's value by assigning it."""
    g = rg.Graph()
    start = rng.standard_normal((2, 3))
    v = g.variable(start, shape=[2, 3], dataType=rg.float64, name="v")
    value = g.read(v) if through_read else v
    product = g.matrixMultiplication(value, g.constant(rng.standard_normal((3, 3)), dataType=rg.float64))
    out = g.tanh(g.addition(product, value))
    weights = g.constant(rng.standard_normal((2, 3)), dataType=rg.float64)
    loss = g.reductionSum(g.multiplication(out, weights), axes=[0, 1])
    gradient = g.gradients(of=loss, with_=[v])[v]
    analytic = g.run(targetTensors=[gradient])[gradient]
    new_value = g.placeholder((2, 3), rg.float64)
    set_value = g.assign(v, tensor=new_value)

    def loss_at(arrays) -> float:
        g.run(feeds={new_value: arrays["v"]}, targetOperations=[set_value])
        return float(g.run(targetTensors=[loss])[loss].item())

    numeric = numerical_gradients(loss_at, {"v": start.copy()})["v"]
    rules = ("variable", "read") if through_read else ("variable",)
    error = record(relative_error(analytic, numeric), f"variable via {rules[-1]}: dv", rules)
    assert error < FD_BOUND
