"""Tensors across the Python boundary: numpy and DLPack share memory where they can (C-contiguous,
writable, element-aligned), copy where they cannot, and VM outputs stay valid while held."""
import gc

import numpy as np
import pytest

import partita
from partita import relax
from partita import runtime as rt


def _vm(build_body, shape=(4, 8), dtype="float32"):
    x = relax.Var("x", relax.TensorStructInfo(list(shape), dtype))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            out = bb.emit_output(build_body(x))
        bb.emit_func_output(out)
    return relax.VirtualMachine(relax.build(bb.get()), partita.cpu())["main"]


def _same_shape_view(x):
    # reshape to the same shape: the VM returns a view of its input's buffer
    return relax.op.reshape(x, (4, 8))


def test_numpy_input_reaches_the_vm_without_copy():
    f = _vm(_same_shape_view)
    x = np.arange(32, dtype="float32").reshape(4, 8)
    out = f(x)
    assert np.shares_memory(out, x)
    np.testing.assert_array_equal(out, x)
    # the output keeps the input's memory alive after the input name is gone
    del x
    gc.collect()
    np.testing.assert_array_equal(out, np.arange(32, dtype="float32").reshape(4, 8))


def test_non_contiguous_read_only_and_misaligned_inputs_are_copied():
    f = _vm(_same_shape_view)
    base = np.arange(32, dtype="float32").reshape(8, 4)
    t = base.T  # Fortran order
    out = f(t)
    assert not np.shares_memory(out, base)
    np.testing.assert_array_equal(out, t)

    ro = np.arange(32, dtype="float32").reshape(4, 8)
    ro.flags.writeable = False
    out = f(ro)
    assert not np.shares_memory(out, ro)
    np.testing.assert_array_equal(out, ro)

    raw = bytearray(32 * 4 + 1)
    mis = np.frombuffer(raw, dtype="float32", offset=1, count=32).reshape(4, 8)
    mis[:] = np.arange(32, dtype="float32").reshape(4, 8)
    assert mis.ctypes.data % 4 != 0 and mis.flags.writeable
    out = f(mis)
    assert not np.shares_memory(out, mis)
    np.testing.assert_array_equal(out, mis)


def test_vm_outputs_held_across_calls_keep_their_values():
    f = _vm(lambda x: relax.op.add(relax.op.multiply(x, x), x))
    held = []
    for i in range(6):
        x = np.full((4, 8), float(i), dtype="float32")
        held.append((i, f(x)))
    for i, out in held:
        np.testing.assert_array_equal(out, np.full((4, 8), float(i * i + i), dtype="float32"))
    ptrs = {out.data_ptr for _, out in held}
    assert len(ptrs) == len(held)
    # once released, the VM reuses its buffers again (the pool is not simply switched off)
    del held
    gc.collect()
    first = f(np.ones((4, 8), dtype="float32"))
    del first
    gc.collect()
    for _ in range(3):
        np.testing.assert_array_equal(f(np.ones((4, 8), dtype="float32")), np.full((4, 8), 2.0, "float32"))


def test_vm_reuses_intermediate_buffers_but_not_held_outputs():
    x = relax.Var("x", relax.TensorStructInfo([64], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            a = bb.emit(relax.op.add(x, x))
            b = bb.emit(relax.op.multiply(a, a))
            out = bb.emit_output(relax.op.subtract(b, x))
        bb.emit_func_output(out)
    vm = relax.VirtualMachine(relax.build(bb.get()), partita.cpu())
    outs = [vm["main"](np.full(64, float(i), "float32")) for i in range(8)]
    assert vm.memory_stats()["reuses"] > 0
    for i, o in enumerate(outs):
        np.testing.assert_array_equal(o, np.full(64, 4.0 * i * i - i, "float32"))


def test_numpy_from_dlpack_shares_runtime_tensor_memory():
    a = np.arange(12, dtype="int32").reshape(3, 4)
    t = rt.tensor(a)
    assert t.shape == (3, 4) and t.dtype == "int32"
    assert t.__dlpack_device__() == (1, 0)
    b = np.from_dlpack(t)  # numpy 1.24 marks DLPack imports read-only
    assert np.shares_memory(a, b)
    view = t.numpy()
    assert np.shares_memory(view, a) and view.flags.writeable
    view[0, 0] = 42
    assert a[0, 0] == 42 and b[0, 0] == 42
    del a, t
    gc.collect()
    assert b[0, 0] == 42 and b[2, 3] == 11


def test_from_dlpack_and_to_dlpack():
    a = np.linspace(0, 1, 10, dtype="float64")
    t = rt.from_dlpack(a)
    assert t.data_ptr == a.ctypes.data
    cap = rt.to_dlpack(t)
    back = rt.from_dlpack(cap)
    assert back.same_buffer(back) and back.data_ptr == a.ctypes.data
    with pytest.raises(ValueError, match="consumed once"):
        rt.from_dlpack(cap)
    # an unconsumed capsule frees its tensor when collected
    rt.to_dlpack(t)
    gc.collect()

    strided = np.arange(20, dtype="float32")[::2]
    with pytest.raises(ValueError, match="strides"):
        rt.from_dlpack(strided, copy=False)
    c = rt.from_dlpack(strided)
    assert c.data_ptr != strided.ctypes.data
    np.testing.assert_array_equal(c.numpy(), strided)
    forced = rt.from_dlpack(a, copy=True)
    assert forced.data_ptr != a.ctypes.data
    np.testing.assert_array_equal(forced.numpy(), a)
    with pytest.raises(TypeError):
        rt.from_dlpack([1, 2, 3])


def test_tensor_accepted_by_the_vm_and_dtypes():
    f = _vm(_same_shape_view)
    x = np.arange(32, dtype="float32").reshape(4, 8)
    out = f(rt.tensor(x))
    assert np.shares_memory(out, x)
    flags = np.array([True, False, True])
    tb = rt.tensor(flags)
    assert tb.dtype == "bool"
    assert tb.numpy().dtype == np.bool_ and np.shares_memory(tb.numpy(), flags)
    f16 = np.arange(4, dtype="float16")
    assert np.shares_memory(np.from_dlpack(rt.tensor(f16)), f16)
    np.testing.assert_array_equal(np.asarray(rt.tensor(f16)), f16)


def test_constants_own_their_bytes():
    a = np.arange(6, dtype="float32")
    c = relax.const(a)
    a[0] = 100.0
    assert c.data[0] == 0.0
    assert not c.data.flags.writeable
    with pytest.raises(ValueError):
        c.data[1] = 5.0
