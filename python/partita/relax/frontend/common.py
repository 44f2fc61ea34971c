"""Helpers shared by the importers."""
from ... import _ffi


def detach_params(mod):
    """Splits the parameters kept by ``keep_params_in_input=True`` from the module.

    Returns ``(mod, params)`` where ``params`` maps ``"main"`` to the list of numpy arrays for
    the trailing parameters of ``main`` (in order), as TVM's ``relax.frontend.detach_params``.
    """
    params = [array for _, array in _ffi.onnx_params_of(mod)]
    return mod, ({"main": params} if params else {})
