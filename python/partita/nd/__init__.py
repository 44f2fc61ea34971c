"""``tvm.nd`` of TVM releases before 0.21: the runtime tensor under its older names.

``partita.nd.array(np_array, dev)`` is ``partita.runtime.tensor``; ``partita.nd.NDArray`` is
``partita.runtime.Tensor``.
"""
from ..runtime.tensor import Tensor, tensor as array, empty, from_dlpack
from ..runtime import cpu, cuda, device

NDArray = Tensor

__all__ = ["NDArray", "Tensor", "array", "empty", "from_dlpack", "cpu", "cuda", "device"]
