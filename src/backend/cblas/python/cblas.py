"""The BLAS backend's pattern table (``cblas.*``): matmul / dense (2-d, and batched 3-d by
2-d or 3-d) with an optional bias add, run by OpenBLAS's ``cblas_sgemm``."""
from .._partition import partition_for


def partition_for_cblas(mod, merge=True, bind_constants=True):
    """Offloads what the registered ``cblas.*`` patterns match."""
    return partition_for("cblas", mod, merge, bind_constants)
