"""Types of rnngraph's compiled core (python/src/*.cpp), the same at every kernel level.

Arrays are numpy.ndarray of float32 or float64 in SPEC.md's layouts; dtype, shape and
layout are checked at run time. Activations are RNNActivation's raw values (0..4).
"""

from typing import Any, ClassVar, TypeAlias

from numpy.typing import NDArray

_Array: TypeAlias = NDArray[Any]

class _CellOptions:
    """What the three options types share (a stub-only base: at run time each is its own
    class)."""

    op: ClassVar[str]
    gradient_op: ClassVar[str]
    gates: ClassVar[int]
    @property
    def reverse(self) -> bool: ...
    @property
    def bidirectional(self) -> bool: ...

class SingleGateRNNOptions(_CellOptions):
    """singleGateRNN's descriptor, parsed."""

    def __init__(
        self, *, reverse: bool = False, bidirectional: bool = False, activation: int = 1
    ) -> None: ...
    @property
    def activation(self) -> int: ...

class LSTMOptions(_CellOptions):
    """LSTM's descriptor, parsed."""

    def __init__(
        self,
        *,
        reverse: bool = False,
        bidirectional: bool = False,
        forgetGateLast: bool = False,
        inputGateActivation: int = 3,
        forgetGateActivation: int = 3,
        cellGateActivation: int = 2,
        outputGateActivation: int = 3,
        activation: int = 2,
    ) -> None: ...
    @property
    def forgetGateLast(self) -> bool: ...
    @property
    def inputGateActivation(self) -> int: ...
    @property
    def forgetGateActivation(self) -> int: ...
    @property
    def cellGateActivation(self) -> int: ...
    @property
    def outputGateActivation(self) -> int: ...
    @property
    def activation(self) -> int: ...

class GRUOptions(_CellOptions):
    """GRU's descriptor, parsed."""

    def __init__(
        self,
        *,
        reverse: bool = False,
        bidirectional: bool = False,
        resetGateFirst: bool = False,
        resetAfter: bool = False,
        flipZ: bool = False,
        updateGateActivation: int = 3,
        resetGateActivation: int = 3,
        outputGateActivation: int = 2,
    ) -> None: ...
    @property
    def resetGateFirst(self) -> bool: ...
    @property
    def resetAfter(self) -> bool: ...
    @property
    def flipZ(self) -> bool: ...
    @property
    def updateGateActivation(self) -> int: ...
    @property
    def resetGateActivation(self) -> int: ...
    @property
    def outputGateActivation(self) -> int: ...

_Options: TypeAlias = SingleGateRNNOptions | LSTMOptions | GRUOptions

class PackedWeights:
    """A forward op's weights packed for its kernels (from pack_forward_weights)."""

def pack_forward_weights(
    options: _Options, recurrentWeight: _Array, inputWeight: _Array | None = None
) -> PackedWeights:
    """Pack a forward op's recurrentWeight (and inputWeight) once for many rnn_forward calls."""

def rnn_forward(
    options: _Options,
    inputs: dict[str, _Array | None],
    *,
    training: bool = False,
    packed: PackedWeights | None = None,
    final_states: bool = False,
    recurrent_product: bool = False,
) -> tuple[_Array | None, ...]:
    """Forward pass of one RNN op; inputs by Swift label. Returns (h, c or None, zState or
    None): c for LSTM only, zState with ``training``; with ``final_states``, then each
    direction's final h and c (LSTM only, else None) ``[D, N, H]``; with
    ``recurrent_product``, last, the internal ``recurrentProduct`` [T, N, D·H] that a
    training resetAfter GRU keeps for rnn_gradients (hm·R_oᵀ + b2 of every step; None
    otherwise)."""

class PreparedForward:
    """A forward op's call prepared once (from prepare_forward)."""

    @property
    def run_labels(self) -> str:
        """The labels ``run`` takes, in order, comma-separated."""
    def run(self, *arrays: _Array) -> tuple[_Array | None, ...]:
        """The forward call on this run's arrays (in ``run_labels`` order, each checked
        against its layout). Returns (h, c or None, zState or None), then recurrentProduct
        with ``recurrent_product``, as ``rnn_forward`` does."""

def prepare_forward(
    options: _Options,
    inputs: dict[str, _Array | None],
    run_labels: list[str],
    *,
    training: bool = False,
    packed: PackedWeights | None = None,
    recurrent_product: bool = False,
) -> PreparedForward:
    """Check a forward op's call once and keep it: ``inputs`` as for ``rnn_forward`` (this
    run's arrays); ``run_labels``: those whose arrays change from run to run, passed to
    ``run`` in this order (each present in ``inputs``). Every other array is kept as it is
    now (it must not change: a Graph's constants), with the packed weights. Shapes are
    fixed."""

