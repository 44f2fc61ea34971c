"""The example NPU's Python half (partita.relax.backend.contrib.example_npu) and TensorRT's pattern
table (partita.relax.backend.contrib.tensorrt): TVM v0.26's tests/python/contrib/test_example_npu.py
with ``tvm`` replaced by ``partita`` (and values checked, since Partita's NPU runtime computes),
the two global functions TVM's build registers, and the TensorRT table's partitioning."""
import json

import numpy as np
import pytest

import partita
from partita import relax
from partita.relax.backend.pattern_registry import get_patterns_with_prefix
from partita.relax.transform import FuseOpsByPattern, MergeCompositeFunctions, RunCodegen
from partita.script import relax as R

example_npu = pytest.importorskip("partita.relax.backend.contrib.example_npu",
                                  reason="this build has no example NPU backend (PARTITA_WITH_EXAMPLE_NPU)")
tensorrt = pytest.importorskip("partita.relax.backend.contrib.tensorrt",
                               reason="this build has no TensorRT pattern table (src/backend/tensorrt)")


@partita.script.ir_module
class MatmulReLU:
    @R.function
    def main(x: R.Tensor((2, 4), "float32"), w: R.Tensor((4, 8), "float32")) -> R.Tensor((2, 8), "float32"):
        with R.dataflow():
            y = relax.op.matmul(x, w)
            z = relax.op.nn.relu(y)
            R.output(z)
        return z


@partita.script.ir_module
class MultipleOps:
    @R.function
    def main(x: R.Tensor((1, 16, 32, 32), "float32")) -> R.Tensor((1, 16, 16, 16), "float32"):
        with R.dataflow():
            y = relax.op.nn.relu(x)
            z = relax.op.nn.max_pool2d(y, pool_size=(2, 2), strides=(2, 2))
            out = relax.op.nn.relu(z)
            R.output(out)
        return out


@partita.script.ir_module
class Softmax:
    @R.function
    def main(x: R.Tensor((2, 8), "float32")) -> R.Tensor((2, 8), "float32"):
        with R.dataflow():
            z = relax.op.nn.softmax(x)
            R.output(z)
        return z


def partition(mod, annotate_codegen):
    mod = FuseOpsByPattern(get_patterns_with_prefix("example_npu"), bind_constants=False,
                           annotate_codegen=annotate_codegen)(mod)
    return MergeCompositeFunctions()(mod)


def run(mod, *args):
    vm = relax.VirtualMachine(relax.build(RunCodegen()(partition(mod, True)), partita.target.Target("llvm")),
                              partita.cpu())
    return vm["main"](*[partita.runtime.tensor(a, partita.cpu()) for a in args]).numpy()


def test_example_npu_patterns_registered():
    names = {p.name for p in get_patterns_with_prefix("example_npu")}
    assert {"example_npu.dense", "example_npu.matmul", "example_npu.conv2d", "example_npu.max_pool2d"} <= names
    assert {"example_npu.relu", "example_npu.conv2d_relu_fused", "example_npu.matmul_relu_fused"} <= names
    assert [p.name for p in example_npu.patterns.registered_patterns()][:2] == [
        "example_npu.conv2d_relu_fused", "example_npu.matmul_relu_fused"]
    assert example_npu.patterns.NPUConfig.SRAM_SIZE_KB == 256


@pytest.mark.parametrize("mod, composites", [
    (MatmulReLU, ["example_npu.matmul_relu_fused"]),
    (MultipleOps, ["example_npu.max_pool2d", "example_npu.relu", "example_npu.relu"]),
    (Softmax, ["example_npu.softmax"]),
])
def test_example_npu_partitioning(mod, composites):
    text = partition(mod, annotate_codegen=False).script()
    found = sorted(line.split('"Composite": "')[1].split('"')[0] for line in text.splitlines() if '"Composite"' in line)
    assert found == composites
    assert text.count('"Codegen": "example_npu"') == 1  # one merged function


def test_example_npu_runtime_execution_computes():
    np.random.seed(42)
    x = np.random.randn(2, 4).astype("float32")
    w = np.random.randn(4, 8).astype("float32")
    np.testing.assert_allclose(run(MatmulReLU, x, w), np.maximum(0, x @ w), rtol=1e-5, atol=1e-6)
    s = np.random.randn(2, 8).astype("float32")
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    np.testing.assert_allclose(run(Softmax, s), e / e.sum(axis=-1, keepdims=True), rtol=1e-5, atol=1e-6)
    img = np.random.randn(1, 16, 32, 32).astype("float32")
    pooled = np.maximum(img, 0).reshape(1, 16, 16, 2, 16, 2).max(axis=(3, 5))
    np.testing.assert_allclose(run(MultipleOps, img), pooled, rtol=1e-6)


