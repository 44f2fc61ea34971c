"""Relax operators (``tvm.relax.op``), generated from the C++ operator registry.

Each registered operator ``relax.X`` becomes ``relax.op.X`` (and ``relax.nn.X`` becomes
``relax.op.nn.X``, ``relax.image.X`` ``relax.op.image.X``) taking its arguments positionally and its attributes by keyword (or
positionally after the arguments), with the registry's defaults.
"""
import sys
import types

from ... import _ffi
from ._convert import make_op_function


def _namespace(name, doc):
    module = types.ModuleType(f"{__name__}.{name}", doc)
    sys.modules[module.__name__] = module
    globals()[name] = module
    return module


nn = _namespace("nn", "Neural-network operators (tvm.relax.op.nn).")

__all__ = ["nn"]
for _name in _ffi.list_ops():
    _parts = _name.split(".")[1:]  # drop "relax"
    _fn = make_op_function(_name)
    if len(_parts) == 1:
        globals()[_parts[0]] = _fn
        __all__.append(_parts[0])
    elif len(_parts) == 2:  # relax.nn.X, relax.image.X, ...: relax.op.nn.X, relax.op.image.X
        module = globals().get(_parts[0])
        if not isinstance(module, types.ModuleType):
            module = _namespace(_parts[0], f"Operators relax.{_parts[0]}.* (tvm.relax.op.{_parts[0]}).")
            __all__.append(_parts[0])
        setattr(module, _parts[1], _fn)


def hint_on_device(data, dst_vdevice, memory_scope="global"):
    """A hint that ``data`` is used on ``dst_vdevice`` (TVM's ``relax.op.hint_on_device``), read
    by ``relax.transform.RealizeVDevice``. ``dst_vdevice`` is a runtime device (an object with
    ``device_type`` and ``device_id``, or ``kind`` and ``index`` such as ``partita.runtime.cpu()``),
    a ``(device_type, index)`` pair, or a name such as ``"cuda:0"``."""
    device_type, index = _device_pair(dst_vdevice)
    return _ffi.make_call("relax.hint_on_device", [data],
                          [("device_type", device_type), ("index", index), ("memory_scope", memory_scope)])


def _device_pair(device):
    if isinstance(device, str):
        name, _, index = device.partition(":")
        device_type = _ffi.device_type_from_name(name)  # TVM's runtime names: cpu, cuda, ...
        if device_type is None:
            raise ValueError(f"hint_on_device: unknown device '{name}'")
        return device_type, int(index or 0)
    if isinstance(device, tuple) and len(device) == 2:
        return int(device[0]), int(device[1])
    if hasattr(device, "device_type") and hasattr(device, "device_id"):
        return int(device.device_type), int(device.device_id)
    if hasattr(device, "kind") and hasattr(device, "index"):
        return _device_pair(f"{device.kind}:{device.index}")
    raise TypeError(f"hint_on_device: cannot read a device from {type(device).__name__}")


def _attention(query, key, value, bias=None, scale=None, causal_mask=None, window_size=None):
    """Fused multi-head attention (TVM's ``relax.op.nn.attention``): (B, S, N, H) operands; with a
    ``bias`` the call is ``relax.nn.attention_bias``, as in TVM."""
    attrs = [("scale", scale), ("causal_mask", causal_mask), ("window_size", window_size)]
    if bias is None:
        return _ffi.make_call("relax.nn.attention", [query, key, value], attrs)
    return _ffi.make_call("relax.nn.attention_bias", [query, key, value, bias], attrs)


nn.attention = _attention


def linear(data, weight, bias=None, out_dtype=None):
    """``data @ weight^T (+ bias)``, as TVM's ``relax.op.linear`` builds it (PyTorch's Linear):
    ``matmul(data, permute_dims(weight))``, then an ``add`` of the bias when there is one."""
    kwargs = {} if out_dtype is None else {"out_dtype": out_dtype}
    out = matmul(data, permute_dims(weight), **kwargs)  # noqa: F821 (registered above)
    return out if bias is None else add(out, bias)  # noqa: F821


_resize2d = image.resize2d  # noqa: F821 (registered above)


def _resize2d_of_size(data, size, *args, **kwargs):
    """``relax.op.image.resize2d``; as in TVM, one int ``size`` is a square."""
    return _resize2d(data, (size, size) if isinstance(size, int) else size, *args, **kwargs)


image.resize2d = _resize2d_of_size  # noqa: F821
__all__.append("linear")
