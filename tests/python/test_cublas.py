"""The cuBLAS backend from Python: TVM's ``partition_for_cublas(mod, bind_constants=False)`` at
``partita.relax.backend.cuda.cublas``, equal to TVM's definition (FuseOpsByPattern of the
``cublas`` patterns with annotate_codegen); the seed tutorial's module (and the seed with a
product, which cuBLAS takes) partitioned with it builds for cuda, exports, and reloads and runs
in a fresh process (on the GPU; without one, loading works and running says it needs one).
With PARTITA_CUBLAS_ARTIFACT_DIR set, the artifacts, inputs and expected outputs are written
there for ``partita run -d cuda`` on the GPU machine."""
import inspect
import os
import subprocess
import sys

import numpy as np
import pytest

import partita
from partita import relax
from partita import _ffi

pytestmark = pytest.mark.skipif("cublas" not in _ffi.list_target_kinds(),
                                reason="the cublas backend is not built (no CUDA toolkit)")


def _seed_module(with_product=False):
    # The seed tutorial's module (tests/python/test_seed_tutorial.py); with_product adds a
    # matmul of the two, which cuBLAS takes.
    x = relax.Var("x", relax.TensorStructInfo([10, 10], "float32"))
    y = relax.Var("y", relax.TensorStructInfo([10, 10], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, y]):
        with bb.dataflow():
            lv0 = bb.emit(relax.op.multiply(x, y))
            if with_product:
                lv0 = bb.emit(relax.op.matmul(lv0, y))
            gv = bb.emit_output(lv0)
        bb.emit_func_output(gv)
    return relax.transform.CanonicalizeBindings()(bb.get())


def _linear_module(dtype="float16"):
    x = relax.Var("x", relax.TensorStructInfo([16, 32], dtype))
    w = relax.Var("w", relax.TensorStructInfo([24, 32], dtype))
    b = relax.Var("b", relax.TensorStructInfo([24], dtype))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, w, b]):
        with bb.dataflow():
            wt = bb.emit(relax.op.permute_dims(w))
            h = bb.emit(relax.op.add(relax.op.matmul(x, wt), b))
            gv = bb.emit_output(relax.op.nn.relu(h))
        bb.emit_func_output(gv)
    return bb.get()


def test_signature_is_tvms():
    from partita.relax.backend.cuda.cublas import partition_for_cublas
    params = inspect.signature(partition_for_cublas).parameters
    assert list(params) == ["mod", "bind_constants"]
    assert params["bind_constants"].default is False


def test_partition_for_cublas_is_tvms_definition():
    from partita.relax.backend.cuda.cublas import partition_for_cublas
    from partita.relax.backend.pattern_registry import get_patterns_with_prefix
    mod = _linear_module()
    got = partition_for_cublas(mod)
    want = relax.transform.FuseOpsByPattern(get_patterns_with_prefix("cublas"), bind_constants=False,
                                            annotate_codegen=True)(mod)
    partita.ir.assert_structural_equal(got, want)
    text = got.script()
    assert '"Composite": "cublas.matmul_transposed_bias_relu"' in text, text
    assert text.count('"Codegen": "cublas"') == 1, text


_RUNNER = r"""
import sys
import numpy as np
import partita
from partita import relax
ex = partita.runtime.load_module(sys.argv[1])
print("kinds", sorted(ex.external_module_kinds))
x = np.load(sys.argv[2]); y = np.load(sys.argv[3]); want = np.load(sys.argv[4])
try:
    vm = relax.VirtualMachine(ex, partita.cuda())
except Exception as e:
    print("no GPU:", e)
    sys.exit(0)
got = np.asarray(vm["main"](x, y).numpy())
np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
print("ran on the GPU")
"""


@pytest.mark.parametrize("with_product", [False, True], ids=["seed", "seed_with_product"])
def test_seed_module_builds_exports_and_runs_in_a_fresh_process(tmp_path, with_product):
    from partita.relax.backend.cuda.cublas import partition_for_cublas
    mod = partition_for_cublas(_seed_module(with_product))
    offloaded = mod.script().count('"Codegen": "cublas"')
    assert offloaded == (1 if with_product else 0)
    ex = relax.build(mod, target="cuda")
    kinds = sorted(ex.external_module_kinds)
    assert kinds == (["cublas", "cuda"] if with_product else ["cuda"])
    out_dir = os.environ.get("PARTITA_CUBLAS_ARTIFACT_DIR") or str(tmp_path)
    name = "seed_with_product" if with_product else "seed"
    artifact = os.path.join(out_dir, name + ".ptx")
    ex.export_library(artifact)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((10, 10)).astype("float32")
    y = rng.standard_normal((10, 10)).astype("float32")
    want = x * y @ y if with_product else x * y
    files = [os.path.join(out_dir, "%s_%s.npy" % (name, v)) for v in ("x", "y", "expected")]
    for f, a in zip(files, (x, y, want)):
        np.save(f, a)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    run = subprocess.run([sys.executable, "-c", _RUNNER, artifact] + files, capture_output=True, text=True,
                         env=env, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "kinds %s" % kinds in run.stdout, run.stdout
    if "no GPU:" in run.stdout:
        assert "no CUDA device" in run.stdout, run.stdout
        pytest.skip("no CUDA device: the reloaded artifact says so (" + run.stdout.strip() + ")")
    assert "ran on the GPU" in run.stdout, run.stdout


def test_refused_function_falls_back_with_a_warning(capfd):
    # A "cublas" composite of an operator cuBLAS does not run: the build warns, naming it, and
    # runs it as generated CUDA; with fallback off it fails.
    from partita.relax.dpl.pattern import is_op, wildcard
    x = relax.Var("x", relax.TensorStructInfo([8, 16], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            gv = bb.emit_output(relax.op.nn.softmax(x, axis=-1))
        bb.emit_func_output(gv)
    mod = relax.transform.FuseOpsByPattern([("cublas.softmax", is_op("relax.nn.softmax")(wildcard()))],
                                           annotate_codegen=True)(bb.get())
    ex = relax.build(mod, target="cuda")
    err = capfd.readouterr().err
    assert "codegen 'cublas' cannot compile function 'fused_relax_nn_softmax_cublas'" in err, err
    assert "as generated cuda code instead" in err, err
    assert ex.external_module_kinds == ["cuda"]
    with pytest.raises(Exception, match="fused_relax_nn_softmax_cublas"):
        relax.build(mod, target="cuda", fallback=False)
