"""The same core compiled for avx512: its API is _core's."""

from rnngraph._core import GRUOptions as GRUOptions
from rnngraph._core import LSTMOptions as LSTMOptions
from rnngraph._core import PackedWeights as PackedWeights
from rnngraph._core import SingleGateRNNOptions as SingleGateRNNOptions
from rnngraph._core import _force_paths as _force_paths
from rnngraph._core import _forced_paths as _forced_paths
from rnngraph._core import _host_openmp as _host_openmp
from rnngraph._core import _parallel_thresholds as _parallel_thresholds
from rnngraph._core import _profile as _profile
from rnngraph._core import _reset_profile as _reset_profile
from rnngraph._core import _set_parallel_threshold as _set_parallel_threshold
from rnngraph._core import _use_host_openmp as _use_host_openmp
from rnngraph._core import adam_update as adam_update
from rnngraph._core import blas_info as blas_info
from rnngraph._core import cpu_budget as cpu_budget
from rnngraph._core import cpu_supports as cpu_supports
from rnngraph._core import get_num_threads as get_num_threads
from rnngraph._core import kept_bytes as kept_bytes
from rnngraph._core import kernel_level as kernel_level
from rnngraph._core import matmul as matmul
from rnngraph._core import pack_forward_weights as pack_forward_weights
from rnngraph._core import release_kept_memory as release_kept_memory
from rnngraph._core import rnn_forward as rnn_forward
from rnngraph._core import rnn_gradients as rnn_gradients
from rnngraph._core import set_num_threads as set_num_threads
