"""Bad input to rnngraph.torch's modules and raw ops gets a clear Python exception that
names the argument (the module's name or the op and Swift label), never a crash or garbage;
and the edges (T = 0, N = 0, NaN, non-contiguous views) behave as documented here."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from pytorch.torch_helpers_api import CELLS, H, I, build, raw_inputs, sample

F64 = torch.float64
OPS = {"single_gate_rnn": "singleGateRNN", "lstm": "LSTM", "gru": "GRU"}


def op(cell):
    return getattr(torch.ops.rnngraph, cell)


# --- devices ---------------------------------------------------------------------------------

@pytest.mark.parametrize(("cell", "where", "name"), [
    ("lstm", 0, "input"), ("lstm", 1, r"hx\[0\]"), ("lstm", 2, r"hx\[1\]"),
    ("gru", 0, "input"), ("gru", 1, "hx")])
def test_a_tensor_on_meta_is_refused_by_name(cell, where, name):
    module = build(cell)
    x, hx = sample(module)
    given = [x, *(hx if isinstance(hx, tuple) else (hx,))]
    given[where] = given[where].to("meta")
    state = tuple(given[1:]) if cell == "lstm" else given[1]
    with pytest.raises(ValueError, match=rf"{name}: expected a CPU tensor, .* device meta"):
        module(given[0], state)


@pytest.mark.parametrize("cell", list(CELLS))
@pytest.mark.parametrize("how", ["to", "device_context"])
def test_a_module_on_meta_with_meta_input_gives_meta_outputs_of_the_right_shapes(cell, how):
    """As torch.nn's modules do (shape inference without memory): the op's fake kernel."""
    x, hx = sample(build(cell, bidirectional=True))
    if how == "to":
        module = build(cell, bidirectional=True).to("meta")
    else:
        with torch.device("meta"):
            module = CELLS[cell].module(I, H, dtype=F64,
                                        descriptor=CELLS[cell].descriptor(bidirectional=True))
    to_meta = (lambda t: t.to("meta"))
    state = tuple(map(to_meta, hx)) if cell == "lstm" else to_meta(hx)
    output, final = module(to_meta(x), state)
    finals = final if cell == "lstm" else (final,)
    assert output.device.type == "meta" and output.shape == (*x.shape[:2], 2 * H)
    assert all(f.device.type == "meta" and f.shape == (2, x.shape[1], H) for f in finals)
    with pytest.raises(ValueError, match=r"input: expected a CPU tensor, .* device meta"):
        build(cell)(to_meta(x))  # a module on the CPU refuses a meta input by name


@pytest.mark.parametrize("how", ["to", "device_context"])
def test_a_module_on_meta_with_cpu_input_is_refused(how):
    """The module's parameters are on meta (moved there, or built under torch.device("meta")
    for deferred initialisation): the dispatcher then picks the fake (meta) kernel, which
    returns uninitialised CPU tensors. The module must refuse instead, naming a parameter."""
    x, hx = sample(build("gru"))
    if how == "to":
        module = build("gru").to("meta")
    else:
        with torch.device("meta"):
            module = CELLS["gru"].module(I, H, dtype=F64)
    assert module.recurrentWeight.device.type == "meta"
    with pytest.raises(ValueError, match=r"(inputWeight|recurrentWeight).*meta"):
        module(x, hx)


@pytest.mark.parametrize("label", ["source", "recurrentWeight"])
def test_the_raw_op_refuses_tensors_on_two_devices(label):
    """One tensor on meta, the others on the CPU: the fake kernel runs, and returns garbage
    (CPU tensors from new_empty) or meta tensors, instead of an error naming the label."""
    inputs = raw_inputs("lstm")
    inputs[label] = inputs[label].to("meta")
    with pytest.raises(ValueError, match=rf"LSTM: {label}: .*meta"):
        op("lstm")(**inputs)


@pytest.mark.parametrize("device", ["meta", "fake"])
@pytest.mark.parametrize(("label", "shape", "error", "match"), [
    ("recurrentWeight", (4 * H, H + 1), ValueError, r"recurrentWeight: expected shape"),
    ("recurrentWeight", (4 * H,), ValueError, r"recurrentWeight: expected rank 2"),
    ("inputWeight", (4 * H, I + 1), ValueError, r"inputWeight: expected shape"),
    ("initCell", (3, H), ValueError, r"initCell: expected shape"),
    ("bias", (4 * H, 1), ValueError, r"bias"),
    ("peephole", (2,), TypeError, r"peephole: expected torch\.float64 like"),
], ids=lambda v: v if isinstance(v, str) else None)
def test_the_fake_kernel_refuses_what_the_kernel_refuses(device, label, shape, error, match):
    """torch.compile and torch.export trace through the fake kernel, on fake tensors (or
    meta ones): a wrong shape or a mixed dtype fails there, naming the label, rather than
    giving outputs of made-up shapes that fail further on."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    inputs = raw_inputs("lstm")
    dtype = torch.float32 if error is TypeError else F64
    wrong = {label: torch.zeros(shape if error is ValueError else inputs[label].shape,
                                dtype=dtype)}
    with pytest.raises(error, match=rf"^LSTM: {match}"):  # the real kernel, as a reference
        op("lstm")(**(inputs | wrong))
    if device == "meta":
        moved = {k: v.to("meta") for k, v in (inputs | wrong).items()}
        with pytest.raises(error, match=rf"^LSTM: {match}"):
            op("lstm")(**moved)
    else:
        with FakeTensorMode() as mode:
            faked = {k: mode.from_tensor(v) for k, v in (inputs | wrong).items()}
            with pytest.raises(error, match=rf"^LSTM: {match}"):
                op("lstm")(**faked)
            good = {k: mode.from_tensor(v) for k, v in inputs.items()}
            assert op("lstm")(**good)[0].shape == (5, 2, H)


