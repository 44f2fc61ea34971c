"""The one partitioning entry point every backend's ``partition_for_<name>`` uses."""
from ... import _ffi


def partition_for(backend, mod, merge=True, bind_constants=True):
    """Offloads what ``backend``'s registered patterns match. ``merge`` picks the seed's path 2
    (FuseOpsByPattern + MergeCompositeFunctions); otherwise path 1 (annotate_codegen=True)."""
    return _ffi.partition_for(backend, mod, merge, bind_constants)


def prepare_for(backends, mod):
    """``mod`` after the prepare step of each of ``backends``, in order (what ``partita compile``
    runs before the first backend partitions: cuDNN rewrites the attention it runs to
    ``R.nn.attention`` and gives back the rest; cuBLAS makes patch convolutions products).
    Names without a prepare step are skipped."""
    return _ffi.prepare_for(list(backends), mod)
