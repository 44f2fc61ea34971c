"""The ONNX importer from Python: models built with the onnx API, imported, compared with
expected TVMScript, and run on the VM against numpy."""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from partita import ir, relax, script  # noqa: E402
from partita.relax.frontend import detach_params  # noqa: E402
from partita.relax.frontend.onnx import from_onnx, supported_ops  # noqa: E402


def make_model(nodes, inputs, outputs, initializers=(), opset=17):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def run(mod, *args):
    vm = relax.VirtualMachine(relax.build(mod), None)
    out = vm["main"](*args)
    return out


def test_mlp_matches_expected_text():
    model = make_model(
        [helper.make_node("Gemm", ["x", "w", "b"], ["h"], transB=1),
         helper.make_node("Relu", ["h"], ["y"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4]),
         helper.make_tensor_value_info("w", TensorProto.FLOAT, [3, 4]),
         helper.make_tensor_value_info("b", TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])])
    mod = from_onnx(model)
    expected = script.from_source('''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("batch", 4), dtype="float32"), w: R.Tensor((3, 4), dtype="float32"), b: R.Tensor((3,), dtype="float32")) -> R.Tensor(("batch", 3), dtype="float32"):
        batch = T.int64()
        R.func_attr({"num_input": 3})
        with R.dataflow():
            lv = R.permute_dims(w, axes=[1, 0])
            lv1 = R.matmul(x, lv, out_dtype=None)
            lv2 = R.add(lv1, b)
            lv3 = R.nn.relu(lv2)
            gv = lv3
            R.output(gv)
        return gv
''')
    ir.assert_structural_equal(mod, expected)