@pytest.mark.parametrize("value", [5, -1, 2**31, 2**63 - 1])
def test_an_activation_out_of_range_names_the_op_and_argument(value):
    """The raw op's activations are ints in its schema: past 0..4 (even past int32, where the
    core's options once refused it with pybind11's signature list) a ValueError names them."""
    for name in ("activation", "cellGateActivation"):
        with pytest.raises(ValueError, match=rf"^LSTM: {name}: activation must be 0\.\.4"):
            op("lstm")(**raw_inputs("lstm"), **{name: value})


# --- dtypes ----------------------------------------------------------------------------------

def test_float32_input_into_a_float64_module():
    with pytest.raises(TypeError, match=r"LSTM: input: expected torch\.float64 .* torch\.float32"):
        build("lstm")(torch.randn(5, 2, I))


@pytest.mark.parametrize(("cell", "where", "name"), [
    ("lstm", 0, r"hx\[0\]"), ("lstm", 1, r"hx\[1\]"), ("gru", 0, "hx")])
def test_float32_hx_with_float64_input(cell, where, name):
    module = build(cell)
    x, hx = sample(module)
    states = list(hx) if cell == "lstm" else [hx]
    states[where] = states[where].float()
    with pytest.raises(TypeError, match=rf"{name}: expected torch\.float64"):
        module(x, tuple(states) if cell == "lstm" else states[0])


@pytest.mark.parametrize("grad", [True, False], ids=["training", "no_grad"])
@pytest.mark.parametrize(("label", "replacement", "error", "match"), [
    ("inputWeight", lambda p: p.float(), TypeError,
     r"LSTM: inputWeight: expected torch\.float64 like the other inputs, got torch\.float32"),
    ("bias", lambda p: p.to(torch.float16), TypeError,
     r"LSTM: bias: expected torch\.float32 or torch\.float64, got torch\.float16"),
    ("recurrentWeight", lambda p: p[:, :-1], ValueError,
     r"LSTM: recurrentWeight: expected shape \[4H, H\]"),
    ("peephole", lambda p: p[:-1], ValueError, r"LSTM: peephole: expected shape")])
