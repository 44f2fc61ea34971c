"""The VM's checks of its inputs from Python: a wrong count, dtype, rank or dimension, a symbolic
dimension contradicting another, objects that are not tensors, numpy arrays that cannot be shared
(strided, misaligned, read-only, the other byte order: copied, and read right) and a tensor on a
device the process cannot reach. Each error names the function, the parameter and what was
expected; after one, the VM still computes the right answer."""
import ctypes

import numpy as np
import pytest

import partita
from partita import relax
from partita import runtime as rt
from partita.script import from_source

_ADD = '''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 4), dtype="float32"), y: R.Tensor(("n", 4), dtype="float32")) -> R.Tensor(("n", 4), dtype="float32"):
        n = T.int64()
        with R.dataflow():
            z: R.Tensor((n, 4), dtype="float32") = R.add(x, y)
            R.output(z)
        return z
'''


@pytest.fixture(scope="module")
def vm():
    return relax.VirtualMachine(relax.build(from_source(_ADD)))


def _x(n=3):
    return np.arange(n * 4, dtype="float32").reshape(n, 4)


def _check_still_adds(vm):
    np.testing.assert_array_equal(vm["main"](_x(), _x()), 2 * _x())


def test_wrong_number_of_inputs(vm):
    with pytest.raises(TypeError, match=r"^function 'main' takes 2 arguments \(x, y\), but 1 was given$"):
        vm["main"](_x())
    with pytest.raises(TypeError, match=r"takes 2 arguments \(x, y\), but 3 were given"):
        vm["main"](_x(), _x(), _x())
    _check_still_adds(vm)


def test_wrong_dtype_rank_and_dimension(vm):
    with pytest.raises(TypeError, match=r"^argument 'y' of function 'main' must have dtype float32, but has float64$"):
        vm["main"](_x(), _x().astype("float64"))
    with pytest.raises(ValueError, match=r"argument 'x' of function 'main' must have 2 dimensions, but has 1 \(shape \(12,\)\)"):
        vm["main"](_x().reshape(-1), _x())
    with pytest.raises(ValueError, match=r"argument 'y' of function 'main': dimension 1 must be 4, but is 3"):
        vm["main"](_x(), np.zeros((3, 3), "float32"))
    _check_still_adds(vm)


def test_symbolic_dimension_contradicting_another(vm):
    with pytest.raises(ValueError, match=r"argument 'y' of function 'main': dimension 0 must be 3 \(the same symbolic "
                                         r"variable as dimension 0 of argument 'x'\), but is 2"):
        vm["main"](_x(3), _x(2))
    np.testing.assert_array_equal(vm["main"](_x(5), _x(5)), 2 * _x(5))


@pytest.mark.parametrize("arg,got", [("hello", "str"), (None, "NoneType"), ({"a": 1}, "dict"),
                                     (np.zeros((3, 4), "complex64"), "ndarray of dtype complex64"),
                                     (np.array([[object()] * 4] * 3), "ndarray of dtype object")])
def test_objects_that_are_not_tensors(vm, arg, got):
    with pytest.raises(TypeError, match=rf"^argument 'y' of function 'main': expected a tensor .*, got {got}$"):
        vm["main"](_x(), arg)
    _check_still_adds(vm)


def test_a_tuple_where_a_tensor_is_expected(vm):
    with pytest.raises(TypeError, match=r"argument 'y' of function 'main' must be a tensor, but got a tuple"):
        vm["main"](_x(), [_x()])


def _misaligned(a):
    """`a`'s values in a buffer that starts one byte past an aligned address."""
    raw = np.zeros(a.nbytes + 64, np.uint8)
    start = (-raw.ctypes.data) % 64 + 1
    m = raw[start:start + a.nbytes].view(a.dtype).reshape(a.shape)
    m[...] = a
    assert m.ctypes.data % a.dtype.itemsize != 0
    return m


def test_arrays_that_cannot_be_shared_are_copied_and_read_right(vm):
    x = _x()
    strided = np.arange(24, dtype="float32").reshape(3, 8)[:, ::2]  # a view with a stride of 2
    transposed = np.ascontiguousarray(x.T).T                        # Fortran order
    reversed_rows = x[::-1]                                         # a negative stride
    read_only = np.broadcast_to(np.arange(4, dtype="float32"), (3, 4))  # zero strides, read-only
    other_order = x.astype(x.dtype.newbyteorder("S"))               # the other byte order
    for arr in (strided, transposed, reversed_rows, read_only, _misaligned(x), other_order):
        expected = np.asarray(arr, dtype="float32") + x
        np.testing.assert_array_equal(vm["main"](arr, x), expected)
        np.testing.assert_array_equal(vm["main"](x, arr), expected)
    # Sharable arrays are shared, not copied: the result reflects the array's bytes as given.
    assert np.array_equal(vm["main"](x, np.zeros_like(x)), x)


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLManagedTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64),
                ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


def test_a_tensor_on_a_device_the_process_cannot_reach(vm):
    if partita.cuda(1).exist:
        pytest.skip("cuda:1 exists here: the test needs a device the process cannot reach")
    # A kDLCUDA capsule for cuda:1, made by hand over host memory (it must never be read).
    storage = np.zeros(12, "float32")
    shape = (ctypes.c_int64 * 2)(3, 4)
    m = _DLManagedTensor(storage.ctypes.data, _DLDevice(2, 1), 2, _DLDataType(2, 32, 1), shape, None, 0,
                         None, None)
    new_capsule = ctypes.pythonapi.PyCapsule_New
    new_capsule.restype = ctypes.py_object
    new_capsule.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    t = rt.from_dlpack(new_capsule(ctypes.addressof(m), b"dltensor", None))
    assert t.device == partita.cuda(1)
    with pytest.raises(ValueError, match=r"(?s)^argument 'y' of function 'main' is on cuda:1, which this process cannot "
                                         r"reach \(.*\): expected a tensor on the host"):
        vm["main"](_x(), t)
    _check_still_adds(vm)
