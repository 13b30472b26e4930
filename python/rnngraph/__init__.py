"""rnngraph: MPSGraph's recurrent-network ops (singleGateRNN, LSTM, GRU and their gradient
ops) on the CPU, for NumPy users.

The specification, which the docstrings cite as "SPEC.md section N", is installed with the
package as ``rnngraph/SPEC.md`` (``importlib.resources.files("rnngraph") / "SPEC.md"``); it
is ``docs/SPEC.md`` in the source tree and the source distribution, and the "Specification"
page of the docs site. README.md, also the package metadata's description, covers
installation and use."""

from rnngraph import _blas

_blas.load()  # rnngraph's own OpenBLAS, before the compiled core binds to it

from rnngraph.activation import RNNActivation
from rnngraph.config import (
    cpu_budget,
    get_num_threads,
    kept_memory,
    release_memory,
    set_num_threads,
    show_config,
)
from rnngraph.descriptors import (
    GRUDescriptor,
    LSTMDescriptor,
    SingleGateRNNDescriptor,
)
from rnngraph.dtypes import DataType, float32, float64, int32, int64
from rnngraph.executable import Executable
from rnngraph.graph import Graph
from rnngraph.ops.loss import LossReductionType
from rnngraph.tensor import Tensor

__version__ = "0.1.0"

from rnngraph import _threadpool, config

config.warn_if_environment_invalid()  # a bad RNNGRAPH_NUM_THREADS is ignored, not silently
_threadpool.register()  # threadpoolctl sees and limits rnngraph's threads (if installed)

__all__ = [
    "DataType",
    "Executable",
    "GRUDescriptor",
    "Graph",
    "LSTMDescriptor",
    "LossReductionType",
    "RNNActivation",
    "SingleGateRNNDescriptor",
    "Tensor",
    "cpu_budget",
    "float32",
    "float64",
    "get_num_threads",
    "int32",
    "int64",
    "kept_memory",
    "release_memory",
    "set_num_threads",
    "show_config",
]
