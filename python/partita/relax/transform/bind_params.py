"""``relax.transform.BindParams(func_name, params)`` with TVM's argument forms."""
import numpy as np

from ... import _ffi


def _as_expr(value):
    if isinstance(value, _ffi.Expr):
        return value
    if isinstance(value, _ffi.Tensor):
        return _ffi.Constant(value)
    return _ffi.Constant(np.ascontiguousarray(np.asarray(value)))


def BindParams(func_name, params):  # noqa: N802 - TVM's spelling
    """Binds parameters of ``func_name`` to constants: ``params`` maps a parameter name or a
    parameter Var to a numpy array, a runtime Tensor or a Relax expression."""
    triples = []
    for key, value in dict(params).items():
        if isinstance(key, str):
            triples.append((key, None, _as_expr(value)))
        elif isinstance(key, _ffi.Var):
            triples.append(("", key, _as_expr(value)))
        else:
            raise TypeError(f"BindParams: a key must be a parameter name or Var, got {type(key).__name__}")
    return _ffi.BindParams(func_name, triples)
