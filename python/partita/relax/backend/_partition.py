"""The one partitioning entry point every backend's ``partition_for_<name>`` uses."""
from ... import _ffi


def partition_for(backend, mod, merge=True, bind_constants=True):
    """Offloads what ``backend``'s registered patterns match. ``merge`` picks the seed's path 2
    (FuseOpsByPattern + MergeCompositeFunctions); otherwise path 1 (annotate_codegen=True)."""
    return _ffi.partition_for(backend, mod, merge, bind_constants)
