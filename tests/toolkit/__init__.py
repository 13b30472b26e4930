"""The test toolkit for all three cells: one case type, one input maker, one runner, one
tolerance table, one finite-difference checker.

A test is a ``Case`` (which cell, which options), inputs drawn for it from the ``rng``
fixture (conftest.py: seeded from the crc32 of the test's node id, the only seeding; derive
more generators with ``rng.spawn``), a run through the public ``rnngraph.Graph`` API, and a
comparison under a named tolerance::

    import pytest
    from toolkit import assert_all_close, cases, check_gradients, forward, gradients, \
        make_inputs, reference, signals

    CASES = cases("LSTM", "bi-forgetGateLast-peephole[2,4H]",
                  "reverse-i=relu-h0-c0[1,N,DH]-mask[T,N,1]-dy+dC")

    @pytest.mark.parametrize("case", CASES)
    def test_forward(case, rng):
        x = make_inputs(case, rng)       # FD-safe: relu/hardSigmoid kinks ≥ KINK_MARGIN away
        assert_all_close(forward(case, x), reference(case, x), "float64", case.id)

    @pytest.mark.parametrize("case", CASES)
    def test_gradients(case, rng):
        x = make_inputs(case, rng)
        sig = signals(case, rng)         # dy, dS, dC as the case's signal says
        analytic = gradients(case, x, sig)       # count, order, shapes, dtypes checked
        check_gradients(case, x, sig, analytic)  # central differences: rnngraph, reference

``Case`` (case.py; its docstring has the id grammar)
    ``Case(cell, direction="fwd", activations={slot or token: name}, forgetGateLast,
    resetGateFirst, resetAfter, flipZ, inputWeight=True, bias=True, initState=None|"[N,DH]"|
    "[1,N,DH]", initCell=..., peephole=None|"[D4H]"|"[2,4H]", secondaryBias=False,
    mask=None|"[T,N,DH]"|"[T,N,1]"|..., fractional_mask=False, signal="dy+dS(+dC)", T=3, N=2,
    I=3, H=2, dtype="float64")``; invalid combinations raise. ``Case.parse(cell, id)``,
    ``case.id`` (the pytest id, defaults omitted), ``cases(cell, *ids)`` (pytest params),
    ``case.but(**changes)``, ``case.with_all_inputs(**changes)``, ``case.descriptor(**props)``,
    ``case.activation(slot)``, ``case.returned`` (SPEC section-6 labels), ``D``, ``G``, ``DH``.
Inputs (inputs.py)
    ``make_inputs(case, rng, scale=0.6, weight_scale=None, margin=KINK_MARGIN, accept=None)``:
    redraws until FD-safe and ``accept({slot: pre-activations [T,N,D·H]})`` holds;
    ``scale_for(case)`` (2.0 when a slot is hardSigmoid); ``hard_sigmoid_saturates(case, pre)``
    (an ``accept``: every hardSigmoid slot sees both pieces); ``float32_and_float64(case, rng)``;
    ``signals(case, rng) -> Signals(dy, dS, dC)``; ``one_direction(case, x, d)`` -> the
    unidirectional case and inputs of one direction; ``explicit_inputs(case, x)`` -> the case
    and inputs with every absent optional input given as what its absence means (identity W,
    zeros; states as [N,DH]); ``draw_inputs`` (one draw, no check).
Runner (runner.py)
    ``forward(case, x, **descriptor_props)`` (training=True unless given) -> {"h", "c",
    "zState"} as returned; ``gradients(case, x, signals, wired=True, forward_overrides=None,
    **descriptor_props)`` -> {label: gradient} in SPEC order (``wired=False`` feeds the saved
    tensors as arrays; ``forward_overrides`` sets e.g. produceCell on the forward op);
    ``reference(case, x, return_preactivations=False)``; ``loss(case, signals, through)``;
    ``final(sequence, case)``; ``blas_threads(n)``; ``*_op(cell, x, descriptor, ...)`` for
    hand-built descriptors.
Tolerances (tolerances.py)
    ``TOLERANCES[name] = Tolerance(bound, reason)`` on ``relative_error`` (max abs error over
    max(1, max|expected|)); ``assert_close(a, b, name, what)``, ``assert_all_close``.
Finite differences (finite_differences.py)
    ``check_gradients``, ``check_random_direction``, ``numerical_gradients``,
    ``assert_gradients_close``; every error goes into ``WORST``, printed by conftest.py.
Forced kernel paths (paths.py)
    ``forced_paths(product=, tile=, split=, sweep=, steps=)``: run a block on named kernel paths
    (test_paths.py); imported on its own, not re-exported here.
Ops built, not run (placeholders.py)
    ``on_placeholders(case, gradient, shapes=, dataType=, dtypes=, names=, descriptor=,
    name=)`` -> (graph, {label: placeholder}, outputs); ``build(...)`` -> outputs;
    ``feeds(placeholders, x)``; ``build_pair(case, forward_descriptor, gradient_descriptor)``
    (a forward op wired into its gradient op); ``input_shapes(case, gradient)``;
    ``every_input(cell, id)`` at ``SIZES``: for the tests of what an op refuses (tests/errors/)
    and of the Graph surface; imported on its own.
SPEC facts (spec.py)
    ``GATES``, ``SLOTS``/``SLOT_DEFAULTS``, ``RETURNED``, ``GRADIENT_OPS``, ``KINKS``,
    ``KINK_MARGIN``, ``output_names``, ``gate_order``: defined here only; tests never repeat
    them.

Writing a test for a new option:

1. Spell it as a ``Case`` field and id token (case.py: the field, ``_validate``, ``id`` and
   ``parse``); ``Case.parse(cell, case.id) == case`` must keep holding.
2. If it is a new input or layout, draw it in ``inputs.draw_inputs``; if the reference needs
   it, pass it through ``runner.reference_options``.
3. Add cases using it to the cell's test files (``cases(cell, *ids)`` checks each id is
   canonical). Pick a tolerance from ``TOLERANCES``; a new one needs a one-line reason.
"""