def test_a_replaced_parameter_is_named_by_its_label(grad, label, replacement, error, match):
    """A parameter a user replaced (another dtype, a wrong shape) is refused naming its Swift
    label, whether autograd records the call or not."""
    module = build("lstm", peephole=True)
    x, hx = sample(module)
    setattr(module, label, torch.nn.Parameter(replacement(getattr(module, label).detach())))
    with torch.set_grad_enabled(grad), pytest.raises(error, match=match):
        module(x, hx)


@pytest.mark.parametrize("cell", CELLS)
def test_the_raw_op_names_the_label_of_another_dtype(cell):
    for label, value in raw_inputs(cell).items():
        if label == "source" or not isinstance(value, torch.Tensor):
            continue
        inputs = raw_inputs(cell) | {label: value.float()}
        with pytest.raises(TypeError, match=rf"^{OPS[cell]}: {label}: expected torch\.float64"):
            op(cell)(**inputs)


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.bool, torch.complex64,
                                   torch.complex128, torch.float16, torch.bfloat16], ids=str)
def test_input_of_a_dtype_rnngraph_does_not_compute(dtype):
    with pytest.raises(TypeError, match=r"LSTM: input: expected torch\.float32 or torch\.float64"):
        build("lstm")(torch.ones(5, 2, I, dtype=dtype))
    with pytest.raises(TypeError, match=r"^LSTM: source: expected torch\.float32 or"):
        op("lstm")(**raw_inputs("lstm") | {"source": torch.ones(5, 2, I, dtype=dtype)})


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("given", [None, torch.float32], ids=["like_module", "float32"])
def test_a_module_of_a_dtype_rnngraph_does_not_compute_is_named(dtype, given):
    """``.half()`` (or bfloat16) on the module: the error names the module's parameters and
    the way back, whatever the input's dtype, rather than blaming the input."""
    module = build("lstm").to(dtype)
    with pytest.raises(TypeError, match=rf"^rnngraph\.torch\.LSTM: recurrentWeight: the "
                                        rf"module's parameters are {dtype}; .*\.float\(\)"):
        module(torch.ones(5, 2, I, dtype=given or dtype))


LAYOUTS = {  # tensors the dispatcher sends to other backends than the CPU's dense one
    "sparse_coo": (lambda t: t.to_sparse(), r"layout torch\.sparse_coo"),
    "sparse_csr": (lambda t: t.reshape(-1, t.shape[-1]).to_sparse_csr(), r"layout torch\.sparse_csr"),
    "mkldnn": (lambda t: t.float().to_mkldnn(), r"layout torch\._mkldnn"),
    "nested": (lambda t: torch.nested.nested_tensor(list(t)), "a nested tensor"),
    "quantized": (lambda t: torch.quantize_per_tensor(t.float(), 0.1, 0, torch.qint8),
                  "a quantized tensor"),
}


@pytest.mark.filterwarnings("ignore::UserWarning")  # (nested and quantized: prototypes)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize(("cell", "label"), [("lstm", "source"), ("gru", "recurrentWeight"),
                                             ("single_gate_rnn", "initState")])
def test_the_raw_op_names_a_tensor_of_another_layout(cell, label, layout):
    """Not torch's NotImplementedError ("Could not run 'rnngraph::lstm' with arguments from
    the 'SparseCPU' backend"): the op's TypeError, naming the label, as the modules' is."""
    make, kind = LAYOUTS[layout]
    inputs = raw_inputs(cell)
    inputs[label] = make(inputs[label])
    with pytest.raises(TypeError, match=rf"^{OPS[cell]}: {label}: expected a dense .*{kind}"):
        op(cell)(**inputs)
    inputs = raw_inputs("lstm")
    h, _, _, cells, z = op("lstm")(**inputs)
    arguments = {"sourceGradient": make(torch.ones_like(h)), "zState": z, "cellOutputFwd": cells}
    with pytest.raises(TypeError, match=rf"^LSTMGradients: sourceGradient: .*{kind}"):
        op("lstm_gradients")(**inputs, **arguments)


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("layout", LAYOUTS)
def test_the_module_names_input_of_another_layout(layout):
    make, kind = LAYOUTS[layout]
    with pytest.raises(TypeError, match=rf"^rnngraph\.torch\.LSTM: input: expected a dense .*{kind}"):
        build("lstm")(make(torch.ones(5, 2, I, dtype=F64)))


