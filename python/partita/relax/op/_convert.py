"""Turns Python values into the expressions and attribute values an operator expects."""
import numbers

import numpy as np

from ... import _ffi

# Arguments that take a shape value (R.shape([...])) rather than a tuple.
_SHAPE_ARGS = {"shape", "size"}  # reshape / broadcast_to / ...: shape; resize2d: size


def _to_arg(name, value):
    if isinstance(value, _ffi.Expr):
        return value
    if isinstance(value, np.ndarray):
        return _ffi.Constant(np.ascontiguousarray(value))
    if isinstance(value, (list, tuple)):
        items = list(value)
        if name in _SHAPE_ARGS:
            return _ffi.ShapeExpr(items)
        if all(isinstance(v, _ffi.Expr) for v in items):
            return _ffi.Tuple(items)
        return _ffi.Tuple([v if isinstance(v, _ffi.Expr) else _ffi.PrimValue(v) for v in items])
    if isinstance(value, _ffi.PrimExpr):
        return _ffi.PrimValue(value)
    if isinstance(value, bool):
        return _ffi.Constant(np.asarray(value, dtype="bool"))
    if isinstance(value, numbers.Integral):
        return _ffi.PrimValue(int(value)) if name in ("min", "max") else _ffi.Constant(np.asarray(value, "int64"))
    if isinstance(value, numbers.Real):
        return _ffi.PrimValue(float(value)) if name in ("min", "max") else _ffi.Constant(np.asarray(value, "float32"))
    raise TypeError(f"argument '{name}': cannot convert {type(value).__name__} to a Relax expression")


def _to_attr(value):
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    return value


def make_op_function(op_name):
    """A Python function calling ``op_name`` with TVM's calling convention."""
    definition = _ffi.op_def(op_name)
    arg_specs = definition["args"]  # (name, optional, variadic)
    attr_names = [a[0] for a in definition["attrs"]]
    arg_names = [a[0] for a in arg_specs]

    def call(*args, **kwargs):
        exprs, attrs = [], []
        positional = list(args)
        for name, optional, variadic in arg_specs:
            if variadic:
                exprs.extend(_to_arg(name, v) for v in positional)
                positional = []
                break
            if positional:
                value = positional.pop(0)
            elif name in kwargs:
                value = kwargs.pop(name)
            elif optional:
                break
            else:
                raise TypeError(f"{op_name}: missing argument '{name}'")
            if value is None and optional:
                break
            exprs.append(_to_arg(name, value))
        # Remaining positionals fill attributes in schema order (TVM allows R.nn.softmax(x, -1)).
        for name, value in zip(attr_names, positional):
            if name in kwargs:
                raise TypeError(f"{op_name}: attribute '{name}' given twice")
            attrs.append((name, _to_attr(value)))
        if len(positional) > len(attr_names):
            raise TypeError(f"{op_name}: too many positional arguments")
        for name, value in kwargs.items():
            if name in arg_names:
                raise TypeError(f"{op_name}: argument '{name}' given after a later argument was omitted")
            attrs.append((name, _to_attr(value)))
        return _ffi.make_call(op_name, exprs, attrs)

    call.__name__ = op_name.split(".")[-1]
    call.__qualname__ = call.__name__
    signature = ", ".join(arg_names + [f"{a[0]}={a[2]!r}" for a in definition["attrs"]])
    call.__doc__ = f"{definition['script_name'] or op_name}({signature})"
    return call
