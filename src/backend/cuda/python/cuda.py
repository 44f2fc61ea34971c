"""The cuda target's default code generator (``partita.relax.backend.cuda.cuda``): everything no
BYOC backend took, grouped by fusion kind for generated CUDA kernels. ``relax.build(mod,
target="cuda")`` does this itself; call it to see (or edit) the grouping first."""
from ...transform import FuseOpsByKind


def partition_for_cuda(mod):
    """Groups the operator calls the cuda codegen compiles into ``"Codegen": "cuda"``
    functions (``relax.transform.FuseOpsByKind("cuda")``)."""
    return FuseOpsByKind("cuda")(mod)