def test_relax_ext_example_npu_is_the_codegen():
    codegen = partita.get_global_func("relax.ext.example_npu")
    mod = partition(MatmulReLU, annotate_codegen=True)
    funcs = [f for gv, f in mod.functions.items() if f.attrs and "Codegen" in f.attrs.keys()]
    assert len(funcs) == 1
    modules = codegen(funcs, {}, {})
    assert [m.type_key for m in modules] == ["example_npu"]
    symbol = modules[0].function_names[0]
    assert symbol == "fused_relax_matmul_relax_nn_relu_example_npu_example_npu"
    graph = json.loads(modules[0].get_source())["functions"][0]
    assert [n["name"] for n in graph["nodes"]] == ["example_npu.matmul_relu_fused"]
    assert "MATRIX_ENGINE, fused" in modules[0].get_source("dispatch")
    x = np.random.randn(2, 4).astype("float32")
    w = np.random.randn(4, 8).astype("float32")
    out = np.zeros((2, 8), "float32")
    modules[0].call(symbol, [x, w], [out])
    np.testing.assert_allclose(out, np.maximum(0, x @ w), rtol=1e-5, atol=1e-6)
    with pytest.raises(KeyError, match="no function 'nope'"):
        modules[0].call("nope", [x, w], [out])


def test_runtime_create_makes_a_module_from_a_graph():
    create = partita.get_global_func("runtime.ExampleNPUJSONRuntimeCreate")
    graph = {"values": [[2, 3], [2, 3], [2, 3]], "inputs": [0, 1], "constants": [],
             "nodes": [{"name": "example_npu.add", "op_type": "kernel", "inputs": [0, 1], "outputs": [2],
                        "ops": [{"op": "relax.add", "attrs": {}, "inputs": [0, 1], "outputs": [2]}]}],
             "outputs": [2]}
    module = create("my_add", json.dumps(graph), [])
    assert module.type_key == "example_npu" and module.function_names == ["my_add"]
    a, b = np.ones((2, 3), "float32"), np.full((2, 3), 2.5, "float32")
    out = np.zeros((2, 3), "float32")
    module.call("my_add", [a, b], [out])
    np.testing.assert_array_equal(out, a + b)
    reloaded = partita._ffi.load_module_from_binary("example_npu", module.save_to_binary())
    assert reloaded.get_source() == module.get_source()
    with pytest.raises(ValueError, match="const_names lists"):
        create("my_add", json.dumps(graph), ["w"])
    graph["nodes"][0]["ops"][0]["op"] = "relax.nope"
    with pytest.raises(ValueError, match="relax.nope has no host kernel"):
        create("my_add", json.dumps(graph), [])


def test_tensorrt_pattern_table_and_partition():
    names = [p.name for p in get_patterns_with_prefix("tensorrt")]
    assert "tensorrt.nn.conv2d" in names and "tensorrt.nn.relu" in names and "tensorrt.image.resize2d" in names
    # Operators Partita lacks have no pattern (TVM's table names them).
    assert "tensorrt.nn.conv3d" not in names and "tensorrt.layout_transform" not in names
    assert partita.get_global_func("relax.ext.tensorrt", True) is None

    @partita.script.ir_module
    class Model:
        @R.function
        def main(x: R.Tensor((1, 3, 8, 8), "float32"), w: R.Tensor((4, 3, 3, 3), "float32")):
            with R.dataflow():
                c = relax.op.nn.conv2d(x, w)
                s = relax.op.sigmoid(c)
                r = relax.op.image.resize2d(s, R.shape([12, 12]))
                n = relax.op.image.resize2d(s, R.shape([12, 12]), method="nearest_neighbor")
                out = (r, n)
                R.output(out)
            return out

    mod = tensorrt.partition_for_tensorrt(relax.transform.BindParams("main", {"w": np.ones((4, 3, 3, 3), "float32")})(Model))
    text = mod.script()
    composites = sorted(line.split('"Composite": "')[1].split('"')[0] for line in text.splitlines() if '"Composite"' in line)
    # The nearest-neighbour resize rounds ties to even ("round"), which TensorRT cannot: it stays.
    assert composites == ["tensorrt.image.resize2d", "tensorrt.nn.conv2d", "tensorrt.sigmoid"]
    assert "R.image.resize2d(" in str(mod["main"])


def test_python_checks_do_not_outlive_the_interpreter(tmp_path):
    """A registered pattern's Python check is held by the C++ registry (as tensorrt's resize2d
    check is); it is dropped at exit, so the process does not abort releasing it after Python
    has finalized."""
    import os
    import subprocess
    import sys
    script = tmp_path / "register.py"
    script.write_text(
        "from partita.relax.backend.pattern_registry import register_patterns\n"
        "from partita.relax.dpl import is_op, wildcard\n"
        "class Check:\n"
        "    def __call__(self, ctx):\n"
        "        return True\n"
        "register_patterns([('zz_exit.relu', is_op('relax.nn.relu')(wildcard()), {}, Check())])\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=dict(os.environ))
    assert done.returncode == 0, done.stderr
    assert "Fatal Python error" not in done.stderr
