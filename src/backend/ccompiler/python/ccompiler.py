"""The demo C-source backend's pattern table (``ccompiler.*``)."""
from .._partition import partition_for


def partition_for_ccompiler(mod, merge=True, bind_constants=True):
    """Partitions ``mod`` with the registered ``ccompiler.*`` patterns."""
    return partition_for("ccompiler", mod, merge, bind_constants)