def test_transformer_block_runs_with_symbolic_batch():
    d, heads, seq = 8, 2, 5
    rng = np.random.default_rng(0)
    wq = rng.standard_normal((d, d)).astype("float32")
    gamma = rng.standard_normal(d).astype("float32")
    beta = rng.standard_normal(d).astype("float32")
    inits = [numpy_helper.from_array(wq, "wq"), numpy_helper.from_array(gamma, "gamma"),
             numpy_helper.from_array(beta, "beta"),
             numpy_helper.from_array(np.array([0], dtype=np.int64), "i0"),
             numpy_helper.from_array(np.array([1], dtype=np.int64), "i1"),
             numpy_helper.from_array(np.array([2], dtype=np.int64), "i2"),
             numpy_helper.from_array(np.array([heads, d // heads], dtype=np.int64), "hd"),
             numpy_helper.from_array(np.array([-1], dtype=np.int64), "m1"),
             numpy_helper.from_array(np.array(0, dtype=np.int64), "s0")]
    nodes = [
        helper.make_node("MatMul", ["x", "wq"], ["q"]),                        # 3-D x 2-D
        # q.reshape(batch, seq, heads, d // heads) with the sizes read from Shape at run time
        helper.make_node("Shape", ["q"], ["qs"]),
        helper.make_node("Gather", ["qs", "s0"], ["b0"]),
        helper.make_node("Unsqueeze", ["b0", "i0"], ["b0v"]),
        helper.make_node("Slice", ["qs", "i1", "i2"], ["sv"]),                # [seq]
        helper.make_node("Concat", ["b0v", "sv", "hd"], ["shape4"], axis=0),
        helper.make_node("Reshape", ["q", "shape4"], ["q4"]),
        helper.make_node("Transpose", ["q4"], ["qt"], perm=[0, 2, 1, 3]),
        helper.make_node("Transpose", ["q4"], ["kt"], perm=[0, 2, 3, 1]),
        helper.make_node("MatMul", ["qt", "kt"], ["scores"]),                  # batched
        helper.make_node("Softmax", ["scores"], ["p"], axis=-1),
        helper.make_node("MatMul", ["p", "qt"], ["ctx"]),
        helper.make_node("Transpose", ["ctx"], ["ctxt"], perm=[0, 2, 1, 3]),
        helper.make_node("Concat", ["b0v", "sv", "m1"], ["shape3"], axis=0),
        helper.make_node("Reshape", ["ctxt", "shape3"], ["merged"]),
        helper.make_node("Add", ["merged", "x"], ["res"]),
        helper.make_node("LayerNormalization", ["res", "gamma", "beta"], ["y"], axis=-1, epsilon=1e-5),
    ]
    model = make_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", seq, d])],
                       [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", seq, d])], inits)
    mod = from_onnx(model)
    text = mod.script()
    # The shape arithmetic folded: both reshapes take a (symbolic) R.shape.
    assert "R.reshape(lv, R.shape([batch, 5, 2, 4]))" in text, text
    assert "R.shape([batch, 5, 8])" in text, text
    assert "R.take" not in text and "R.concat" not in text, text

    def reference(x):
        q = x @ wq
        b = x.shape[0]
        q4 = q.reshape(b, seq, heads, d // heads)
        qt = q4.transpose(0, 2, 1, 3)
        s = qt @ q4.transpose(0, 2, 3, 1)
        p = np.exp(s - s.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        ctx = (p @ qt).transpose(0, 2, 1, 3).reshape(b, seq, d)
        r = ctx + x
        mu = r.mean(-1, keepdims=True)
        var = r.var(-1, keepdims=True)
        return (r - mu) / np.sqrt(var + 1e-5) * gamma + beta

    for batch in (1, 3):
        x = rng.standard_normal((batch, seq, d)).astype("float32")
        np.testing.assert_allclose(run(mod, x), reference(x), rtol=1e-4, atol=1e-5)


def test_cnn_block_runs():
    rng = np.random.default_rng(1)
    w = rng.standard_normal((4, 1, 3, 3)).astype("float32")  # depthwise
    scale, bias = rng.random(4).astype("float32") + 0.5, rng.standard_normal(4).astype("float32")
    mean, var = rng.standard_normal(4).astype("float32"), rng.random(4).astype("float32") + 0.5
    fc = rng.standard_normal((2, 4)).astype("float32")
    inits = [numpy_helper.from_array(a, n) for a, n in
             [(w, "w"), (scale, "sc"), (bias, "bi"), (mean, "mu"), (var, "var"), (fc, "fc"),
              (np.array(0, "float32"), "lo"), (np.array(6, "float32"), "hi")]]
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], group=4, pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("BatchNormalization", ["c", "sc", "bi", "mu", "var"], ["bn"], epsilon=1e-5),
        helper.make_node("Clip", ["bn", "lo", "hi"], ["r6"]),
        helper.make_node("GlobalAveragePool", ["r6"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"], axis=1),
        helper.make_node("Gemm", ["f", "fc"], ["y"], transB=1),
    ]
    model = make_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4, 8, 8])],
                       [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 2])], inits)
    mod = from_onnx(model)
    x = rng.standard_normal((2, 4, 8, 8)).astype("float32")
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    c = np.zeros((2, 4, 4, 4), "float32")
    for i in range(4):
        for j in range(4):
            c[:, :, i, j] = (xp[:, :, 2 * i:2 * i + 3, 2 * j:2 * j + 3] * w[:, 0]).sum((2, 3))
    bn = (c - mean[:, None, None]) / np.sqrt(var[:, None, None] + 1e-5) * scale[:, None, None] + bias[:, None, None]
    ref = np.clip(bn, 0, 6).mean((2, 3)) @ fc.T
    np.testing.assert_allclose(run(mod, x), ref, rtol=1e-4, atol=1e-5)


def test_keep_params_in_input_and_detach():
    w = np.arange(6, dtype="float32").reshape(2, 3)
    model = make_model([helper.make_node("MatMul", ["x", "w"], ["y"])],
                       [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2])],
                       [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])],
                       [numpy_helper.from_array(w, "w")])
    mod = from_onnx(model, keep_params_in_input=True)
    assert [p.name_hint for p in mod["main"].params] == ["x", "w"]
    mod, params = detach_params(mod)
    np.testing.assert_array_equal(params["main"][0], w)
    x = np.ones((1, 2), "float32")
    np.testing.assert_allclose(run(mod, x, params["main"][0]), x @ w)
    # By default the initializer is a constant (a metadata constant when printed).
    assert 'metadata["relax.expr.Constant"][0]' in from_onnx(model).script()


def test_shape_dict_and_path(tmp_path):
    model = make_model([helper.make_node("Relu", ["x"], ["y"])],
                       [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 4])],
                       [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 4])])
    path = tmp_path / "relu.onnx"
    onnx.save(model, str(path))
    mod = from_onnx(str(path), shape_dict={"x": ["n", 4]})
    assert 'def main(x: R.Tensor(("n", 4), dtype="float32"))' in mod.script()
    mod = from_onnx(path, shape_dict={"x": [2, 4]})
    assert 'def main(x: R.Tensor((2, 4), dtype="float32"))' in mod.script()


