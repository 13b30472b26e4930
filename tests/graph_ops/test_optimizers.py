"""stochasticGradientDescent, applyStochasticGradientDescent and adam: five training steps
inside a Graph (the state in variables, updated by assign as a user would) against plain
NumPy; the read-before-assign semantic through them; every error per op and label."""

from __future__ import annotations

import numpy as np
import pytest

import rnngraph as rg
from graph_ops.helpers import numpy_adam, refused_at_run
from rnngraph.graph import Operation
from toolkit.tolerances import assert_close

DTYPES = [pytest.param(np.float32, id="float32"), pytest.param(np.float64, id="float64")]
TOLERANCE = {np.float32: "float32_forward", np.float64: "float64"}
SHAPE = (3, 4)
LR, BETA1, BETA2, EPSILON = 0.1, 0.9, 0.999, 1e-8
# Shrinking gradients: the velocity falls at some elements, so AMSGrad's maximum matters.
SCALES = (3.0, 1.0, 0.3, 0.1, 0.03)


# --- plain NumPy references (float64; numpy_adam: helpers.py) -------------------------------


def numpy_sgd(values, gradients, lr):
    """The values after each step: values -= lr * g."""
    steps = []
    for g in gradients:
        values = values - lr * g
        steps.append(values)
    return steps


def current_rate(t):
    return LR * np.sqrt(1 - BETA2**t) / (1 - BETA1**t)


def draw_gradients(rng, dtype, shape=SHAPE):
    return [(s * rng.standard_normal(shape)).astype(dtype) for s in SCALES]


def adam_state(rng, dtype, amsgrad):
    state = {
        "values": rng.standard_normal(SHAPE),
        "momentum": 0.1 * rng.standard_normal(SHAPE),
        "velocity": rng.uniform(0.0, 1.0, SHAPE),
    }
    if amsgrad:  # above the velocity at half the elements, equal at the others
        state["maximumVelocity"] = state["velocity"] + np.where(rng.random(SHAPE) < 0.5, 0, 0.5)
    return {k: v.astype(dtype) for k, v in state.items()}


def read_all(g, tensors):
    return g.run(targetTensors=list(tensors))


# --- SGD ----------------------------------------------------------------------------------


