"""The CUTLASS backend (``tvm.relax.backend.cuda.cutlass``): TVM's pattern families, compiled to
CUTLASS 3 sm90a kernels by the C++ codegen when the module is built."""
from .._partition import partition_for, prepare_for
from ..pattern_registry import get_patterns_with_prefix
from ...transform import FuseOpsByPattern


def partition_for_cutlass(mod, annotate_codegen=True, bind_constants=True):
    """Partitions ``mod`` with the registered ``cutlass.*`` patterns (TVM's signature).

    ``annotate_codegen=True`` (the seed's path 1): each match is a composite wrapped in a function
    carrying ``"Codegen": "cutlass"``. ``False``: plain composites, for
    ``MergeCompositeFunctions`` to group (path 2). Either way the backend's prepare step runs
    first (``prepare_for(["cutlass"], mod)``): constants folded for inference, scaled dot-product
    chains rewritten to ``R.nn.attention``, attention the kernel cannot run decomposed again."""
    mod = prepare_for(["cutlass"], mod)
    if annotate_codegen:
        return partition_for("cutlass", mod, False, bind_constants)
    return FuseOpsByPattern(get_patterns_with_prefix("cutlass"), bind_constants, annotate_codegen=False)(mod)