def test_unsupported_operators_are_listed_together():
    model = make_model(
        [helper.make_node("RoiAlign", ["x", "k"], ["v"], name="top"),
         helper.make_node("Relu", ["v"], ["r"]),
         helper.make_node("NonZero", ["r"], ["nz1"], name="nz_a"),
         helper.make_node("NonZero", ["r"], ["nz2"], name="nz_b")],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4]),
         helper.make_tensor_value_info("k", TensorProto.INT64, [1])],
        [helper.make_tensor_value_info("nz1", TensorProto.INT64, None)])
    with pytest.raises(Exception) as info:
        from_onnx(model)
    msg = str(info.value)
    assert "2 unsupported operator types" in msg
    assert "NonZero (2 nodes): nz_a, nz_b" in msg
    assert "RoiAlign (1 node): top" in msg
    assert "Relu" not in msg
    assert "RoiAlign" not in supported_ops() and "Conv" in supported_ops() and "TopK" in supported_ops()


def test_corrupted_and_missing_files(tmp_path):
    model = make_model([helper.make_node("Relu", ["x"], ["y"])],
                       [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                       [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])])
    data = model.SerializeToString()
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\xff" * 40)
    with pytest.raises(Exception, match="bad.onnx: not a valid ONNX model"):
        from_onnx(str(bad))
    with pytest.raises(Exception, match="missing.onnx: cannot open"):
        from_onnx(str(tmp_path / "missing.onnx"))
    truncated = tmp_path / "truncated.onnx"
    truncated.write_bytes(data[: len(data) // 2])
    with pytest.raises(Exception, match="truncated.onnx"):
        from_onnx(str(truncated))
    with pytest.raises(TypeError):
        from_onnx(42)


def test_float16_clip_bounds_are_read():
    # A model exported with .half() gives Clip float16 bounds; they are read as their values.
    from partita.relax.frontend.onnx import from_onnx
    lo = numpy_helper.from_array(np.array(0.5, np.float16), "lo")
    hi = numpy_helper.from_array(np.array(6, np.float16), "hi")
    g = helper.make_graph([helper.make_node("Clip", ["x", "lo", "hi"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [2, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [2, 3])], [lo, hi])
    text = from_onnx(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])).script()
    assert "R.clip(x, T.float64(0.5), T.float64(6.0))" in text


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_models_scalars_are_made_in_their_dtype(dtype):
    # HardSwish and InstanceNormalization make scalar constants (3, 6, epsilon) in the model's
    # dtype; a .half() export needs them in float16 (and bfloat16 models in bfloat16).
    from partita.relax.frontend.onnx import from_onnx
    elem = TensorProto.FLOAT16 if dtype == "float16" else TensorProto.BFLOAT16
    scale = helper.make_tensor("s", elem, [2], [1.0, 2.0]) if dtype == "bfloat16" else \
        numpy_helper.from_array(np.array([1.0, 2.0], np.float16), "s")
    bias = helper.make_tensor("b", elem, [2], [0.0, 0.5]) if dtype == "bfloat16" else \
        numpy_helper.from_array(np.array([0.0, 0.5], np.float16), "b")
    g = helper.make_graph(
        [helper.make_node("HardSwish", ["x"], ["h"]),
         helper.make_node("InstanceNormalization", ["h", "s", "b"], ["y"], epsilon=1e-5)], "g",
        [helper.make_tensor_value_info("x", elem, [1, 2, 3, 3])],
        [helper.make_tensor_value_info("y", elem, [1, 2, 3, 3])], [scale, bias])
    mod = from_onnx(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]))
    text = mod.script()
    assert "R.Tensor((1, 2, 3, 3), dtype=\"%s\")" % dtype in text
    assert "float32" not in text, text  # every scalar in the model's dtype


