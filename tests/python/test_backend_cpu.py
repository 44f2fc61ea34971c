"""The oneDNN and BLAS backends from Python: partition, build, run, compare with the host."""
import numpy as np
import pytest

import partita
from partita import relax
from partita.relax.backend.cpu import cblas, dnnl


def _run(mod, *inputs, target=None):
    return relax.VirtualMachine(relax.build(mod, target), partita.cpu())["main"](*inputs)


def _conv_block():
    rng = np.random.default_rng(0)
    x = relax.Var("x", relax.TensorStructInfo([1, 8, 12, 12], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            w1 = relax.const(rng.standard_normal((8, 8, 3, 3)).astype("float32") * 0.2)
            b1 = relax.const(rng.standard_normal((1, 8, 1, 1)).astype("float32"))
            c = bb.emit(relax.op.nn.conv2d(x, w1, padding=[1, 1]))
            r = bb.emit(relax.op.nn.relu(relax.op.add(c, b1)))
            w2 = relax.const(rng.standard_normal((8, 8, 3, 3)).astype("float32") * 0.2)
            c2 = bb.emit(relax.op.nn.conv2d(r, w2, padding=[1, 1]))
            s = bb.emit(relax.op.add(c2, x))
            p = bb.emit(relax.op.nn.max_pool2d(s, pool_size=[2, 2], strides=[2, 2]))
            out = bb.emit_output(relax.op.nn.softmax(relax.op.reshape(p, (1, -1))))
        bb.emit_func_output(out)
    return bb.get()


def _mlp():
    rng = np.random.default_rng(1)
    x = relax.Var("x", relax.TensorStructInfo([16, 64], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            h = x
            for _ in range(2):
                w = relax.const(rng.standard_normal((64, 64)).astype("float32") * 0.1)
                b = relax.const(rng.standard_normal((64,)).astype("float32"))
                h = bb.emit(relax.op.nn.relu(relax.op.add(relax.op.matmul(h, w), b)))
            out = bb.emit_output(h)
        bb.emit_func_output(out)
    return bb.get()


@pytest.mark.parametrize("merge", [True, False])
def test_dnnl_conv_block_matches_host(merge):
    mod = _conv_block()
    part = dnnl.partition_for_dnnl(mod, merge=merge)
    assert '"Codegen": "dnnl"' in part.script()
    xin = np.random.default_rng(2).standard_normal((1, 8, 12, 12)).astype("float32")
    np.testing.assert_allclose(_run(part, xin, target="dnnl"), _run(mod, xin), rtol=1e-4, atol=1e-5)


def test_cblas_mlp_matches_host():
    mod = _mlp()
    part = cblas.partition_for_cblas(mod)
    assert '"Codegen": "cblas"' in part.script()
    xin = np.random.default_rng(3).standard_normal((16, 64)).astype("float32")
    np.testing.assert_allclose(_run(part, xin, target="cblas"), _run(mod, xin), rtol=1e-4, atol=1e-4)


def test_dnnl_then_cblas_share_one_artifact(tmp_path):
    mod = cblas.partition_for_cblas(dnnl.partition_for_dnnl(_conv_block()))
    path = str(tmp_path / "m.partita")
    ex = relax.build(mod, [partita.target.Target("dnnl", {"num_threads": 2}), "cblas"])
    ex.export_library(path)
    assert "dnnl" in ex.external_module_kinds
    xin = np.ones((1, 8, 12, 12), "float32")
    vm = relax.VirtualMachine(partita.runtime.load_module(path))
    np.testing.assert_allclose(vm["main"](xin), _run(_conv_block(), xin), rtol=1e-4, atol=1e-5)


def test_cblas_before_dnnl_takes_the_gemms_and_profile_shows_both():
    mod = _mlp()
    part = dnnl.partition_for_dnnl(cblas.partition_for_cblas(mod))
    text = part.script()
    assert '"Codegen": "cblas"' in text and '"Codegen": "dnnl"' not in text  # relu fused in cblas
    vm = relax.VirtualMachine(relax.build(part, ["cblas", "dnnl"]), partita.cpu())
    xin = np.random.default_rng(4).standard_normal((16, 64)).astype("float32")
    np.testing.assert_allclose(vm["main"](xin), _run(mod, xin), rtol=1e-4, atol=1e-4)
    report = vm.profile("main", xin)
    assert [e.name for e in report.entries] and all(e.external for e in report.entries)
    assert all(e.name.endswith("_cblas") and e.calls == 1 for e in report.entries)
    assert sum(e.total_us for e in report.entries) <= report.wall_us
    assert "total" in report.table()
