"""Building and running Relax modules (``tvm.relax.build`` / ``tvm.relax.VirtualMachine``)."""
from .. import _ffi
from .._ffi import VirtualMachine


def build(mod, target=None, fallback=None):
    """Compiles ``mod``: functions carrying "Codegen" go to their backends (module-at-a-time,
    with the options of the matching target in ``target``, a Target, a kind name or a list of
    them), the rest to the host VM. Returns an Executable (``export_library(path)`` writes it
    to one file)."""
    return _ffi.build(mod, target, fallback)


__all__ = ["build", "VirtualMachine"]
