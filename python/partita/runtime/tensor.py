"""TVM's ``tvm.runtime.Tensor`` API on the native tensor (``partita._ffi.Tensor``).

The native class holds the buffer and its device, shares memory with numpy and DLPack, and
copies between devices. What TVM code expects on top of that is added here: ``copyto`` /
``copyfrom`` / ``t[:] = value`` (always copies, as TVM's), printing as TVM prints a tensor, and a
``dtype`` that is a string ("float32", as TVM's) which also compares equal to numpy's spelling
of the same type (``t.dtype == np.float32``), so numpy-minded code keeps working.
"""
import numpy as np

from .. import _ffi

Tensor = _ffi.Tensor


class DataType(str):
    """A dtype string ("float32") that also equals numpy's names and types for it."""

    __slots__ = ()

    def __eq__(self, other):
        if isinstance(other, str):
            return str.__eq__(self, other)
        try:
            return np.dtype(str(self)) == np.dtype(other)
        except TypeError:
            return NotImplemented

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    __hash__ = str.__hash__


_native_dtype = Tensor.dtype


def _dtype(self):
    return DataType(_native_dtype.fget(self))


def copyto(self, target, mem_scope=None):
    """Copies this tensor into ``target`` (a Tensor of the same shape and dtype, returned) or
    onto a new tensor on device ``target``."""
    del mem_scope
    if isinstance(target, Tensor):
        target.copy_from(self)
        return target
    if isinstance(target, _ffi.Device) or isinstance(target, (str, tuple)):
        out = _ffi.empty(list(self.shape), str(self.dtype), target)
        out.copy_from(self)
        return out
    raise ValueError(f"copyto: unsupported target type {type(target).__name__}")


def copyfrom(self, source_array):
    """Overwrites this tensor with ``source_array`` (a Tensor, a numpy array or anything numpy
    reads) of the same shape; returns ``self``."""
    if isinstance(source_array, Tensor):
        self.copy_from(source_array)
        return self
    try:
        source = np.asarray(source_array, dtype=str(self.dtype))
    except (TypeError, ValueError) as err:
        raise TypeError(f"copyfrom: cannot read a {type(source_array).__name__} as "
                        f"{self.dtype} array data") from err
    if source.shape != tuple(self.shape):
        raise ValueError(f"copyfrom: array shape {source.shape} does not match the tensor's "
                         f"shape {tuple(self.shape)}")
    self.copy_from(np.ascontiguousarray(source))
    return self


def _setitem(self, in_slice, value):
    if not isinstance(in_slice, slice) or in_slice.start is not None or in_slice.stop is not None:
        raise ValueError("a Tensor is only assigned whole: t[:] = value")
    if isinstance(value, Tensor):
        if not value.same_buffer(self):
            self.copy_from(value)
    elif isinstance(value, (np.ndarray, np.generic)):
        self.copyfrom(value)
    else:
        raise TypeError(f"t[:] = value: unsupported value type {type(value).__name__}")


def _same_as(self, other):
    return (isinstance(other, Tensor) and self.same_buffer(other) and self.shape == other.shape
            and self.dtype == other.dtype)


_native_repr = Tensor.__repr__


def _repr(self):
    # Values only for host tensors: printing must not need the device (or copy from it).
    head = _native_repr(self)
    return head + "\n" + repr(self.numpy()) if self.device.kind == "cpu" else head


def _getitem(self, key):
    """Indexing reads through numpy (``t[0, 1]``, ``t[:, 2]``): a Partita convenience that TVM's
    Tensor lacks, so code written against numpy results keeps working."""
    return self.numpy()[key]


def _str(self):
    return str(self.numpy())


Tensor.dtype = property(_dtype, doc="The element type, a string such as 'float32'.")
Tensor.copyto = copyto
Tensor.copyfrom = copyfrom
Tensor.__setitem__ = _setitem
Tensor.same_as = _same_as
Tensor.__repr__ = _repr
Tensor.__str__ = _str
Tensor.__getitem__ = _getitem


def tensor(arr, device=None, mem_scope=None):
    """A tensor holding a copy of ``arr`` on ``device`` (the CPU by default), as TVM's
    ``tvm.runtime.tensor``. A host tensor may share a numpy array's memory when that is
    C-contiguous and aligned (it is never shared when ``arr`` is a Tensor on another device)."""
    del mem_scope
    if isinstance(arr, Tensor):
        return arr.copyto(device if device is not None else arr.device)
    if not isinstance(arr, np.ndarray):
        arr = np.asarray(arr)
    return _ffi.tensor(arr, device)


def empty(shape, dtype="float32", device=None, mem_scope=None):
    """An uninitialised tensor of ``shape`` and ``dtype`` on ``device`` (the CPU by default)."""
    del mem_scope
    return _ffi.empty([int(d) for d in shape], str(np.dtype(dtype)) if not isinstance(dtype, str) else dtype,
                      device)


def from_dlpack(ext_tensor, copy=None):
    """A Tensor sharing the memory of a DLPack producer (torch, CuPy, numpy) or capsule;
    ``copy=False`` raises instead of copying, ``copy=True`` always copies."""
    return _ffi.from_dlpack(ext_tensor, copy)
