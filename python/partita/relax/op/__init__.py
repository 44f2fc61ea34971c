"""Relax operators (``tvm.relax.op``), generated from the C++ operator registry.

Each registered operator ``relax.X`` becomes ``relax.op.X`` (and ``relax.nn.X`` becomes
``relax.op.nn.X``) taking its arguments positionally and its attributes by keyword (or
positionally after the arguments), with the registry's defaults.
"""
import sys
import types

from ... import _ffi
from ._convert import make_op_function

nn = types.ModuleType(__name__ + ".nn", "Neural-network operators (tvm.relax.op.nn).")
sys.modules[nn.__name__] = nn

__all__ = ["nn"]
for _name in _ffi.list_ops():
    _parts = _name.split(".")[1:]  # drop "relax"
    _fn = make_op_function(_name)
    if len(_parts) == 1:
        globals()[_parts[0]] = _fn
        __all__.append(_parts[0])
    elif _parts[0] == "nn" and len(_parts) == 2:
        setattr(nn, _parts[1], _fn)
