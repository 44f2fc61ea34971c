"""The seed tutorial's ``cutlass`` pattern table."""
from .._partition import partition_for


def partition_for_cutlass(mod, merge=True, bind_constants=True):
    """Partitions ``mod`` with the registered ``cutlass.*`` patterns."""
    return partition_for("cutlass", mod, merge, bind_constants)