@pytest.mark.parametrize("other", ["constant", "computed"])
def test_float32_operands_in_float16_graphs_take_the_16_bit_dtype(other):
    # PyTorch's exporter writes float32 constants and masks into .half() graphs (its
    # scaled_dot_product_attention scale and causal mask); ONNX forbids the mix, and the model
    # means float16 arithmetic.
    from partita.relax.frontend.onnx import from_onnx
    inits, nodes = [], []
    if other == "constant":
        inits.append(numpy_helper.from_array(np.full((4,), -np.inf, np.float32), "m"))
    else:  # a float32 value computed from the graph's own float32 input
        nodes.append(helper.make_node("Neg", ["z"], ["m"]))
    nodes.append(helper.make_node("Add", ["x", "m"], ["y"]))
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [4])]
    if other == "computed":
        inputs.append(helper.make_tensor_value_info("z", TensorProto.FLOAT, [4]))
    g = helper.make_graph(nodes, "g", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [4])], inits)
    text = from_onnx(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])).script()
    assert 'R.Tensor((4,), dtype="float16") = R.add(' in text, text


def test_float16_and_bfloat16_operands_stay_an_error():
    from partita.relax.frontend.onnx import from_onnx
    g = helper.make_graph([helper.make_node("Add", ["x", "z"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [4]),
                           helper.make_tensor_value_info("z", TensorProto.BFLOAT16, [4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [4])])
    with pytest.raises(Exception, match="same dtype"):
        from_onnx(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]))


def test_layer_norm_of_float32_data_with_a_float16_scale_computes_in_float16():
    # The same exporter mix at a LayerNormalization (a .half() GPT block's second norm).
    from partita.relax.frontend.onnx import from_onnx
    scale = numpy_helper.from_array(np.ones((4,), np.float16), "s")
    bias = numpy_helper.from_array(np.zeros((4,), np.float16), "b")
    g = helper.make_graph([helper.make_node("LayerNormalization", ["x", "s", "b"], ["y"], axis=-1)], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [2, 4])], [scale, bias])
    text = from_onnx(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])).script()
    assert 'R.Tensor((2, 4), dtype="float16") = R.nn.layer_norm(' in text, text


@pytest.mark.parametrize("op_type", ["MatMul", "Gemm"])
def test_matmul_of_float32_and_float16_operands_computes_in_float16(op_type):
    # The same exporter mix at a matrix product (a .half() GPT block's first FFN linear).
    from partita.relax.frontend.onnx import from_onnx
    w = numpy_helper.from_array(np.ones((4, 3), np.float16), "w")
    g = helper.make_graph([helper.make_node(op_type, ["x", "w"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [2, 3])], [w])
    text = from_onnx(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])).script()
    assert 'R.Tensor((2, 3), dtype="float16") = R.matmul(' in text, text


def test_gemm_float32_bias_in_a_float16_graph_takes_float16():
    # PyTorch's exporter wrote a float32 in-projection bias into a .half() GPT block's Gemm.
    from partita.relax.frontend.onnx import from_onnx
    w = numpy_helper.from_array(np.ones((3, 4), np.float16), "w")
    c = numpy_helper.from_array(np.ones((3,), np.float32), "c")
    g = helper.make_graph([helper.make_node("Gemm", ["x", "w", "c"], ["y"], transB=1, alpha=2.0, beta=0.5)], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [2, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [2, 3])], [w, c])
    mod = from_onnx(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]))
    text = mod.script()
    assert "float32" not in text, text  # the bias and the alpha / beta scalars in float16
    assert 'R.Tensor((2, 3), dtype="float16") = R.add(' in text, text


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_instance_norm_is_a_layer_norm(dtype):
    # A .half() export's InstanceNormalization imports as the float32 one does: a layer norm
    # over the spatial axes (one kernel, statistics in float, on every backend that runs 16-bit
    # tensors) with a unit scale in the model's dtype, then the per-channel affine.
    elem = TensorProto.FLOAT16 if dtype == "float16" else TensorProto.BFLOAT16
    g = helper.make_graph(
        [helper.make_node("InstanceNormalization", ["x", "s", "b"], ["y"], epsilon=1e-5)], "g",
        [helper.make_tensor_value_info("x", elem, [1, 2, 5, 7])],
        [helper.make_tensor_value_info("y", elem, [1, 2, 5, 7])],
        [helper.make_tensor("s", elem, [2], [1.5, 0.5]), helper.make_tensor("b", elem, [2], [0.25, -1.0])])
    text = from_onnx(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])).script()
    assert "R.nn.layer_norm(x, " in text and "axes=[2, 3]" in text and "R.variance" not in text, text
    assert "# [0] %s (5, 7) " % dtype in text and "# [1] %s (5, 7) " % dtype in text, text
