"""relax.transform.FoldConstant and FoldBatchnormToConv2D from Python (TVM's test cases, the
expected constants computed by numpy), and their place before partitioning."""
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import partita
from partita import ir, relax
from partita.relax.backend.cpu.dnnl import partition_for_dnnl
from partita.relax.frontend.onnx import from_onnx


def tensor(shape, dtype="float32"):
    return relax.TensorStructInfo(shape, dtype)


def function(params, body):
    """A module whose main binds `body(bb, *params)` in a dataflow block and returns it."""
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        with bb.dataflow():
            gv = bb.emit_output(body(bb, *params))
        bb.emit_func_output(gv)
    return bb.get()


def test_fold_multiple_relax_ops():
    # TVM's test_fold_multiple_relax_ops: (c0 * (c0 + c1)) - c1 becomes one constant.
    c0 = np.arange(16 * 16, dtype="float32").reshape(16, 16)
    c1 = np.arange(16 * 16, dtype="float32").reshape(16, 16) * 0.5
    x = relax.Var("x", tensor([16, 16]))

    def before(bb, x):
        lv0 = bb.emit(relax.op.add(relax.const(c0), relax.const(c1)))
        lv1 = bb.emit(relax.op.multiply(relax.const(c0), lv0))
        lv2 = bb.emit(relax.op.subtract(lv1, relax.const(c1)))
        return relax.op.add(x, lv2)

    x2 = relax.Var("x", tensor([16, 16]))
    expected = function([x2], lambda bb, x: relax.op.add(x, relax.const(c0 * (c0 + c1) - c1)))
    after = relax.transform.FoldConstant()(function([x], before))
    ir.assert_structural_equal(after, expected)


def test_fold_transpose_and_creation_but_not_the_input():
    c0 = np.arange(6, dtype="float32").reshape(2, 3)
    x = relax.Var("x", tensor([3, 2]))

    def before(bb, x):
        t = bb.emit(relax.op.permute_dims(relax.const(c0)))
        ones = bb.emit(relax.op.ones((3, 2), "float32"))
        s = bb.emit(relax.op.add(t, ones))
        return relax.op.multiply(x, s)

    after = relax.transform.FoldConstant()(function([x], before))
    x2 = relax.Var("x", tensor([3, 2]))
    expected = function([x2], lambda bb, x: relax.op.multiply(x, relax.const(c0.T + 1)))
    ir.assert_structural_equal(after, expected)


def test_do_not_fold_outside_dataflow():
    c0 = np.ones((4,), dtype="float32")
    bb = relax.BlockBuilder()
    with bb.function("main", []):
        gv = bb.emit(relax.op.add(relax.const(c0), relax.const(c0)))
        bb.emit_func_output(gv)
    mod = bb.get()
    ir.assert_structural_equal(relax.transform.FoldConstant()(mod), mod)


def _conv_bn_relu(rng, bias):
    w = rng.standard_normal((8, 4, 3, 3)).astype("float32") * 0.3
    b = rng.standard_normal((1, 8, 1, 1)).astype("float32")
    gamma, beta = rng.uniform(0.5, 2, 8).astype("float32"), rng.standard_normal(8).astype("float32")
    mean, var = rng.standard_normal(8).astype("float32"), rng.uniform(0.5, 2, 8).astype("float32")
    x = relax.Var("x", tensor([1, 4, 10, 10]))

    def body(bb, x):
        y = bb.emit(relax.op.nn.conv2d(x, relax.const(w), padding=[1, 1]))
        if bias:
            y = bb.emit(relax.op.add(y, relax.const(b)))
        t = bb.emit(relax.op.nn.batch_norm(y, relax.const(gamma), relax.const(beta), relax.const(mean),
                                           relax.const(var), axis=1, training=False))
        return relax.op.nn.relu(bb.emit(relax.TupleGetItem(t, 0)))

    return function([x], body)


@pytest.mark.parametrize("bias", [False, True])
def test_batch_norm_folds_into_the_convolution_and_keeps_the_result(bias):
    rng = np.random.default_rng(3)
    mod = _conv_bn_relu(rng, bias)
    folded = relax.transform.FoldForInference()(mod)
    text = folded.script()
    assert "batch_norm" not in text and text.count("R.nn.conv2d(") == 1 and "R.add(" in text
    assert relax.analysis.well_formed(folded)
    x = rng.standard_normal((1, 4, 10, 10)).astype("float32")
    run = lambda m: np.asarray(relax.VirtualMachine(relax.build(m), partita.cpu())["main"](x))
    want, got = run(mod), run(folded)
    assert np.abs(got - want).max() <= 1e-5 * np.abs(want).max()


def test_partition_for_folds_first_so_the_backend_gets_conv_bias_relu():
    mod = _conv_bn_relu(np.random.default_rng(4), bias=False)
    part = partition_for_dnnl(mod)
    text = part.script()
    assert "batch_norm" not in text
    assert '"Composite": "dnnl.conv2d_bias_relu"' in text


def test_onnx_batch_norm_after_a_convolution_runs_folded():
    # An exporter that left BatchNormalization after Conv (torch folds it itself in eval mode).
    rng = np.random.default_rng(5)
    inits = {"w": rng.standard_normal((6, 3, 3, 3)).astype("float32"),
             "g": rng.uniform(0.5, 2, 6).astype("float32"), "b": rng.standard_normal(6).astype("float32"),
             "m": rng.standard_normal(6).astype("float32"), "v": rng.uniform(0.5, 2, 6).astype("float32")}
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
         helper.make_node("BatchNormalization", ["c", "g", "b", "m", "v"], ["y"], epsilon=1e-5)],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 6, 8, 8])],
        [numpy_helper.from_array(a, n) for n, a in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    mod = from_onnx(model)
    part = partition_for_dnnl(mod)
    assert "batch_norm" not in part.script()
    x = rng.standard_normal((1, 3, 8, 8)).astype("float32")
    ex = relax.build(part, [partita.target.Target("dnnl", {"num_threads": 2})])
    got = np.asarray(relax.VirtualMachine(ex, partita.cpu())["main"](x))
    want = np.asarray(relax.VirtualMachine(relax.build(mod), partita.cpu())["main"](x))
    assert np.abs(got - want).max() <= 1e-4 * np.abs(want).max()


def test_large_creations_stay_calls_but_large_computations_fold():
    # TVM's rule: a result above 1024 elements folds only when the call reads a tensor, so a big
    # zeros / ones / full is not materialized into the module (and the artifact).
    x = relax.Var("x", tensor([64, 64]))
    c0 = np.ones((64, 64), dtype="float32")

    def before(bb, x):
        z = bb.emit(relax.op.zeros((64, 64), "float32"))  # 4096 elements, no tensor operand: kept
        s = bb.emit(relax.op.add(relax.const(c0), relax.const(c0)))  # reads tensors: folded
        small = bb.emit(relax.op.ones((4, 4), "float32"))  # small: folded
        return relax.op.add(relax.op.add(x, z), relax.op.add(s, relax.op.sum(small)))

    text = relax.transform.FoldConstant()(function([x], before)).script()
    body = text[text.index("def main"):text.index("R.output")]
    assert "R.zeros(" in body, text
    assert "R.ones(" not in body and body.count("R.add(") == 2, text  # s + sum(small) is one constant
