"""The TVM-shaped Relax API: struct info, operators, BlockBuilder, analysis, passes."""
import numpy as np
import pytest

import partita
from partita import ir, relax, tir, transform
from partita.relax.dpl.pattern import (is_const, is_op, is_tuple_get_item, make_fused_bias_activation_pattern,
                                       wildcard)


def tensor(shape, dtype="float32"):
    return relax.TensorStructInfo(shape, dtype)


def test_symbolic_shapes_simplify():
    n = tir.Var("n", "int64")
    assert ir.structural_equal(tir.simplify((n * 2) // 2), n)
    assert ir.structural_equal((n + 1) - 1, n)


def test_operator_inference_and_defaults():
    x = relax.Var("x", tensor([1, 3, 32, 32]))
    w = relax.Var("w", tensor([16, 3, 3, 3]))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, w]):
        with bb.dataflow():
            c = bb.emit(relax.op.nn.conv2d(x, w, padding=[1, 1]))
            p = bb.emit(relax.op.nn.max_pool2d(c, pool_size=[2, 2], strides=[2, 2]))
            gv = bb.emit_output(relax.op.reshape(p, (1, -1)))
        bb.emit_func_output(gv)
    mod = bb.get()
    assert relax.analysis.well_formed(mod)
    assert [int(d) for d in c.struct_info.shape] == [1, 16, 32, 32]
    assert [int(d) for d in gv.struct_info.shape] == [1, 4096]
    call = mod["main"].body.blocks[0].bindings[0].value
    assert call.attrs["data_layout"] == "NCHW" and call.attrs["strides"] == [1, 1]


def test_operator_errors_name_the_problem():
    a = relax.Var("a", tensor([10, 3]))
    b = relax.Var("b", tensor([4]))
    bb = relax.BlockBuilder()
    with pytest.raises(ValueError, match=r"^relax.add: cannot broadcast shapes \(10, 3\) and \(4,\)"):
        with bb.function("main", [a, b]):
            bb.emit(relax.op.add(a, b))
    with pytest.raises(Exception, match="unknown|valid"):
        relax.op.nn.softmax(a, not_an_attribute=1)


def test_well_formed_reports_undefined_variables(capfd):
    x = relax.Var("x", tensor([2]))
    stray = relax.Var("stray", tensor([2]))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        gv = bb.emit(relax.op.add(x, stray))
        bb.emit_func_output(gv)
    assert not relax.analysis.well_formed(bb.get())
    assert "stray" in capfd.readouterr().err


def test_pass_context_instruments_and_sequential():
    x = relax.Var("x", tensor([4]))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            lv = bb.emit(relax.op.exp(x))
            bb.emit(relax.op.negative(x))  # dead
            gv = bb.emit_output(lv)
        bb.emit_func_output(gv)
    timing = transform.PassTimingInstrument()
    seen = []
    printing = transform.PassPrintingInstrument(lambda name, mod, before: seen.append((name, before)))
    seq = transform.Sequential([relax.transform.DeadCodeElimination(), relax.transform.CanonicalizeBindings()])
    with transform.PassContext(opt_level=3, instruments=[timing, printing]):
        mod = seq(bb.get())
    assert "negative" not in mod.script()
    assert ("DeadCodeElimination", True) in seen and ("CanonicalizeBindings", False) in seen
    assert "DeadCodeElimination" in timing.render()


def _conv_bias_relu_module(bias_const):
    x = relax.Var("x", tensor([1, 8, 8, 8]))
    w = relax.Var("w", tensor([8, 8, 3, 3]))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, w]):
        with bb.dataflow():
            c = bb.emit(relax.op.nn.conv2d(x, w, padding=[1, 1]))
            a = bb.emit(relax.op.add(c, relax.const(bias_const)))
            gv = bb.emit_output(relax.op.nn.relu(a))
        bb.emit_func_output(gv)
    return bb.get()