@pytest.mark.parametrize("given", [[[0.5] * I] * 5, np.ones((5, 2, I)), 1.0, None],
                         ids=["list", "ndarray", "float", "None"])
def test_input_that_is_not_a_tensor(given):
    with pytest.raises(TypeError, match=r"GRU: input: expected a torch\.Tensor"):
        build("gru")(given)


# --- shapes ----------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(5, 2, I + 1), (5, 2, I, 1), (I,), (5, 2, 0)], ids=str)
def test_input_of_the_wrong_shape(shape):
    with pytest.raises(ValueError, match=r"LSTM: input: expected time-major \[T, N, 3\]"):
        build("lstm")(torch.ones(shape, dtype=F64))


@pytest.mark.parametrize("shape", [(2, 2, H), (1, 3, H), (1, 2, H + 1), (2, H)], ids=str)
def test_hx_of_the_wrong_shape(shape):
    module = build("gru")
    with pytest.raises(ValueError, match=r"GRU: hx: expected shape \[1, 2, 4\]"):
        module(torch.ones(5, 2, I, dtype=F64), torch.zeros(shape, dtype=F64))


@pytest.mark.parametrize("cell", CELLS)
def test_the_raw_op_names_the_label_of_a_wrong_shape(cell):
    for label, value in raw_inputs(cell).items():
        if label == "source" or not isinstance(value, torch.Tensor):
            continue
        wrong = value[..., 1:]  # one less along the last axis
        with pytest.raises(ValueError, match=rf"^{OPS[cell]}: {label}: expected shape"):
            op(cell)(**raw_inputs(cell) | {label: wrong})


def test_the_gradient_op_names_the_label_of_a_wrong_shape():
    inputs = raw_inputs("lstm")
    h, _, _, cells, z = op("lstm")(**inputs)
    with pytest.raises(ValueError, match=r"^LSTMGradients: zState: expected shape"):
        torch.ops.rnngraph.lstm_gradients(inputs["source"], inputs["recurrentWeight"],
                                          torch.ones_like(h), z[..., 1:], cells,
                                          inputWeight=inputs["inputWeight"])


def test_batch_first_input_is_caught_by_hx_and_named_time_major():
    module = build("lstm")
    x, hx = sample(module, T=5, N=2)
    with pytest.raises(ValueError, match=r"hx\[0\]: expected shape \[1, 5, 4\] .*time-major"):
        module(x.transpose(0, 1), hx)


def test_lstm_hx_that_is_not_a_pair():
    module = build("lstm")
    x, hx = sample(module)
    with pytest.raises(TypeError, match=r"LSTM: hx: expected a tuple \(h0, c0\)"):
        module(x, hx[0])


# --- the mask --------------------------------------------------------------------------------

def test_a_mask_that_requires_grad_is_refused():
    module = build("gru")
    x, _ = sample(module)
    mask = torch.ones(5, 1, 1, dtype=F64, requires_grad=True)
    with pytest.raises(ValueError, match=r"GRU: mask: .* requires grad; pass mask\.detach"):
        module(x, mask=mask)
    inputs = raw_inputs("gru") | {"mask": mask}
    with pytest.raises(ValueError, match=r"rnngraph\.gru: mask: .* requires grad"):
        op("gru")(**inputs)


@pytest.mark.parametrize(("mask", "error", "match"), [
    (torch.ones(5, 2, H + 1, dtype=F64), ValueError, r"GRU: mask: expected a shape broadcastable"),
    (torch.ones(5, 2, H, dtype=torch.int32), TypeError, r"GRU: mask: expected torch\.float32 or"),
    ([1.0] * H, TypeError, r"GRU: mask: expected a torch\.Tensor"),
], ids=["shape", "int", "list"])
def test_a_bad_mask_is_named(mask, error, match):
    module = build("gru")
    with pytest.raises(error, match=match):
        module(sample(module)[0], mask=mask)


