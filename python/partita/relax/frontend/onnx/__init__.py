"""The ONNX importer (``tvm.relax.frontend.onnx``).

    from partita.relax.frontend.onnx import from_onnx
    mod = from_onnx(onnx.load("model.onnx"), shape_dict={"input": ["batch", 3, 224, 224]})
"""
import os

from .... import _ffi

__all__ = ["from_onnx", "supported_ops"]


def _shape_dict(shape_dict):
    out = {}
    for name, dims in (shape_dict or {}).items():
        conv = []
        for d in dims:
            if isinstance(d, str):
                conv.append(d)
            elif d is None:
                conv.append(-1)
            else:
                conv.append(int(d))
        out[str(name)] = conv
    return out


def from_onnx(model, shape_dict=None, dtype_dict=None, opset=None, keep_params_in_input=False,
              sanitize_input_names=True):
    """Imports an ONNX model into an IRModule with one function ``main``.

    Parameters
    ----------
    model : onnx.ModelProto, bytes, str or os.PathLike
        The model, its serialized bytes, or the path of an ``.onnx`` file.
    shape_dict : dict[str, list[int | str | None]], optional
        Input shapes that replace the declared ones; a string names a symbolic dimension
        (shared by every input that names it), ``None`` or ``-1`` is a fresh symbolic one.
    dtype_dict : ignored
        Accepted for compatibility with TVM; element types come from the model.
    opset : int, optional
        Import as this opset instead of the model's own (13 to 17 are supported).
    keep_params_in_input : bool
        Initializers become trailing parameters of ``main`` instead of constants; get their
        values with ``partita.relax.frontend.detach_params``.
    sanitize_input_names : bool
        Accepted for compatibility: parameter names are always made valid identifiers.
    """
    del dtype_dict, sanitize_input_names
    shapes = _shape_dict(shape_dict)
    if isinstance(model, (str, os.PathLike)):
        return _ffi.onnx_from_file(os.fspath(model), shapes, keep_params_in_input, opset)
    if isinstance(model, (bytes, bytearray)):
        data = bytes(model)
    elif hasattr(model, "SerializeToString"):
        data = model.SerializeToString()
    else:
        raise TypeError("from_onnx expects an onnx.ModelProto, bytes or a path, got %s" % type(model).__name__)
    name = getattr(getattr(model, "graph", None), "name", "") or "<model>"
    return _ffi.onnx_from_bytes(data, shapes, keep_params_in_input, opset, name)


def supported_ops():
    """The ONNX operator types the importer converts."""
    return list(_ffi.onnx_supported_ops())
