"""The example backend (``example.*``, docs/adding-a-backend.md): ``relax.add`` of two float32
tensors of one static shape, run by a plain C++ loop."""
from .._partition import partition_for


def partition_for_example(mod, merge=True, bind_constants=True):
    """Offloads what the registered ``example.*`` patterns match."""
    return partition_for("example", mod, merge, bind_constants)