# --- edges -----------------------------------------------------------------------------------

@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("cell", CELLS)
def test_no_timesteps(cell, bidirectional):
    """T = 0: output [0, N, D·H], and the final states are the initial ones (zeros without hx);
    backward passes dL/dh_n to h0 and gives the weights zero gradients."""
    module = build(cell, bidirectional=bidirectional)
    x, hx = sample(module, T=0, N=3)
    initial = [s.requires_grad_() for s in (hx if isinstance(hx, tuple) else (hx,))]
    output, state = module(x, hx)
    final = list(state) if isinstance(state, tuple) else [state]
    assert output.shape == (0, 3, (2 if bidirectional else 1) * H)
    for h0, h_n in zip(initial, final, strict=True):
        assert torch.equal(h_n, h0)
    empty = module(x)[1]
    assert all(not s.any() for s in (empty if isinstance(empty, tuple) else (empty,)))
    sum(2 * s.sum() for s in final).backward()
    assert all(torch.equal(h0.grad, torch.full_like(h0, 2)) for h0 in initial)
    assert not module.recurrentWeight.grad.any()


@pytest.mark.parametrize("cell", CELLS)
def test_an_empty_batch(cell):
    module = build(cell, bidirectional=True)
    x = torch.zeros(5, 0, I, dtype=F64, requires_grad=True)
    output, state = module(x)
    assert output.shape == (5, 0, 2 * H)
    assert all(s.shape == (2, 0, H) for s in (state if isinstance(state, tuple) else (state,)))
    output.sum().backward()
    assert x.grad.shape == x.shape
    assert module.recurrentWeight.grad.shape == module.recurrentWeight.shape


@pytest.mark.parametrize("cell", CELLS)
def test_nan_propagates_along_its_sequence_only(cell):
    module = build(cell, bidirectional=True)
    x, hx = sample(module, T=5, N=2)
    x[2, 0, 1] = float("nan")
    nan = module(x, hx)[0].isnan()
    forward, reverse = nan[:, 0, :H], nan[:, 0, H:]
    assert forward[2:].all() and not forward[:2].any()  # from t=2 on, in processing order
    assert reverse[:3].all() and not reverse[3:].any()
    assert not nan[:, 1].any()  # the other sequence of the batch


@pytest.mark.parametrize("view", ["input", "hx", "recurrentWeight", "negative"])
def test_non_contiguous_tensors_give_the_contiguous_result(view):
    module = build("lstm", bidirectional=True)
    x, (h0, c0) = sample(module)
    expected = module(x, (h0, c0))
    if view == "input":
        x = x.transpose(0, 1).contiguous().transpose(0, 1)
    elif view == "hx":
        h0 = h0.transpose(1, 2).contiguous().transpose(1, 2)
    elif view == "recurrentWeight":
        with torch.no_grad():
            module.recurrentWeight.data = module.recurrentWeight.mT.contiguous().mT
    else:
        x = torch._neg_view(-x)
    assert not (x.is_contiguous() and h0.is_contiguous()
                and module.recurrentWeight.is_contiguous()) or x.is_neg()
    got = module(x, (h0, c0))
    assert torch.equal(got[0], expected[0])
    assert all(torch.equal(a, b) for a, b in zip(got[1], expected[1], strict=True))


def test_backward_through_an_op_called_without_training():
    inputs = raw_inputs("lstm")
    inputs["recurrentWeight"].requires_grad_()
    h = op("lstm")(**inputs, training=False)[0]
    with pytest.raises(RuntimeError, match=r"rnngraph\.lstm: backward needs .* training=True"):
        h.sum().backward()