from .case import Case, cases, layout_dims
from .finite_differences import (
    WORST,
    WORST_BY_RULE,
    assert_gradients_close,
    check_gradients,
    check_random_direction,
    differentiable,
    numerical_gradients,
    random_direction_check,
)
from .inputs import (
    Signals,
    draw_inputs,
    explicit_inputs,
    fd_safe,
    float32_and_float64,
    hard_sigmoid_saturates,
    make_inputs,
    one_direction,
    scale_for,
    signals,
)
from .runner import (
    blas_threads,
    final,
    final_op,
    forward,
    forward_op,
    gradients,
    gradients_op,
    loss,
    loss_op,
    reference,
    reference_op,
)
from .spec import (
    ACTIVATIONS,
    CELLS,
    GATES,
    GRADIENT_OPS,
    KINK_MARGIN,
    KINKS,
    RETURNED,
    SLOT_DEFAULTS,
    SLOTS,
)
from .tolerances import TOLERANCES, Tolerance, assert_all_close, assert_close, relative_error

__all__ = [
    "ACTIVATIONS",
    "CELLS",
    "GATES",
    "GRADIENT_OPS",
    "KINKS",
    "KINK_MARGIN",
    "RETURNED",
    "SLOTS",
    "SLOT_DEFAULTS",
    "TOLERANCES",
    "WORST",
    "WORST_BY_RULE",
    "Case",
    "Signals",
    "Tolerance",
    "assert_all_close",
    "assert_close",
    "assert_gradients_close",
    "blas_threads",
    "cases",
    "check_gradients",
    "check_random_direction",
    "differentiable",
    "draw_inputs",
    "explicit_inputs",
    "fd_safe",
    "final",
    "final_op",
    "float32_and_float64",
    "forward",
    "forward_op",
    "gradients",
    "gradients_op",
    "hard_sigmoid_saturates",
    "layout_dims",
    "loss",
    "loss_op",
    "make_inputs",
    "numerical_gradients",
    "one_direction",
    "random_direction_check",
    "reference",
    "reference_op",
    "relative_error",
    "scale_for",
    "signals",
]