def rnn_gradients(options: _Options, inputs: dict[str, _Array | None]) -> dict[str, _Array]:
    """Gradient op of one RNN; inputs by Swift label. Returns {label: gradient} for source,
    recurrentWeight and each given optional input. The LSTM also takes the internal
    ``cellSequenceGradient`` [T, N, D·H]: dL/dc for every step of the cell sequence (what
    Graph.gradients passes when the loss reads c). A resetAfter GRU also takes the internal
    ``recurrentProduct`` [T, N, D·H] that its rnn_forward kept, instead of computing it from
    outputFwd again."""

def matmul(a: _Array, b: _Array) -> _Array:
    """a [m, k] · b [k, n] on rnngraph's threads and BLAS (float32 or float64; each operand
    C-contiguous or a transposed view of such)."""

def adam_update(values: _Array, momentum: _Array, velocity: _Array,
                maximumVelocity: _Array | None, gradient: _Array, lr: float, beta1: float,
                beta2: float, epsilon: float) -> tuple[_Array, ...]:
    """One fused Adam step on rnngraph's threads: (values, momentum, velocity[, maximumVelocity])."""

def blas_info() -> dict[str, str | int]:
    """The linked BLAS: {'library', 'config', 'core', 'num_threads'}."""

def cpu_supports(level: str) -> bool:
    """Whether this CPU runs the given kernel level ('avx2', 'avx512')."""

kernel_level: str  # 'avx512', 'avx2' or 'baseline': this module's instruction set

def set_num_threads(n: int) -> None:
    """Threads rnngraph's kernels use."""

def cpu_budget() -> dict[str, int | float]:
    """The CPUs this process may use: {'affinity', 'quota', 'environment', 'default'}."""

def get_num_threads() -> int:
    """Threads rnngraph's kernels use."""

def _cgroup_quota(cgroup_file: str, root: str) -> float:
    """For tests: the CPU quota of the cgroup named in a /proc/self/cgroup text under root."""

def _available_memory() -> int:
    """The bytes this process can still get (memory and swap, within its cgroup); 0: unknown."""

def _cgroup_memory_left(cgroup_file: str, root: str) -> float:
    """For tests: the lowest cgroup memory limit less usage under root (-1: none)."""

def _memory_short_of(bytes: int) -> int:
    """0 when a new block of ``bytes`` passes the allocator's check, else the bytes left."""

def _set_memory_reserve(bytes: int) -> None:
    """For tests: _available_memory() leaves out ``bytes`` more (0: nothing)."""

def _use_host_openmp(library: str) -> bool:
    """Run parallel sections on the already loaded OpenMP runtime at ``library`` (empty: on
    rnngraph's own workers); False if it is not loaded or not an OpenMP runtime."""

def _host_openmp() -> str:
    """The adopted OpenMP runtime's path (empty: none)."""

def _host_pool_stalls() -> tuple[int, int]:
    """For measurements: (stalled regions, rests on rnngraph's own workers) of the adopted OpenMP pool."""

def _set_host_pool_fall_back(on: bool) -> None:
    """For measurements: whether a stalling adopted pool rests (the default: True)."""

def _worker_moves() -> int:
    """For tests and measurements: how many times rnngraph's workers moved to another core to make way for a team member descheduled on theirs."""

def _set_worker_moves(on: bool) -> None:
    """For measurements: whether workers make way by moving to another core (the default: True) or by yielding."""

def _worker_pulls() -> int:
    """For tests and measurements: how many times a waiting thread pulled a worker that held items, descheduled on another core, onto its own."""

def _set_worker_pulls(on: bool) -> None:
    """For measurements: whether a waiting thread pulls such a worker onto its core (the default: True)."""

# For tests and measurements.
def _force_paths(*, product: str = "auto", tile: str = "auto", split: str = "auto",
                 sweep: str = "auto", steps: str = "auto") -> None:
    """Force the step product (auto, packed, dot, blas, small), the panel tile (auto, few,
    some, many), the work split (auto, serial, rows, team), the time loops' sweep of the
    weight panels (auto, alternating, ascending) and how a team runs each forward step
    (auto, units, phases), process-wide."""

def _forced_paths() -> dict[str, str]:
    """The paths _force_paths set: {'product', 'tile', 'split', 'sweep', 'steps'}."""

def _profile() -> dict[str, tuple[float, int]]:
    """For measurements: {section: (seconds, entries)} since the last reset."""

def _reset_profile() -> None:
    """For measurements: zero the profile."""

def _parallel_thresholds() -> list[tuple[str, int]]:
    """[(site, threshold)] of the work worth a second thread."""

def _set_parallel_threshold(site: str, value: int) -> None:
    """Move a site's threshold (a negative value restores the default)."""

def _set_blas_dimension_limit(limit: int) -> None:
    """For tests: the largest size one BLAS call gets (0 restores int32's)."""

def release_kept_memory() -> None: ...
def kept_bytes() -> int: ...
