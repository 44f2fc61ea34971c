"""Running compiled models (``tvm.runtime``): executables, loading, devices."""
from .._ffi import Executable, load_module
from .._ffi import Tensor, tensor, from_dlpack, to_dlpack  # numpy/DLPack interop


class Device:
    """Where tensors live. Partita's runtime runs on the CPU; the object exists so code written
    for TVM (``relax.VirtualMachine(ex, tvm.cpu())``) reads the same."""

    def __init__(self, kind="cpu", index=0):
        if kind != "cpu":
            raise ValueError(f"unsupported device '{kind}': the runtime runs on the CPU")
        self.kind, self.index = kind, index

    def __repr__(self):
        return f"{self.kind}({self.index})"


def cpu(index=0):
    """The CPU device."""
    return Device("cpu", index)


__all__ = ["Executable", "load_module", "Tensor", "tensor", "from_dlpack", "to_dlpack", "Device", "cpu"]
