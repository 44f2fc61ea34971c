"""Running compiled models (``tvm.runtime``): executables, loading, devices, tensors."""
from .._ffi import Executable, load_module
from .._ffi import to_dlpack  # numpy/DLPack interop
from .._ffi import Device
from .. import _ffi
from .tensor import Tensor, DataType, tensor, empty, from_dlpack
from .module import BenchmarkResult


def device(dev_type, dev_id=0):
    """A Device, as TVM's ``tvm.device``: ``device("cuda", 0)``, ``device("cuda:1")``, a DLPack
    device type number, a ``(device_type, device_id)`` pair or a Device."""
    if isinstance(dev_type, (Device, tuple)) or dev_type is None:
        return _ffi.device(dev_type)
    return Device(dev_type, dev_id)


def cpu(index=0):
    """The CPU device."""
    return Device("cpu", index)


def cuda(index=0):
    """CUDA GPU number ``index``. Creating the object needs no GPU; ``.exist`` says whether it
    is there, and using a missing one (a tensor, a VM) raises an error saying why."""
    return Device("cuda", index)


__all__ = ["Executable", "load_module", "Tensor", "DataType", "tensor", "empty", "from_dlpack",
           "to_dlpack", "Device", "device", "cpu", "cuda", "BenchmarkResult"]
