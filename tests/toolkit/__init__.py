"""The test toolkit for all three cells: one case type, one input maker, one runner, one
tolerance table, one finite-difference checker.

A test is a ``Case`` (which cell, which options), inputs drawn for it from the ``rng``
fixture (conftest.py: seeded from the crc32 of the test id, so every run sees the same
numbers), a run through the public ``rnngraph.Graph`` API, and a comparison under a named
tolerance::

    import pytest
    from toolkit import Case, assert_close, cases, check_gradients, forward, gradients, \\
        make_inputs, reference, signals

    @pytest.mark.parametrize("case", cases("LSTM", "bi-forgetGateLast-peephole[2,4H]",
                                           "reverse-i=relu-h0-c0[1,N,DH]-mask[T,N,1]"))
    def test_gradients(case, rng):
        x = make_inputs(case, rng)              # FD-safe: away from relu/hardSigmoid kinks
        sig = signals(case, rng)                # dy, dS, dC as the case's signal says
        analytic = gradients(case, x, sig)      # count, order, shapes, dtypes checked
        check_gradients(case, x, sig, analytic) # central differences, rnngraph and reference

    def test_forward(case, rng):
        x = make_inputs(case, rng)
        assert_all_close(forward(case, x), reference(case, x), "float64", case.id)

Writing a test for a new option:

1. Spell it as a ``Case`` field and id token (case.py: the field, ``_validate``, ``id`` and
   ``parse``); ``Case.parse(cell, case.id) == case`` must keep holding.
2. If it is a new input or layout, draw it in ``inputs.draw_inputs``; if the reference needs
   it, pass it through ``runner.reference_options``.
3. Add cases using it to the cell's test files (``cases(cell, *ids)`` checks each id is
   canonical). Pick a tolerance from ``TOLERANCES``; a new one needs a one-line reason.

Modules: ``spec`` (SPEC.md facts: gate counts, slots, returned-gradient order, KINK_MARGIN),
``case``, ``inputs``, ``runner``, ``tolerances``, ``finite_differences``. Cell-independent
per-cell facts live in ``spec`` only; tests never repeat them.
"""

from .case import Case, cases, layout_dims
from .finite_differences import (
    WORST,
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
    fd_safe,
    float32_and_float64,
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
    "fd_safe",
    "final",
    "final_op",
    "float32_and_float64",
    "forward",
    "forward_op",
    "gradients",
    "gradients_op",
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
