"""rnngraph: MPSGraph's recurrent-network ops on the CPU for NumPy."""

from rnngraph import _blas

_blas.load()

from rnngraph import _core  # noqa: E402