def test_sizes_may_be_numpy_integers():
    module = build("lstm")
    twin = type(module)(np.int64(I), np.int32(H))
    assert (twin.input_size, twin.hidden_size) == (I, H)
    assert type(twin.hidden_size) is int


@pytest.mark.parametrize(("keywords", "error", "match"), [
    # 2^47 rows of inputWeight: past any address space, overcommitted or not
    ({"hidden_size": 2**45}, MemoryError, rf"inputWeight: cannot allocate \[{2**47}"),
    ({"device": "nonsense"}, ValueError, "device: Expected one of"),
], ids=["huge", "device"])
def test_a_module_that_cannot_be_made_says_why(keywords, error, match):
    cls = type(build("lstm"))
    with pytest.raises(error, match=r"^rnngraph\.torch\.LSTM: " + match):
        cls(I, keywords.pop("hidden_size", H), **keywords)


@pytest.mark.parametrize("label", ["recurrentWeight", "inputWeight"])
def test_a_required_parameter_set_to_none_is_named(label):
    module = build("lstm")
    setattr(module, label, None)
    x = torch.randn(3, 2, I, dtype=module.bias.dtype)
    with pytest.raises(TypeError, match=rf"^rnngraph\.torch\.LSTM: {label}: None"):
        module(x)
    with pytest.raises(TypeError, match=rf"^rnngraph\.torch\.LSTM\.to_torch: {label}: None"):
        module.to_torch()


def test_conversions_name_a_parameter_of_the_wrong_shape():
    module = build("gru", resetAfter=True, bidirectional=True)
    module.secondaryBias = torch.nn.Parameter(torch.zeros(3, dtype=module.bias.dtype))
    with pytest.raises(ValueError, match=r"GRU\.to_torch: secondaryBias: expected shape "
                                         rf"\[{2 * H}\], got \[3\]"):
        module.to_torch()
    theirs = torch.nn.GRU(I, H, bidirectional=True)
    theirs.weight_hh_l0_reverse = torch.nn.Parameter(torch.zeros(3 * H, H + 1))
    with pytest.raises(ValueError, match=r"GRU\.from_torch: weight_hh_l0_reverse: expected "
                                         rf"shape \[{3 * H}, {H}\], got \[{3 * H}, {H + 1}\]"):
        type(module).from_torch(theirs)


@pytest.mark.parametrize("device", ["cpu", "meta"])
@pytest.mark.parametrize("cell", list(OPS))
def test_the_raw_op_names_a_required_tensor_passed_as_none(cell, device):
    """The dispatcher lets None through for a required Tensor argument."""
    inputs = {k: v.to(device) if isinstance(v, torch.Tensor) else v
              for k, v in raw_inputs(cell).items()}
    inputs["recurrentWeight"] = None
    with pytest.raises(TypeError, match=rf"^{OPS[cell]}: recurrentWeight is required"):
        op(cell)(**inputs)
    gradient = getattr(torch.ops.rnngraph, f"{cell}_gradients")
    given = inputs["source"]
    saved = {"lstm": {"cellOutputFwd": given}, "gru": {"outputFwd": given}}.get(cell, {})
    with pytest.raises(TypeError, match=rf"^{OPS[cell]}Gradients: zState is required"):
        gradient(source=given, recurrentWeight=given, sourceGradient=given, zState=None,
                 **saved)


def test_from_torch_names_a_nonlinearity_torch_does_not_have():
    theirs = torch.nn.RNN(I, H)
    theirs.nonlinearity = "sigmoid"  # changed after construction
    with pytest.raises(ValueError, match=r"SingleGateRNN\.from_torch: cannot convert: "
                                         r"nonlinearity 'sigmoid'"):
        CELLS["single_gate_rnn"].module.from_torch(theirs)


@pytest.mark.parametrize("cell", list(CELLS))
def test_a_hidden_size_whose_weights_overflow_is_a_memory_error(cell):
    with pytest.raises(MemoryError, match=r"rnngraph\.torch\.\w+: \w+: cannot allocate"):
        CELLS[cell].module(I, 2**62)
