"""Devices in Python: partita.cpu() / partita.cuda(n), tensors on a device, the VM's device
argument, and the errors a CUDA device gives without a GPU. The GPU tests (CUDA tensors, the VM
on the GPU, zero-copy DLPack with PyTorch and CuPy) skip with the reason where there is none."""
import ctypes

import numpy as np
import pytest

import partita
from partita import relax
from partita import runtime as rt


def _build_add():
    x = relax.Var("x", relax.TensorStructInfo([2, 3], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            out = bb.emit_output(relax.op.add(x, x))
        bb.emit_func_output(out)
    return relax.build(bb.get())


def _gpu_or_skip():
    if not partita.cuda(0).exist:
        try:
            rt.empty((1,), "float32", partita.cuda(0))
        except partita.PartitaError as e:
            pytest.skip(str(e) if "no CUDA device" in str(e) else f"no CUDA device: {e}")
        pytest.skip("no CUDA device")
    return partita.cuda(0)


def test_device_objects():
    cpu, gpu = partita.cpu(), partita.cuda(1)
    assert (cpu.kind, cpu.index, cpu.device_type, cpu.device_id) == ("cpu", 0, 1, 0)
    assert (gpu.kind, gpu.index, gpu.device_type, gpu.device_id) == ("cuda", 1, 2, 1)
    assert repr(gpu) == "cuda(1)" and str(gpu) == "cuda:1"
    assert gpu == rt.device("cuda:1") == rt.Device("cuda", 1) == rt.device((2, 1))
    assert gpu != partita.cuda(0) and gpu != "cuda:1"
    assert len({partita.cuda(0), partita.cuda(0), cpu}) == 2
    assert gpu.__dlpack_device__() == (2, 1)
    assert cpu.exist
    with pytest.raises(ValueError, match="unknown kind 'gpu'"):
        rt.device("gpu:0")
    with pytest.raises(ValueError, match="unknown DLPack device type"):
        rt.Device(5)
    with pytest.raises(TypeError, match="expected a device"):
        rt.tensor(np.zeros(2, "float32"), 3.5)


def test_tensors_on_the_cpu_keep_sharing_numpy_memory():
    a = np.arange(6, dtype="float32").reshape(2, 3)
    t = rt.tensor(a, partita.cpu())
    assert t.device == partita.cpu()
    assert np.shares_memory(t.numpy(), a)
    assert t.to(partita.cpu()).same_buffer(t)
    e = rt.empty((4, 2), "int32")
    assert e.device == partita.cpu() and e.shape == (4, 2) and e.dtype == "int32"
    e2 = rt.empty((6,), "float32")
    e2.copy_from(a)
    np.testing.assert_array_equal(e2.numpy(), a.reshape(-1))
    with pytest.raises(ValueError, match="6 elements"):
        rt.empty((7,), "float32").copy_from(a)
    # the DLPack producer protocol's keywords (numpy >= 2 passes them)
    cap = t.__dlpack__(stream=None, max_version=(1, 0), dl_device=(1, 0), copy=False)
    assert rt.from_dlpack(cap).data_ptr == t.data_ptr


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLManagedTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64),
                ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


def test_cuda_dlpack_capsules_are_shared_without_a_gpu():
    # A producer's kDLCUDA capsule (built by hand: no GPU here) is held, not read: the tensor
    # keeps the device and the pointer.
    storage = np.zeros(6, "float32")
    shape = (ctypes.c_int64 * 2)(2, 3)
    m = _DLManagedTensor(storage.ctypes.data, _DLDevice(2, 1), 2, _DLDataType(2, 32, 1), shape, None, 0,
                         None, None)
    new_capsule = ctypes.pythonapi.PyCapsule_New
    new_capsule.restype = ctypes.py_object
    new_capsule.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    t = rt.from_dlpack(new_capsule(ctypes.addressof(m), b"dltensor", None))
    assert t.device == partita.cuda(1) and t.data_ptr == storage.ctypes.data
    assert t.__dlpack_device__() == (2, 1) and "device=cuda:1" in repr(t)
    assert t.shape == (2, 3)


def test_vm_takes_a_device_and_cpu_is_unchanged():
    ex = _build_add()
    for dev in (None, partita.cpu(), "cpu", [partita.cpu()]):
        vm = relax.VirtualMachine(ex, dev) if dev is not None else relax.VirtualMachine(ex)
        assert vm.device == partita.cpu()
        out = vm["main"](np.ones((2, 3), "float32"))
        assert isinstance(out, partita.runtime.Tensor) and out.device == partita.cpu()
        np.testing.assert_array_equal(out, np.full((2, 3), 2, "float32"))
        assert vm.memory_stats()["device_copies"] == 0
        assert vm.graph_stats() == {"captures": 0, "launches": 0, "fallbacks": 0}
    vm.set_graph_capture(False)


def test_cuda_without_a_gpu_is_a_clear_error():
    if partita.cuda(0).exist:
        pytest.skip("a CUDA device is present: the GPU tests cover it")
    with pytest.raises(partita.PartitaError, match="RuntimeError: .*(no CUDA device|libpartita_runtime_cuda.so)"):
        rt.tensor(np.zeros(3, "float32"), partita.cuda(0))
    with pytest.raises(partita.PartitaError, match="cuda:0"):
        relax.VirtualMachine(_build_add(), partita.cuda(0))
    with pytest.raises(partita.PartitaError, match="cuda:0"):
        partita.cuda(0).memory_stats()


def test_cuda_tensors_and_the_vm_on_the_gpu():
    gpu = _gpu_or_skip()
    a = np.arange(6, dtype="float32").reshape(2, 3)
    t = rt.tensor(a, gpu)
    assert t.device == gpu and "device=cuda:0" in repr(t)
    assert t.__dlpack_device__() == (2, 0)
    back = t.numpy()  # a host copy
    assert not np.shares_memory(back, a)
    np.testing.assert_array_equal(back, a)
    np.testing.assert_array_equal(np.asarray(t), a)
    np.testing.assert_array_equal(t.to(partita.cpu()).numpy(), a)
    stats = gpu.memory_stats()
    assert stats["alloc_calls"] >= 1 and stats["bytes_in_use"] > 0

    vm = relax.VirtualMachine(_build_add(), gpu)
    assert vm.device == gpu
    out = vm["main"](t)
    assert isinstance(out, rt.Tensor) and out.device == gpu  # the user's device
    np.testing.assert_array_equal(out.numpy(), 2 * a)
    out = vm["main"](a)  # host input, result still on the GPU
    assert out.device == gpu
    assert vm.memory_stats()["device_copies"] == 3
    assert vm.graph_stats()["captures"] == 0  # host kernels: nothing to capture
    with pytest.raises(partita.PartitaError, match="no CUDA device: cuda:99"):
        rt.tensor(a, partita.cuda(99))


def test_pytorch_shares_cuda_memory_both_ways():
    gpu = _gpu_or_skip()
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    x = torch.arange(6, dtype=torch.float32, device="cuda").reshape(2, 3)
    t = rt.from_dlpack(x)
    assert t.device == gpu and t.data_ptr == x.data_ptr()  # zero-copy
    vm = relax.VirtualMachine(_build_add(), gpu)
    out = vm["main"](x)  # torch tensors are accepted directly
    y = torch.from_dlpack(out)
    assert y.device.type == "cuda" and y.data_ptr() == out.data_ptr
    torch.testing.assert_close(y, 2 * x)
    # Stream protocol, torch producing: our default stream waits for torch's side stream.
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        big = torch.ones(1 << 26, device="cuda")
        for _ in range(20):
            big.mul_(2)  # long work queued on `side`
        shared = rt.from_dlpack(big)  # torch makes the stream we pass wait for `side`
    assert shared.numpy()[-1] == 2.0 ** 20  # read on our default stream
    # ... and we producing: the VM runs on a stream of its own; torch's side stream waits.
    s = gpu.create_stream()
    vm.set_stream(s)
    src = torch.full((1 << 24,), 1.5, device="cuda")
    torch.cuda.synchronize()
    with torch.cuda.stream(side):
        for _ in range(5):
            out = vm["main"](src.reshape(1 << 24)[:6].reshape(2, 3))
            y = torch.from_dlpack(out) + 0
    side.synchronize()
    torch.testing.assert_close(y, torch.full((2, 3), 3.0, device="cuda"))
    gpu.free_stream(s)


def test_cupy_shares_cuda_memory_both_ways():
    gpu = _gpu_or_skip()
    cp = pytest.importorskip("cupy", reason="CuPy is not installed")
    x = cp.arange(6, dtype=cp.float32).reshape(2, 3)
    t = rt.from_dlpack(x)
    assert t.device == gpu and t.data_ptr == x.data.ptr
    y = cp.from_dlpack(t)
    assert y.data.ptr == x.data.ptr
    out = relax.VirtualMachine(_build_add(), gpu)["main"](x)
    np.testing.assert_array_equal(cp.asnumpy(cp.from_dlpack(out)), 2 * cp.asnumpy(x))
