"""The cuda target from Python: partition_for_cuda groups by fusion kind, relax.build(mod,
"cuda") compiles everything into one "cuda" module, and the model runs on a GPU (against the
host VM) or, without one, says that it needs one."""
import numpy as np
import pytest

import partita
from partita import relax
from partita import _ffi

pytestmark = pytest.mark.skipif("cuda" not in _ffi.list_target_kinds(),
                                reason="the cuda target is not built (no CUDA toolkit)")


def _model():
    rng = np.random.default_rng(0)
    x = relax.Var("x", relax.TensorStructInfo([8, 32], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            w = relax.const(rng.standard_normal((32, 16)).astype("float32") * 0.2)
            b = relax.const(rng.standard_normal((16,)).astype("float32"))
            h = bb.emit(relax.op.nn.relu(relax.op.add(relax.op.matmul(x, w), b)))
            out = bb.emit_output(relax.op.nn.softmax(h, axis=-1))
        bb.emit_func_output(out)
    return bb.get()


def test_partition_for_cuda_groups_by_kind():
    from partita.relax.backend.cuda.cuda import partition_for_cuda
    text = partition_for_cuda(_model()).script()
    assert text.count('"Codegen": "cuda"') == 2, text  # matmul + bias + relu; softmax
    main = text[text.index("def main("):]
    assert "R.matmul" not in main and "R.nn.softmax" not in main


def test_build_for_cuda_runs_or_needs_a_device():
    mod = _model()
    ex = relax.build(mod, "cuda")
    assert ex.external_module_kinds == ["cuda"]
    x = np.random.default_rng(1).standard_normal((8, 32)).astype("float32")
    try:
        vm = relax.VirtualMachine(ex, partita.cuda())
        out = vm["main"](x).numpy()
    except Exception as e:  # noqa: BLE001 - the error a machine without a GPU must give
        assert "no CUDA device" in str(e), str(e)
        pytest.skip("no CUDA device: " + str(e))
    ref = relax.VirtualMachine(relax.build(mod), partita.cpu())["main"](x)
    np.testing.assert_allclose(np.asarray(out), np.asarray(ref), rtol=1e-5, atol=1e-6)