def test_fused_bias_activation_with_python_check():
    mod = _conv_bias_relu_module(np.ones((1, 8, 1, 1), "float32"))
    calls = []

    kept = []

    def check(ctx):
        calls.append(ctx.matched_expr)
        kept.append(ctx)  # a context kept after the check returns stays readable
        return len(ctx.matched_bindings) >= 1

    pattern = make_fused_bias_activation_pattern("relax.nn.conv2d", with_bias=True, activation="relax.nn.relu")
    fused = relax.transform.FuseOpsByPattern([("dnnl.conv2d_bias_relu", pattern, check)],
                                             bind_constants=True, annotate_codegen=True)(mod)
    assert calls, "the Python check function was called"
    assert kept and all(len(c.matched_bindings) == 3 and c.var_usages for c in kept)
    names = [gv.name_hint for gv in fused.get_global_vars()]
    assert "fused_relax_nn_conv2d_relax_add_relax_nn_relu_dnnl" in names
    # bind_constants keeps the bias inside the composite: the offloaded function takes 2 params.
    assert len(fused["fused_relax_nn_conv2d_relax_add_relax_nn_relu_dnnl"].params) == 2

    rejected = relax.transform.FuseOpsByPattern([("dnnl.conv2d_bias_relu", pattern, lambda ctx: False)])(mod)
    ir.assert_structural_equal(rejected, mod)


def test_patterns_match_expressions():
    x = relax.Var("x", tensor([2, 2]))
    call = relax.op.nn.relu(x)
    assert is_op("relax.nn.relu")(wildcard()).match(call)
    assert not is_op("relax.exp")(wildcard()).match(call)
    assert (is_op("relax.exp")(wildcard()) | is_op("relax.nn.relu")(wildcard())).match(call)
    assert not (~is_op("relax.nn.relu")(wildcard())).match(call)
    assert is_const().match(relax.const(1.0))
    assert is_tuple_get_item(wildcard(), 0).match(relax.TupleGetItem(relax.Tuple([x, x]), 0))
    assert wildcard().has_dtype("float32").match(x)
    assert not wildcard().has_dtype("int32").match(x)


def test_constants_hold_numpy_arrays():
    data = np.random.rand(3, 5).astype("float32")
    c = relax.const(data)
    np.testing.assert_array_equal(c.data, data)
    assert relax.const(2.5).data.dtype == np.float32
    assert relax.const(3).data.dtype == np.int64


def test_image_namespace_resize2d_builds_and_runs():
    """relax.op.image.resize2d as in TVM: the size a tuple (or one int for a square), attributes
    by keyword; nearest asymmetric floor by 2 repeats each pixel."""
    x = relax.Var("x", relax.TensorStructInfo([1, 3, 4, 4], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            r = bb.emit(relax.op.image.resize2d(x, (8, 8), method="nearest_neighbor",
                                                coordinate_transformation_mode="asymmetric", rounding_method="floor"))
            s = bb.emit(relax.op.image.resize2d(r, 4))
            gv = bb.emit_output(relax.Tuple([r, s]))
        bb.emit_func_output(gv)
    mod = bb.get()
    assert "R.image.resize2d" in mod.script()
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), partita.cpu())
    a = np.arange(48, dtype="float32").reshape(1, 3, 4, 4)
    up, down = vm["main"](a)
    np.testing.assert_array_equal(up.numpy(), a.repeat(2, 2).repeat(2, 3))
    assert down.numpy().shape == (1, 3, 4, 4)


def test_linear_is_matmul_of_the_transposed_weight_plus_bias():
    """relax.op.linear as TVM builds it: the same module as matmul(x, permute_dims(w)) + b, and
    PyTorch's Linear numbers."""
    w_np, b_np = np.random.rand(5, 8).astype("float32"), np.random.rand(5).astype("float32")

    def build(body):
        x = relax.Var("x", relax.TensorStructInfo([4, 8], "float32"))
        bb = relax.BlockBuilder()
        with bb.function("main", [x]):
            with bb.dataflow():
                gv = bb.emit_output(body(bb, x, relax.const(w_np), relax.const(b_np)))
            bb.emit_func_output(gv)
        return bb.get()

    got = build(lambda bb, x, w, b: bb.emit(relax.op.linear(x, w, b)))
    want = build(lambda bb, x, w, b: bb.emit(relax.op.add(
        bb.emit(relax.op.matmul(x, bb.emit(relax.op.permute_dims(w)))), b)))
    ir.assert_structural_equal(got, want)
    x_np = np.random.rand(4, 8).astype("float32")
    out = relax.VirtualMachine(relax.build(got, "llvm"), partita.cpu())["main"](x_np)
    np.testing.assert_allclose(out.numpy(), x_np @ w_np.T + b_np, rtol=1e-5)
