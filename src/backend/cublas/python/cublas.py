"""The cuBLAS backend's pattern table (``cublas.*``, TVM v0.26's names and checks): matmul, with
the right-hand side transposed, batched, with a bias and a relu / gelu epilogue, or scaled by
two one-element tensors, run by cuBLASLt on the GPU (``relax.build(mod, target="cuda")``)."""
from .._partition import partition_for


def partition_for_cublas(mod, bind_constants=False):
    """TVM's ``partition_for_cublas``: one ``"Codegen": "cublas"`` function per match
    (FuseOpsByPattern with annotate_codegen=True); constants become parameters unless
    ``bind_constants``."""
    return partition_for("cublas", mod, False, bind_constants)
