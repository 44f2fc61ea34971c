"""`partita compile --precision fp16`: ToMixedPrecision runs before partitioning."""
import os
import subprocess

import numpy as np
import pytest

import partita

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PARTITA = os.environ.get("PARTITA_CLI") or os.path.join(
    ROOT, os.environ.get("PARTITA_BUILD_DIR", "build"), "partita")

pytestmark = pytest.mark.skipif(not os.path.exists(PARTITA), reason=f"{PARTITA} is not built")

MODULE = '''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 16), dtype="float32"), w: R.Tensor((16, 8), dtype="float32")) -> R.Tensor((2, 8), dtype="float32"):
        with R.dataflow():
            h: R.Tensor((2, 8), dtype="float32") = R.matmul(x, w)
            gv: R.Tensor((2, 8), dtype="float32") = R.nn.relu(h)
            R.output(gv)
        return gv
'''


def cli(*args):
    return subprocess.run([PARTITA, *args], capture_output=True, text=True)


@pytest.fixture()
def model(tmp_path):
    path = tmp_path / "mm.py"
    path.write_text(MODULE)
    return path


def test_fp16_compiles_float16_compute_with_float32_results(model, tmp_path):
    out16 = tmp_path / "mm16.partita"
    r = cli("compile", str(model), "--precision", "fp16", "-q", "-o", str(out16))
    assert r.returncode == 0, r.stderr
    text16 = partita.runtime.load_module(str(out16)).as_text()
    out32 = tmp_path / "mm32.partita"
    assert cli("compile", str(model), "-q", "-o", str(out32)).returncode == 0
    text32 = partita.runtime.load_module(str(out32)).as_text()
    # x and w cast to float16 for the matmul, its float32 result cast back... as TVM rewrites it.
    assert text16.count("relax.astype") >= 3 and "astype" not in text32
    # The host has no float16 matmul: running says so instead of computing something else.
    r = cli("run", str(out16))
    assert r.returncode == 1 and "float16" in r.stderr
    assert cli("run", str(out32)).returncode == 0


def test_fp16_on_the_gpu_matches_fp32(model, tmp_path):
    if "cuda" not in partita.target.list_target_kinds():
        pytest.skip("the cuda target is not built")
    art = tmp_path / "mm16_cuda.partita"
    r = cli("compile", str(model), "--precision", "fp16", "--target", "cuda", "-q", "-o", str(art))
    assert r.returncode == 0, r.stderr
    if not partita.cuda(0).exist:
        pytest.skip("no CUDA device")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 16)).astype("float32")
    w = rng.standard_normal((16, 8)).astype("float32")
    vm = partita.relax.VirtualMachine(partita.runtime.load_module(str(art)), partita.cuda(0))
    np.testing.assert_allclose(vm["main"](x, w).numpy(), np.maximum(x @ w, 0), rtol=2e-2, atol=2e-2)


def test_unknown_precision_is_refused(model, tmp_path):
    r = cli("compile", str(model), "--precision", "fp8", "-o", str(tmp_path / "x.partita"))
    assert r.returncode == 1 and "--precision" in r.stderr and "fp16" in r.stderr
