"""Virtual devices from Python: relax.VDevice, I.vdevice / I.module_global_infos in decorated
modules, mod.global_infos, R.to_vdevice / R.hint_on_device through relax.op, and
relax.transform.RealizeVDevice."""
import numpy as np
import pytest

import partita
from partita import ir, relax, script
from partita.script import ir as I
from partita.script import relax as R


@I.ir_module
class TwoDevices:
    I.module_global_infos({"vdevice": [I.vdevice("llvm"), I.vdevice("cuda", 0)]})

    @R.function
    def main(x: R.Tensor((2, 3), "float32"), y: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 3), "float32"):
        with R.dataflow():
            a = R.hint_on_device(x, tvm.cpu())  # noqa: F821 (read by the C++ parser only)
            b = R.add(a, y)
            c = R.to_vdevice(b, "cuda")
            d = R.multiply(c, c)
            R.output(d)
        return d


def test_vdevice_object():
    v = relax.VDevice("cuda -arch=sm_80", 1, "global.texture")
    assert v.vdevice_id == 1
    assert v.memory_scope == "global.texture"
    assert v.target.kind == "cuda"
    assert v.target.keys == ["cuda", "gpu"]
    assert v.target.attrs["arch"] == "sm_80"
    assert v.target.attrs["max_num_threads"] == 1024
    assert v.target.device_type == 2
    d = relax.VDevice({"kind": "opencl", "device": "adreno", "host": {"kind": "llvm"}})
    assert d.target.keys == ["adreno", "opencl", "gpu"]
    assert d.target.host.kind == "llvm"
    assert ir.structural_equal(I.vdevice("cuda -arch=sm_80", 1, "global.texture"), v)
    assert not ir.structural_equal(relax.VDevice("cuda"), v)
    assert ir.VDevice is relax.VDevice
    with pytest.raises(ValueError, match="unknown target kind 'tpu'"):
        relax.VDevice("tpu")
    with pytest.raises(ValueError, match="must not be negative"):
        relax.VDevice("cuda", -1)
    with pytest.raises(ValueError, match="unknown option \"archh\""):
        relax.VDevice({"kind": "cuda", "archh": "sm_80"})
    with pytest.raises(TypeError, match="not float"):
        relax.VDevice({"kind": "cuda", "arch": 8.0})


def test_decorated_module_has_global_infos_and_devices():
    infos = TwoDevices.global_infos
    assert list(infos) == ["vdevice"]
    llvm, cuda = infos["vdevice"]
    assert (llvm.target.kind, cuda.target.kind) == ("llvm", "cuda")
    text = TwoDevices.script()
    assert 'I.module_global_infos({"vdevice": [I.vdevice({"keys": ["cpu"], "kind": "llvm", "tag": ""}, 0, "global")' in text
    assert 'R.hint_on_device(x, R.device(device_type=1, index=0), "global")' in text
    assert 'R.to_vdevice(b, dst_vdevice="cuda:0:global")' in text
    assert 'd: R.Tensor((2, 3), dtype="float32", vdevice="cuda:0:global")' in text
    ir.assert_structural_equal(script.from_source(text), TwoDevices)


def test_realize_vdevice():
    after = relax.transform.RealizeVDevice()(TwoDevices)
    main = after["main"]
    assert [p.struct_info.vdevice.target.kind for p in main.params] == ["llvm", "llvm"]
    assert main.ret_struct_info.vdevice.target.kind == "cuda"
    text = after.script()
    assert "R.hint_on_device" not in text
    assert 'a: R.Tensor((2, 3), dtype="float32", vdevice="llvm:0:global") = x' in text
    # The input module is left as it was.
    assert "R.hint_on_device" in TwoDevices.script()


def test_ops_from_python():
    llvm, cuda = relax.VDevice("llvm"), relax.VDevice("cuda")
    x = relax.Var("x", relax.TensorStructInfo((4,), "float32", vdevice=llvm))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        y = bb.emit(relax.op.to_vdevice(x, cuda))
        z = bb.emit(relax.op.hint_on_device(y, "cuda:0"))
        w = bb.emit(relax.op.hint_on_device(z, (1, 0), "global"))
        bb.emit_func_output(w)
    mod = bb.get()
    mod.update_global_info("vdevice", [llvm, cuda])
    main = mod["main"]
    seq = main.body.blocks[0].bindings
    assert seq[0].var.struct_info.vdevice.same_as(cuda)
    assert seq[0].value.attrs["dst_vdevice"].same_as(cuda)
    assert seq[1].value.attrs["device_type"] == 2
    assert seq[2].value.attrs["device_type"] == 1
    text = mod.script()
    assert 'R.to_vdevice(x, dst_vdevice="cuda:0:global")' in text
    ir.assert_structural_equal(script.from_source(text), mod)
    with pytest.raises(TypeError, match="operands are on different devices"):
        bb.normalize(relax.op.add(x, y))
    with pytest.raises(TypeError, match="cannot read a device"):
        relax.op.hint_on_device(x, 3.5)
    with pytest.raises(ValueError, match="unknown device 'tpu'"):
        relax.op.hint_on_device(x, "tpu:0")
    cpu_hint = relax.op.hint_on_device(x, partita.runtime.cpu(0), "global")
    assert (cpu_hint.attrs["device_type"], cpu_hint.attrs["index"]) == (1, 0)


def test_host_run_of_a_copy_between_cpu_devices():
    @I.ir_module
    class Cpu:
        I.module_global_infos({"vdevice": [I.vdevice("llvm"), I.vdevice("llvm", 1)]})

        @R.function
        def main(x: R.Tensor((3,), "float32", "llvm")) -> R.Tensor((3,), "float32"):
            a = R.exp(x)
            b = R.hint_on_device(a, R.cpu(1))
            c = R.add(b, b)
            return c

    mod = relax.transform.RealizeVDevice()(Cpu)
    assert 'R.to_vdevice(a, dst_vdevice="llvm:1:global")' in mod.script()
    vm = relax.VirtualMachine(relax.build(mod))
    x = np.array([0.0, 1.0, 2.0], dtype="float32")
    np.testing.assert_allclose(np.asarray(vm["main"](x)), 2 * np.exp(x), rtol=1e-6)


def test_place_device_copies_from_python():
    from partita.relax.backend.cpu.ccompiler import partition_for_ccompiler

    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo((8,), "float32"))
    y = relax.Var("y", relax.TensorStructInfo((8,), "float32"))
    with bb.function("main", [x, y]):
        with bb.dataflow():
            m = bb.emit(relax.op.multiply(x, y))
            r = bb.emit(relax.op.exp(m))
            gv = bb.emit_output(relax.op.multiply(r, x))
        bb.emit_func_output(gv)
    parted = partition_for_ccompiler(bb.get())
    placed = relax.transform.PlaceDeviceCopies({"ccompiler": relax.VDevice("llvm", 1)})(parted)
    text = placed.script()
    # In: x and y once each (x's copy serves both partitions); out: the partition results.
    assert text.count('R.to_vdevice(x, dst_vdevice="llvm:1:global")') == 1
    assert text.count('dst_vdevice="llvm:0:global")') == 2
    ir.assert_structural_equal(script.from_source(text), placed)
    xv = np.linspace(-1, 1, 8, dtype="float32")
    yv = np.linspace(0, 2, 8, dtype="float32")
    out = relax.VirtualMachine(relax.build(placed))["main"](xv, yv)
    np.testing.assert_allclose(np.asarray(out), np.exp(xv * yv) * xv, rtol=1e-5)
