"""Expression helpers that TVM users reach for: ``relax.const``, ``relax.DataflowBlock``."""
import numpy as np

from .. import _ffi


def const(value, dtype=None):
    """A Constant holding ``value`` (a scalar, nested list or numpy array).

    Python floats default to float32 and ints to int64, as in TVM.
    """
    if isinstance(value, np.ndarray):
        array = value if dtype is None else value.astype(dtype)
    else:
        if dtype is None:
            probe = np.asarray(value)
            if probe.dtype == np.float64:
                dtype = "float32"
            elif probe.dtype == np.bool_:
                dtype = "bool"
            elif np.issubdtype(probe.dtype, np.integer):
                dtype = "int64"
        array = np.asarray(value, dtype=dtype)
    return _ffi.Constant(np.ascontiguousarray(array))


def DataflowBlock(bindings):  # noqa: N802 - TVM's spelling
    """A binding block whose bindings form a dataflow region (``with R.dataflow():``)."""
    return _ffi.BindingBlock(list(bindings), True)