@pytest.mark.parametrize("rate", ["number", "scalar-tensor", "broadcast[4]", "broadcast[3,1]"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_sgd_five_steps(dtype, rate, rng):
    initial = rng.standard_normal(SHAPE).astype(dtype)
    gradients = draw_gradients(rng, dtype)
    lr = {
        "number": LR,
        "scalar-tensor": np.array(LR),
        "broadcast[4]": rng.uniform(0.05, 0.2, 4),
        "broadcast[3,1]": rng.uniform(0.05, 0.2, (3, 1)),
    }[rate]
    g = rg.Graph()
    w = g.variable(initial, shape=SHAPE, dataType=dtype, name="w")
    gradient = g.placeholder(SHAPE, dtype, name="gradient")
    learning_rate = lr if rate == "number" else g.constant(lr, dataType=dtype)
    update = g.stochasticGradientDescent(learning_rate, values=w, gradient=gradient, name="sgd")
    assert (update.name, update.shape, update.dataType) == ("sgd", SHAPE, w.dataType)
    step = g.assign(w, tensor=update)
    expected = numpy_sgd(initial.astype(np.float64), gradients, np.asarray(lr, dtype))
    for g_k, want in zip(gradients, expected):
        got = g.run(feeds={gradient: g_k}, targetTensors=[update], targetOperations=[step])
        assert got[update].dtype == dtype
        assert_close(got[update], want, TOLERANCE[dtype], "update")
        assert_close(read_all(g, [w])[w], want, TOLERANCE[dtype], "variable")


@pytest.mark.parametrize("dtype", DTYPES)
def test_apply_sgd_five_steps(dtype, rng):
    initial = rng.standard_normal(SHAPE).astype(dtype)
    gradients = draw_gradients(rng, dtype)
    g = rg.Graph()
    w = g.variable(initial, shape=SHAPE, dataType=dtype)
    gradient = g.placeholder(SHAPE, dtype)
    rate = g.placeholder((), dtype)  # a learning rate fed per step, halved each time
    step = g.applyStochasticGradientDescent(rate, variable=w, gradient=gradient, name="apply")
    assert isinstance(step, Operation) and (step.kind, step.name) == ("assign", "apply")
    values = initial.astype(np.float64)
    for k, g_k in enumerate(gradients):
        lr = LR / 2**k
        assert g.run(feeds={gradient: g_k, rate: lr}, targetOperations=[step]) == {}
        values = numpy_sgd(values, [g_k], np.asarray(lr, dtype))[0]
        got = read_all(g, [w])[w]
        assert got.dtype == dtype
        assert_close(got, values, TOLERANCE[dtype], f"step {k}")


# --- Adam ---------------------------------------------------------------------------------


def build_adam(g, dtype, initial, overload, gradient=None):
    """Variables for the state (and the beta powers), the adam op, and the assigns of one
    training step. Returns (variables, beta powers, outputs, assigns, gradient (a placeholder
    unless given as a function of the values' variable), currentLearningRate placeholder or
    None)."""
    variables = {k: g.variable(v, shape=SHAPE, dataType=dtype, name=k) for k, v in initial.items()}
    gradient = (
        g.placeholder(SHAPE, dtype, name="gradient")
        if gradient is None
        else gradient(variables["values"])
    )
    assigns, current, powers = [], None, {}
    if overload == "learningRate":
        powers = {
            "beta1Power": g.variable(BETA1, shape=(), dataType=dtype, name="beta1Power"),
            "beta2Power": g.variable(BETA2, shape=(), dataType=dtype, name="beta2Power"),
        }
        rate = {"learningRate": LR, **powers}
        assigns += [
            g.assign(p, tensor=g.multiplication(p, beta))  # beta^(t+1) = beta^t · beta
            for p, beta in zip(powers.values(), (BETA1, BETA2))
        ]
    else:
        current = g.placeholder((), dtype, name="currentLearningRate")
        rate = {"currentLearningRate": current}
    outputs = g.adam(
        beta1=BETA1,
        beta2=BETA2,
        epsilon=EPSILON,
        values=variables["values"],
        momentum=variables["momentum"],
        velocity=variables["velocity"],
        maximumVelocity=variables.get("maximumVelocity"),
        gradient=gradient,
        name="adam",
        **rate,
    )
    # outputs: values, momentum, velocity[, maximumVelocity]: the variables' order
    assigns += [g.assign(variables[k], tensor=out) for k, out in zip(variables, outputs)]
    return variables, powers, outputs, assigns, gradient, current


@pytest.mark.parametrize("amsgrad", [False, True], ids=["adam", "amsgrad"])
@pytest.mark.parametrize("overload", ["learningRate", "currentLearningRate"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_adam_five_steps(dtype, overload, amsgrad, rng):
    initial = adam_state(rng, dtype, amsgrad)
    gradients = draw_gradients(rng, dtype)
    expected = numpy_adam(initial, gradients, LR, BETA1, BETA2, EPSILON)
    if amsgrad:  # both sides of max(maxVel[t-1], v[t]) are taken
        last = expected[-1]
        assert np.any(last["maximumVelocity"] > last["velocity"])
        assert np.any(expected[0]["maximumVelocity"] > initial["maximumVelocity"])
    g = rg.Graph()
    variables, _, outputs, assigns, gradient, current = build_adam(g, dtype, initial, overload)
    assert [t.name for t in outputs] == ["adam", "adam/1", "adam/2", "adam/3"][: len(initial)]
    assert all(t.shape == SHAPE and t.dataType == variables["values"].dataType for t in outputs)
    for t, (g_k, want) in enumerate(zip(gradients, expected), start=1):
        feeds = (
            {gradient: g_k} if current is None else {gradient: g_k, current: dtype(current_rate(t))}
        )
        got = g.run(feeds=feeds, targetTensors=outputs, targetOperations=assigns)
        state = read_all(g, variables.values())
        for k, out in zip(variables, outputs):
            assert got[out].dtype == state[variables[k]].dtype == dtype
            assert_close(got[out], want[k], TOLERANCE[dtype], f"step {t} output {k}")
            assert_close(state[variables[k]], want[k], TOLERANCE[dtype], f"step {t} {k}")


@pytest.mark.parametrize("dtype", DTYPES)
def test_adam_hyperparameters_as_tensors_and_broadcast(dtype, rng):
    """Tensors, 0-d and per-column arrays, Python numbers, and constant (array) state."""
    initial = adam_state(rng, dtype, amsgrad=True)
    g_1 = draw_gradients(rng, dtype)[0]
    lr = rng.uniform(0.05, 0.2, (1, 4))
    beta1 = rng.uniform(0.8, 0.95, 4)
    g = rg.Graph()
    values = g.variable(initial["values"], shape=SHAPE, dataType=dtype)
    outputs = g.adam(
        g.constant(lr, dataType=dtype),
        beta1=g.constant(beta1, dataType=dtype),
        beta2=np.float64(BETA2),
        epsilon=g.constant(EPSILON, dataType=dtype),
        beta1Power=beta1.astype(dtype),
        beta2Power=np.array(BETA2),
        values=values,
        momentum=initial["momentum"],
        velocity=initial["velocity"],
        maximumVelocity=g.constant(initial["maximumVelocity"]),
        gradient=g_1,
    )
    got = g.run(targetTensors=outputs)
    want = numpy_adam(initial, [g_1], lr, beta1.astype(dtype), BETA2, EPSILON)[0]
    for k, out in zip(["values", "momentum", "velocity", "maximumVelocity"], outputs):
        assert got[out].dtype == dtype
        assert_close(got[out], want[k], TOLERANCE[dtype], k)


@pytest.mark.filterwarnings("error")
def test_optimizers_give_ieee_results_without_warnings():
    """inf and nan come back as IEEE arithmetic gives them, silently, as from every other op
    (and from the fused Adam pass): SGD by NumPy, and Adam with a per-element hyper-parameter."""
    g = rg.Graph()
    gradient = np.array([np.inf, 1.0], np.float32)
    sgd = g.stochasticGradientDescent(0.0, values=np.ones(2, np.float32), gradient=gradient)
    zeros = np.zeros(2, np.float32)
    adam = {"beta1": 0.9, "beta2": 0.999, "epsilon": 0.0, "values": np.ones(2, np.float32),
            "momentum": zeros, "velocity": zeros, "gradient": zeros}
    adam_per_element = g.adam(currentLearningRate=np.array([0.1, 0.1], np.float32), **adam)[0]
    adam_fused = g.adam(currentLearningRate=0.1, **adam)[0]
    got = g.run(targetTensors=[sgd, adam_per_element, adam_fused])
    np.testing.assert_array_equal(got[sgd], [np.nan, 1.0])  # 0 * inf
    assert np.isnan(got[adam_per_element]).all()  # 0 / (sqrt(0) + 0)
    np.testing.assert_array_equal(got[adam_per_element], got[adam_fused])


def test_unknown_dimensions(rng):
    g = rg.Graph()
    shape = (None, 4)
    tensors = {
        k: g.placeholder(shape, rg.float64) for k in ("values", "momentum", "velocity", "gradient")
    }
    rate = g.placeholder((None,), rg.float64)
    outputs = g.adam(currentLearningRate=rate, beta1=BETA1, beta2=BETA2, epsilon=EPSILON, **tensors)
    update = g.stochasticGradientDescent(
        0.5, values=tensors["values"], gradient=tensors["gradient"]
    )
    assert [t.shape for t in [*outputs, update]] == [shape] * 4
    arrays = {k: rng.uniform(0.1, 1.0, (2, 4)) for k in tensors}
    lr = rng.uniform(0.05, 0.2, 4)
    got = g.run(
        feeds={rate: lr, **{tensors[k]: v for k, v in arrays.items()}},
        targetTensors=[*outputs, update],
    )
    gradient = arrays.pop("gradient")
    # currentLearningRate is lr[t] itself: the reference at t = 1 with its correction undone
    want = numpy_adam(
        arrays, [gradient], lr * (1 - BETA1) / np.sqrt(1 - BETA2), BETA1, BETA2, EPSILON
    )[0]
    for k, out in zip(["values", "momentum", "velocity"], outputs):
        assert_close(got[out], want[k], "float64", k)
    assert_close(got[update], arrays["values"] - 0.5 * gradient, "float64", "sgd")


@pytest.mark.parametrize("optimizer", ["adam", "applyStochasticGradientDescent"])
def test_training_loop_through_gradients(optimizer, rng):
    """loss = sum((w - target)²) and its gradient from ``gradients`` feed the optimizer; a
    run of the assigns is a training step. Five steps against NumPy (dL/dw = 2 (w - target))."""
    target = rng.standard_normal(SHAPE)
    state = adam_state(rng, np.float64, amsgrad=False)
    g = rg.Graph()

    def loss_gradient(w):
        return g.gradients(of=g.square(g.subtraction(w, target)), with_=[w])[w]

    if optimizer == "adam":
        variables, _, _, assigns, _, _ = build_adam(
            g, np.float64, state, "learningRate", loss_gradient
        )
    else:
        variables = {"values": g.variable(state["values"], shape=SHAPE, dataType=rg.float64)}
        assigns = [
            g.applyStochasticGradientDescent(
                LR, variable=variables["values"], gradient=loss_gradient(variables["values"])
            )
        ]
    for t in range(1, 6):
        g.run(targetOperations=assigns)
        gradient = 2 * (state["values"] - target)
        state = (
            numpy_adam(state, [gradient], LR, BETA1, BETA2, EPSILON, first=t)[0]
            if optimizer == "adam"
            else {"values": state["values"] - LR * gradient}
        )
        got = read_all(g, variables.values())
        for k, tensor in variables.items():
            assert_close(got[tensor], state[k], "float64", f"step {t} {k}")



@pytest.mark.parametrize("optimizer", ["adam", "sgd"])
def test_rank_0_variables_stay_rank_0(optimizer):
    """A scalar parameter: the update is a rank-0 ndarray (not rank 1, not a NumPy scalar), so
    assign takes it and the variable keeps its declared shape ()."""
    g = rg.Graph()
    w, m, v = (g.variable(x, shape=[], dataType=rg.float32, name=n)
               for x, n in ((2.0, "w"), (0.0, "m"), (0.0, "v")))
    gw = g.gradients(of=g.square(w), with_=[w])[w]  # 2w
    if optimizer == "adam":
        new, *_ = g.adam(currentLearningRate=LR, beta1=BETA1, beta2=BETA2, epsilon=EPSILON,
                         values=w, momentum=m, velocity=v, gradient=gw)
        expected = 2.0 - LR * (1 - BETA1) * 4.0 / (np.sqrt((1 - BETA2) * 16.0) + EPSILON)
    else:
        new = g.stochasticGradientDescent(LR, values=w, gradient=gw)
        expected = 2.0 - LR * 4.0
    got = g.run(targetTensors=[new])[new]
    assert isinstance(got, np.ndarray) and got.shape == () and got.dtype == np.float32
    g.run(targetOperations=[g.assign(w, new)])
    after = g.run(targetTensors=[w])[w]
    assert isinstance(after, np.ndarray) and after.shape == ()
    assert_close(after, np.float32(expected), "float32_forward", optimizer)

# --- reads see the values from before the run's assigns --------------------------------------


def test_reads_see_pre_run_values(rng):
    initial = adam_state(rng, np.float64, amsgrad=False)
    g_1 = draw_gradients(rng, np.float64)[0]
    g = rg.Graph()
    variables, powers, outputs, assigns, gradient, _ = build_adam(
        g, np.float64, initial, "learningRate"
    )
    w = variables["values"]
    late = g.stochasticGradientDescent(LR, values=w, gradient=gradient)  # recorded after assigns
    powers = list(powers.values())
    got = g.run(
        feeds={gradient: g_1}, targetTensors=[w, late, *powers, *outputs], targetOperations=assigns
    )
    np.testing.assert_array_equal(got[w], initial["values"])
    assert_close(got[late], initial["values"] - LR * g_1, "float64", "late read")
    assert [float(got[p]) for p in powers] == [BETA1, BETA2]  # adam read beta^1, not beta^2
    want = numpy_adam(initial, [g_1], LR, BETA1, BETA2, EPSILON)[0]
    assert_close(got[outputs[0]], want["values"], "float64", "adam")
    after = read_all(g, [w, *powers])
    np.testing.assert_array_equal(after[w], got[outputs[0]])
    assert_close([after[p] for p in powers], [BETA1**2, BETA2**2], "float64", "powers")


def test_two_apply_sgd_swap_pre_run_values(rng):
    """w -= lr·u and u -= lr·w in one run: each reads the other's value from before it."""
    w0, u0 = rng.standard_normal(SHAPE), rng.standard_normal(SHAPE)
    g = rg.Graph()
    w = g.variable(w0, shape=SHAPE, dataType=rg.float64)
    u = g.variable(u0, shape=SHAPE, dataType=rg.float64)
    steps = [
        g.applyStochasticGradientDescent(LR, variable=w, gradient=u),
        g.applyStochasticGradientDescent(LR, variable=u, gradient=g.read(w)),
    ]
    for _ in range(2):
        g.run(targetOperations=steps)
        w0, u0 = w0 - LR * u0, u0 - LR * w0
    after = read_all(g, [w, u])
    assert_close(after[w], w0, "float64", "w")
    assert_close(after[u], u0, "float64", "u")


def test_optimizer_outputs_have_no_gradient():
    g = rg.Graph()
    w = g.variable(1.0, shape=SHAPE, dataType=rg.float64)
    update = g.stochasticGradientDescent(LR, values=w, gradient=w)
    with pytest.raises(ValueError, match="no gradient rule for stochasticGradientDescent"):
        g.gradients(of=update, with_=[w])


# --- errors: every op and label -------------------------------------------------------------

# variant: (method, the values' label, hyper-parameters, tensors shaped like the values)
VARIANTS = {
    "stochasticGradientDescent": (
        "stochasticGradientDescent",
        "values",
        ("learningRate",),
        ("gradient",),
    ),
    "applyStochasticGradientDescent": (
        "applyStochasticGradientDescent",
        "variable",
        ("learningRate",),
        ("gradient",),
    ),
    "adam": (
        "adam",
        "values",
        ("learningRate", "beta1", "beta2", "epsilon", "beta1Power", "beta2Power"),
        ("momentum", "velocity", "maximumVelocity", "gradient"),
    ),
    "adam-currentLearningRate": (
        "adam",
        "values",
        ("currentLearningRate", "beta1", "beta2", "epsilon"),
        ("momentum", "velocity", "maximumVelocity", "gradient"),
    ),
}
OPTIONAL = {
    "maximumVelocity",
    "learningRate",
    "currentLearningRate",
    "beta1Power",
    "beta2Power",
}  # None means something for these (tested below)


def valid_arguments(g, variant):
    _, subject, hyper, state = VARIANTS[variant]
    arguments = {label: 0.5 for label in hyper}
    arguments.update((label, g.constant(0.5, shape=SHAPE, dataType=rg.float32)) for label in state)
    arguments[subject] = g.variable(0.5, shape=SHAPE, dataType=rg.float32, name="w")
    return arguments


def call(g, variant, **changes):
    arguments = {**valid_arguments(g, variant), **changes}
    return getattr(g, VARIANTS[variant][0])(**arguments)


def error_cases():
    for variant, (op, subject, hyper, state) in VARIANTS.items():
        for label in (subject, *hyper, *state):
            kinds = ["not-a-tensor", "other-graph"]
            kinds += [] if label in OPTIONAL else ["None"]
            kinds += ["int32"] if label == subject else ["float64", "shape-mismatch"]
            kinds += ["shape-rank"] if label in hyper else []
            kinds += ["placeholder"] if label == "variable" else []
            for kind in kinds:
                yield pytest.param(
                    variant, op, subject, label, kind, id=f"{variant}-{label}-{kind}"
                )


@pytest.mark.parametrize("variant, op, subject, label, kind", list(error_cases()))
def test_argument_errors(variant, op, subject, label, kind):
    g, other = rg.Graph(), rg.Graph()
    hyper = label in VARIANTS[variant][2]
    where = f"^{op}: {label}: "
    bad, error, match = {
        "not-a-tensor": ("0.5", TypeError, where + "expected an rnngraph Tensor"),
        "None": (None, TypeError, where + "expected an rnngraph Tensor"),
        "other-graph": (
            other.constant(0.5, shape=SHAPE),
            ValueError,
            where + "tensor '.*' belongs to another Graph",
        ),
        "int32": (
            g.variable(1, shape=SHAPE, dataType=rg.int32),
            TypeError,
            where + "expected float32 or float64, got int32",
        ),
        "placeholder": (g.placeholder(SHAPE), TypeError, where + "'.*' is not a variable"),
        "float64": (
            g.constant(0.5, shape=() if hyper else SHAPE, dataType=rg.float64),
            TypeError,
            where + f"expected dataType float32 like {subject}, got float64",
        ),
        "shape-mismatch": (
            g.constant(0.5, shape=(2, 1) if hyper else (4, 3), dataType=rg.float32),
            ValueError,
            where + r"expected (a scalar or a shape that broadcasts to )?the "
            rf"shape of {subject} \[3, 4\], got \[(4, 3|2, 1)\]",
        ),
        "shape-rank": (
            g.constant(0.5, shape=(1, 3, 4), dataType=rg.float32),
            ValueError,
            where + r"expected a scalar or a shape that broadcasts to the shape of "
            rf"{subject} \[3, 4\], got \[1, 3, 4\]",
        ),
    }[kind]
    with pytest.raises(error, match=match):
        call(g, variant, **{label: bad})


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_name_errors(variant):
    g = rg.Graph()
    with pytest.raises(TypeError, match=f"^{VARIANTS[variant][0]}: name: "):
        call(g, variant, name=3)


ADAM_COMBINATIONS = [
    ({"currentLearningRate": 0.1}, "currentLearningRate", "give .*, not both"),
    ({"learningRate": None}, "learningRate", "expected learningRate= .* or currentLearningRate="),
    ({"beta1Power": None}, "beta1Power", "required with learningRate="),
    ({"beta2Power": None}, "beta2Power", "required with learningRate="),
    (
        {"learningRate": None, "currentLearningRate": 0.1},
        "beta1Power",
        "not taken with currentLearningRate=",
    ),
    (
        {"learningRate": None, "currentLearningRate": 0.1, "beta1Power": None},
        "beta2Power",
        "not taken with currentLearningRate=",
    ),
]


@pytest.mark.parametrize(
    "changes, label, message",
    ADAM_COMBINATIONS,
    ids=[f"{c[1]}-{'-'.join(c[0])}" for c in ADAM_COMBINATIONS],
)
def test_adam_overload_errors(changes, label, message):
    g = rg.Graph()
    with pytest.raises(TypeError, match=f"^adam: {label}: {message}"):
        call(g, "adam", **changes)


def test_run_time_shape_errors():
    g = rg.Graph()
    w = g.variable(1.0, shape=SHAPE, dataType=rg.float32)
    unknown = g.placeholder((None, 4), rg.float32)
    step = g.applyStochasticGradientDescent(LR, variable=w, gradient=unknown)
    refused_at_run(
        g,
        r"^applyStochasticGradientDescent: gradient: expected the shape of variable \[3, 4\], "
        r"got \[2, 4\]",
        {unknown: np.ones((2, 4), np.float32)},
        targetOperations=[step],
    )
    np.testing.assert_array_equal(read_all(g, [w])[w], np.ones(SHAPE, np.float32))  # unassigned
    values = g.placeholder((None, 4), rg.float32)
    gradient = g.placeholder((None, 4), rg.float32)
    rate = g.placeholder((None,), rg.float32)
    update = g.stochasticGradientDescent(LR, values=values, gradient=gradient)
    feeds = {values: np.ones((2, 4), np.float32), gradient: np.ones((3, 4), np.float32)}
    refused_at_run(
        g,
        r"^stochasticGradientDescent: gradient: expected the shape of values \[2, 4\], "
        r"got \[3, 4\]",
        feeds,
        [update],
    )
    outputs = g.adam(
        currentLearningRate=rate,
        beta1=BETA1,
        beta2=BETA2,
        epsilon=EPSILON,
        values=values,
        momentum=values,
        velocity=values,
        gradient=values,
    )
    refused_at_run(
        g,
        r"^adam: currentLearningRate: expected a scalar or a shape that broadcasts to the "
        r"shape of values \[2, 4\], got \[3\]",
        {values: np.ones((2, 4), np.float32), rate: np.ones(3, np.float32)},
        outputs,
    )
