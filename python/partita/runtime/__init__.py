"""Running compiled models (``tvm.runtime``): executables, loading, devices, tensors."""
from .._ffi import Executable, load_module
from .._ffi import Tensor, tensor, empty, from_dlpack, to_dlpack  # numpy/DLPack interop
from .._ffi import Device, device


def cpu(index=0):
    """The CPU device."""
    return Device("cpu", index)


def cuda(index=0):
    """CUDA GPU number ``index``. Creating the object needs no GPU; ``.exist`` says whether it
    is there, and using a missing one (a tensor, a VM) raises an error saying why."""
    return Device("cuda", index)


__all__ = ["Executable", "load_module", "Tensor", "tensor", "empty", "from_dlpack", "to_dlpack", "Device",
           "device", "cpu", "cuda"]
