"""The Python API a TVM (v0.26) user writes without looking: IRModule, runtime tensors,
the VM's stateful and timing API, pass pipelines, printing every node."""
import numpy as np
import pytest

import partita
from partita import relax
from partita.script import ir as I, relax as R  # noqa: F401
import partita.script  # noqa: F401


ADD_MUL = """
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32"), y: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):
        with R.dataflow():
            lv: R.Tensor((2, 3), dtype="float32") = R.add(x, y)
            gv: R.Tensor((2, 3), dtype="float32") = R.multiply(lv, y)
            R.output(gv)
        return gv

    @R.function
    def pair(x: R.Tensor((2, 3), dtype="float32")) -> R.Tuple(R.Tensor((2, 3), dtype="float32"), R.Tensor((2, 3), dtype="float32")):
        with R.dataflow():
            a: R.Tensor((2, 3), dtype="float32") = R.add(x, x)
            b: R.Tensor((2, 3), dtype="float32") = R.multiply(x, x)
            gv: R.Tuple(R.Tensor((2, 3), dtype="float32"), R.Tensor((2, 3), dtype="float32")) = (a, b)
            R.output(gv)
        return gv
"""


def module():
    return partita.script.from_source(ADD_MUL)


# ---- IRModule ------------------------------------------------------------------------------

def test_irmodule_functions_and_global_vars():
    mod = module()
    gvs = mod.get_global_vars()
    assert [gv.name_hint for gv in gvs] == ["main", "pair"]
    funcs = mod.functions
    assert set(g.name_hint for g in funcs) == {"main", "pair"}
    main_gv = mod.get_global_var("main")
    assert funcs[main_gv].same_as(mod["main"]) and mod[main_gv].same_as(mod["main"])
    assert mod.global_var_map_["pair"].same_as(mod.get_global_var("pair"))
    assert mod.global_var_map["main"].same_as(main_gv)
    assert "main" in mod and main_gv in mod and "nope" not in mod
    assert relax.GlobalVar("nope") not in mod
    assert partita.IRModule is partita.ir.IRModule


def test_irmodule_setitem_update_func_and_delete():
    mod = module()
    main_gv = mod.get_global_var("main")
    pair = mod["pair"]
    mod["copy"] = pair  # by name: a new GlobalVar
    assert mod.get_global_var("copy").name_hint == "copy" and mod["copy"].same_as(pair)
    mod["main"] = pair  # by name: keeps the existing GlobalVar
    assert mod.get_global_var("main").same_as(main_gv) and mod["main"].same_as(pair)
    gv = relax.GlobalVar("third")
    mod[gv] = pair
    assert mod.get_global_var("third").same_as(gv)
    orig = module()
    mod.update_func(main_gv, orig["main"])
    assert mod["main"].same_as(orig["main"])
    del mod["copy"]
    assert "copy" not in mod
    with pytest.raises(KeyError, match="copy"):
        del mod["copy"]
    clone = mod.clone()
    del clone["third"]
    assert "third" in mod and "third" not in clone
    other = partita.IRModule({"extra": orig["pair"]})
    mod.update(other)
    assert "extra" in mod


def test_irmodule_constructor_takes_functions_attrs_and_global_infos():
    orig = module()
    mod = partita.IRModule({orig.get_global_var("main"): orig["main"], "p": orig["pair"]},
                           attrs={"system_lib_prefix": "lib_"})
    assert [g.name_hint for g in mod.get_global_vars()] == ["main", "p"]
    assert mod.get_attr("system_lib_prefix") == "lib_"
    with pytest.raises(TypeError):
        partita.IRModule({3: orig["main"]})


def test_irmodule_attrs_get_with_without():
    mod = module()
    assert mod.attrs is None and mod.get_attr("opt") is None
    m2 = mod.with_attr("opt", 3).with_attr("name", "net").with_attr("flag", True).with_attr("s", 0.5)
    assert mod.attrs is None, "with_attr copies; the original is unchanged"
    assert m2.attrs == {"opt": 3, "name": "net", "flag": True, "s": 0.5}
    assert m2.get_attr("opt") == 3 and isinstance(m2.get_attr("flag"), bool)
    m3 = m2.without_attr("opt")
    assert m3.get_attr("opt") is None and m2.get_attr("opt") == 3
    m4 = mod.with_attrs({"a": "x", "b": 2})
    assert m4.attrs == {"a": "x", "b": 2}
    assert not partita.ir.structural_equal(mod, m4)
    with pytest.raises(TypeError, match="module attribute \"bad\""):
        mod.with_attr("bad", object())


# ---- tensors --------------------------------------------------------------------------------

def test_nd_array_and_runtime_tensor():
    a = np.arange(6, dtype="float32").reshape(2, 3)
    for make in (partita.nd.array, partita.runtime.tensor):
        t = make(a, partita.cpu())
        assert isinstance(t, partita.runtime.Tensor) and isinstance(t, partita.nd.NDArray)
        assert t.shape == (2, 3) and t.dtype == "float32" and t.dtype == np.float32
        assert t.device == partita.cpu() and str(t.device) == "cpu:0"
        np.testing.assert_array_equal(t.numpy(), a)
        np.testing.assert_array_equal(np.asarray(t), a)
        np.testing.assert_allclose(t, a)  # numpy reads it through __array__
        assert np.asarray(t, dtype="float64").dtype == np.float64
        np.testing.assert_array_equal(np.from_dlpack(t), a)
        assert t[1, 2] == 5.0
    t = partita.nd.array([[1, 2], [3, 4]])
    assert t.dtype == "int64" and t.dtype != "int32" and t.dtype != np.int32


def test_tensor_copyto_copyfrom_and_assign():
    a = np.arange(6, dtype="float32").reshape(2, 3)
    t = partita.runtime.tensor(a)
    c = t.copyto(partita.cpu())
    assert not c.same_buffer(t)
    np.testing.assert_array_equal(c.numpy(), a)
    d = partita.runtime.empty((2, 3), "float32")
    assert t.copyto(d) is d
    np.testing.assert_array_equal(d.numpy(), a)
    d.copyfrom(np.ones((2, 3)))
    np.testing.assert_array_equal(d.numpy(), np.ones((2, 3), "float32"))
    d[:] = np.full((2, 3), 7, "float32")
    np.testing.assert_array_equal(d.numpy(), np.full((2, 3), 7, "float32"))
    d[:] = t
    np.testing.assert_array_equal(d.numpy(), a)
    with pytest.raises(ValueError, match="shape"):
        d.copyfrom(np.ones((3, 2)))
    with pytest.raises(ValueError):
        d[0] = a
    assert "shape=(2, 3)" in repr(t) and "[[0. 1. 2.]" in str(t)
    assert partita.runtime.from_dlpack(a).data_ptr == a.ctypes.data


def test_device_spellings():
    assert partita.device("cpu", 0) == partita.cpu()
    assert partita.device("cuda", 1) == partita.cuda(1)
    assert partita.device("cuda:2") == partita.cuda(2)
    assert partita.runtime.device(1, 0) == partita.cpu()


# ---- the VM ---------------------------------------------------------------------------------

def build():
    return relax.build(module())


def test_vm_results_are_runtime_tensors_numpy_code_still_works():
    vm = relax.VirtualMachine(build(), partita.cpu())
    x = np.ones((2, 3), "float32")
    y = np.full((2, 3), 2, "float32")
    out = vm["main"](partita.nd.array(x), partita.nd.array(y))
    assert isinstance(out, partita.runtime.Tensor)
    assert out.shape == (2, 3) and out.dtype == "float32" and out.device == partita.cpu()
    np.testing.assert_allclose(out.numpy(), (x + y) * y)
    np.testing.assert_allclose(out, (x + y) * y)
    a, b = vm["pair"](x)
    assert isinstance(a, partita.runtime.Tensor) and isinstance(b, partita.runtime.Tensor)
    np.testing.assert_allclose(a.numpy(), x + x)


def test_vm_stateful_api():
    vm = relax.VirtualMachine(build(), partita.cpu())
    x = np.ones((2, 3), "float32")
    y = np.full((2, 3), 3, "float32")
    with pytest.raises(ValueError, match="set_input was not called"):
        vm.invoke_stateful("main")
    vm.set_input("main", x, y)
    with pytest.raises(ValueError, match="invoke_stateful was not called"):
        vm.get_outputs("main")
    vm.invoke_stateful("main")
    np.testing.assert_allclose(vm.get_outputs("main").numpy(), (x + y) * y)
    vm.set_input("main", y=x, x=y)  # by parameter name
    vm.invoke_stateful("main")
    np.testing.assert_allclose(vm.get_outputs("main").numpy(), (y + x) * x)
    vm.set_input("pair", x)
    vm.invoke_stateful("pair")
    out = vm.get_outputs("pair")
    assert isinstance(out, tuple) and len(out) == 2
    with pytest.raises(TypeError, match="takes 2 arguments"):
        vm.set_input("main", x)
    with pytest.raises(TypeError, match="no parameter named z"):
        vm.set_input("main", x, z=y)
    with pytest.raises(KeyError):
        vm.set_input("absent", x)


def test_vm_save_function_and_time_evaluator():
    vm = relax.VirtualMachine(build(), partita.cpu())
    x = np.ones((2, 3), "float32")
    vm.save_function("main", "main_saved", x, x)
    np.testing.assert_allclose(vm["main_saved"]().numpy(), (x + x) * x)
    res = vm.time_evaluator("main", partita.cpu(), number=3, repeat=4)(x, x)
    assert isinstance(res, partita.runtime.BenchmarkResult)
    assert len(res.results) == 4 and 0 < res.min <= res.mean <= res.max
    assert "mean (ms)" in str(res)
    vm.set_input("main", x, x)
    res = vm.time_evaluator("invoke_stateful", partita.cpu(), number=2, min_repeat_ms=5)("main")
    assert len(res.results) == 1 and res.results[0] > 0
    res = vm.time_evaluator("main_saved", partita.cpu(), number=1)()
    assert res.mean > 0


def test_vm_refuses_what_is_not_an_executable():
    with pytest.raises(ValueError, match="expects an Executable"):
        relax.VirtualMachine(module(), partita.cpu())


# ---- passes and pipelines -------------------------------------------------------------------

def test_module_pass_decorator_on_function_and_class():
    seen = []

    @partita.transform.module_pass(opt_level=0, name="Record")
    def record(mod, ctx):
        seen.append(ctx.opt_level)
        return mod

    @partita.transform.module_pass(opt_level=0, name="AddAttr")
    class AddAttr:
        def __init__(self, value):
            self.value = value

        def transform_module(self, mod, _ctx):
            return mod.with_attr("tag", self.value)

    with partita.transform.PassContext(opt_level=3):
        assert partita.transform.PassContext.current().opt_level == 3
        out = partita.transform.Sequential([record, AddAttr("hi")])(module())
    assert seen == [3] and out.get_attr("tag") == "hi"
    assert record.info.name == "Record"
    assert partita.ir.transform.Sequential is partita.transform.Sequential


def test_sequential_respects_opt_level():
    ran = []
    high = partita.transform.module_pass(lambda m: ran.append("high") or m, opt_level=3, name="High")
    low = partita.transform.module_pass(lambda m: ran.append("low") or m, opt_level=1, name="Low")
    seq = partita.transform.Sequential([high, low])
    with partita.transform.PassContext(opt_level=2):
        seq(module())
    assert ran == ["low"]
    with partita.transform.PassContext(opt_level=3):
        seq(module())
    assert ran == ["low", "high", "low"]


# ---- printing -------------------------------------------------------------------------------

def test_every_node_prints():
    mod = module()
    main = mod["main"]
    seq = main.body
    text = repr(seq)
    assert "R.Object" not in text
    assert text.startswith("with R.dataflow():") and text.rstrip().endswith("gv")
    assert "lv: R.Tensor((2, 3), dtype=\"float32\") = R.add(x, y)" in text
    block = seq.blocks[0]
    assert repr(block).startswith("with R.dataflow():") and "R.output(gv)" in repr(block)
    binding = block.bindings[0]
    assert repr(binding).startswith("lv: R.Tensor((2, 3)")
    assert repr(binding.value) == "R.add(x, y)"
    assert repr(main.params[0]) == "x"
    assert repr(main.params[0].struct_info) == 'R.Tensor((2, 3), dtype="float32")'
    assert repr(mod).startswith("# from partita.script import ir as I")
    assert "@R.function" in repr(main)


def test_bind_params_from_numpy_by_name_and_var():
    text = """
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 4), dtype="float32"), w: R.Tensor((4, 3), dtype="float32")) -> R.Tensor(("n", 3), dtype="float32"):
        n = T.int64()
        with R.dataflow():
            gv: R.Tensor((n, 3), dtype="float32") = R.matmul(x, w)
            R.output(gv)
        return gv
"""
    mod = partita.script.from_source(text)
    w = np.arange(12, dtype="float32").reshape(4, 3)
    bound = relax.transform.BindParams("main", {"w": w})(mod)
    assert [p.name_hint for p in bound["main"].params] == ["x"]
    x = np.ones((2, 4), "float32")
    out = relax.VirtualMachine(relax.build(bound), partita.cpu())["main"](x)
    np.testing.assert_allclose(out.numpy(), x @ w)
    by_var = relax.transform.BindParams("main", {mod["main"].params[1]: partita.nd.array(w)})(mod)
    partita.ir.assert_structural_equal(by_var, bound)
    with pytest.raises(ValueError, match="no parameter named \"q\""):
        relax.transform.BindParams("main", {"q": w})(mod)
    with pytest.raises(TypeError, match="params must be a dict"):
        relax.build(mod, "llvm", True)
    # relax.build(params=...) binds them too, as TVM's.
    out = relax.VirtualMachine(relax.build(mod, params={"w": w}), partita.cpu())["main"](x)
    np.testing.assert_allclose(out.numpy(), x @ w)


def test_to_mixed_precision_runs_and_stays_close():
    # float16 matmul runs on the GPU backends (the host kernels compute float16 element-wise
    # only), so the numeric half needs a CUDA device; the rewrite itself is checked everywhere
    # (and in tests/cpp/transform/to_mixed_precision_test.cc against TVM's expected modules).
    text = """
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 16), dtype="float32"), w: R.Tensor((16, 8), dtype="float32"), b: R.Tensor((8,), dtype="float32"), m: R.Tensor((8, 5), dtype="float32")) -> R.Tensor((2, 5), dtype="float32"):
        with R.dataflow():
            h: R.Tensor((2, 8), dtype="float32") = R.matmul(x, w)
            hb: R.Tensor((2, 8), dtype="float32") = R.add(h, b)
            r: R.Tensor((2, 8), dtype="float32") = R.nn.relu(hb)
            y: R.Tensor((2, 5), dtype="float32") = R.matmul(r, m)
            gv: R.Tensor((2, 5), dtype="float32") = R.nn.softmax(y, axis=-1)
            R.output(gv)
        return gv
"""
    mod = partita.script.from_source(text)
    mixed = relax.transform.ToMixedPrecision(out_dtype="float32")(mod)
    printed = mixed.script()
    assert 'R.astype(x, dtype="float16")' in printed and 'out_dtype="float32"' in printed
    assert "R.nn.softmax(" in printed
    assert mixed["main"].ret_struct_info.dtype == "float32"
    sig = relax.transform.ToMixedPrecision(fp16_input_names=["w"])(mod)["main"]
    assert [p.struct_info.dtype for p in sig.params] == ["float32", "float16", "float32", "float32"]
    if "cuda" not in partita.target.list_target_kinds() or not partita.cuda(0).exist:
        pytest.skip("float16 matmul needs the cuda target and a CUDA device")
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(s).astype("float32") for s in ((2, 16), (16, 8), (8,), (8, 5))]
    ref = relax.VirtualMachine(relax.build(mod), partita.cpu())["main"](*args).numpy()
    out = relax.VirtualMachine(relax.build(mixed, "cuda"), partita.cuda(0))["main"](*args)
    assert out.dtype == "float32" and out.device == partita.cuda(0)
    np.testing.assert_allclose(out.numpy(), ref, rtol=2e-2, atol=2e-3)


def test_get_pipeline_zero_fuses_and_builds():
    mod = module()
    zero = relax.get_pipeline("zero")
    assert isinstance(zero, partita.transform.Pass)
    fused = partita.transform.Sequential([zero])(mod)
    names = [gv.name_hint for gv in fused.get_global_vars()]
    assert "fused_relax_add_relax_multiply" in names, names
    assert fused["fused_relax_add_relax_multiply"].attrs["Primitive"] == 1
    x = np.ones((2, 3), "float32")
    y = np.full((2, 3), 2, "float32")
    for m in (fused, mod):  # relax.build runs FuseOps' host groups as their operators
        out = relax.VirtualMachine(relax.build(m), partita.cpu())["main"](x, y)
        np.testing.assert_allclose(out.numpy(), (x + y) * y)
    out = relax.VirtualMachine(relax.build(mod, relax_pipeline="zero"), partita.cpu())["main"](x, y)
    np.testing.assert_allclose(out.numpy(), (x + y) * y)
    with partita.transform.PassContext(opt_level=0):
        assert partita.ir.structural_equal(relax.transform.FuseOps()(mod), mod)
    with pytest.raises(ValueError, match="Unknown pre-built pipeline"):
        relax.get_pipeline("nope")
    attached = relax.get_pipeline("default_build")(fused)
    assert attached["fused_relax_add_relax_multiply"].attrs["global_symbol"] == "fused_relax_add_relax_multiply"

    @relax.pipeline.register_pipeline("test_only_cse")
    def _cse():
        return relax.transform.EliminateCommonSubexpr()
    assert isinstance(relax.get_pipeline("test_only_cse"), partita.transform.Pass)


def test_global_func_registry():
    assert partita.get_global_func("relax.ext.no_such_codegen", True) is None
    with pytest.raises(ValueError, match="Cannot find global function relax.ext.nope"):
        partita.get_global_func("relax.ext.nope")

    @partita.register_func("test.tvm_api.double")
    def double(x):
        return 2 * x
    assert partita.get_global_func("test.tvm_api.double")(4) == 8
    with pytest.raises(ValueError, match="already registered"):
        partita.register_func("test.tvm_api.double", double)
    partita.register_func("test.tvm_api.double", lambda x: 3 * x, override=True)
    assert partita.get_global_func("test.tvm_api.double")(4) == 12
    assert "test.tvm_api.double" in partita.list_global_func_names()


@partita.script.ir_module
class DecoratedLikeTVM:
    @R.function
    def main(data: R.Tensor((1, 3, 8, 8), "float32"), weight: R.Tensor((4, 3, 3, 3), "float32")) -> R.Tensor((1, 4, 6, 6), "float32"):
        with R.dataflow():
            conv = relax.op.nn.conv2d(data, weight)
            out = relax.op.nn.relu(conv)
            R.output(out)
        return out


def test_tvm_script_spellings_in_decorated_sources():
    # @tvm.script.ir_module and relax.op.X (the Python operator functions) inside TVMScript.
    text = DecoratedLikeTVM.script()
    assert "R.nn.conv2d(data, weight" in text and "R.nn.relu(conv)" in text
    # Columns are kept: an error on such a line points where the user wrote it.
    src = "\n".join([
        "@partita.script.ir_module",
        "class Bad:",
        "    @R.function",
        "    def main(x: R.Tensor((2,), \"float32\")) -> R.Tensor((2,), \"float32\"):",
        "        y = relax.op.not_an_op(x)",
        "        return y",
    ])
    from partita.script import _source
    fixed = _source.normalize_relax_op_calls(_source.normalize_decorators(src, globals()), globals())
    assert fixed.splitlines()[0].startswith("@I.ir_module")
    line = fixed.splitlines()[4]
    assert line.index("not_an_op") == src.splitlines()[4].index("not_an_op")


def test_if_prints_as_a_statement():
    src = """
@I.ir_module
class Module:
    @R.function
    def foo(c: R.Tensor((), dtype="bool"), x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        a: R.Tensor((4,), dtype="float32") = R.exp(x)
        if c:
            b: R.Tensor((4,), dtype="float32") = R.add(a, x)
            r: R.Tensor((4,), dtype="float32") = b
        else:
            r: R.Tensor((4,), dtype="float32") = x
        return r
"""
    branch = partita.script.from_source(src)["foo"].body.blocks[0].bindings[1].value
    assert isinstance(branch, relax.If)
    text = repr(branch)
    assert "R.Object" not in text
    lines = text.splitlines()
    assert lines[0] == "if c:" and "else:" in lines
    assert '    b: R.Tensor((4,), dtype="float32") = R.add(a, x)' in lines
    assert lines[-1] == "    x"


def test_tvm_compile_entry_point():
    ex = partita.compile(module(), target="llvm")
    vm = relax.VirtualMachine(ex, partita.cpu())
    x = np.ones((2, 3), "float32")
    np.testing.assert_allclose(vm["main"](x, x).numpy(), (x + x) * x)
    ex = partita.compile(module(), relax_pipeline=relax.get_pipeline("zero"))
    np.testing.assert_allclose(relax.VirtualMachine(ex, partita.cpu())["main"](x, x).numpy(), (x + x) * x)


def test_eliminate_common_subexpr_respects_dataflow_scopes():
    src = """
@I.ir_module
class Module:
    @R.function
    def foo(x: R.Tensor((2, 3), dtype="float32"), y: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):
        with R.dataflow():
            lv0: R.Tensor((2, 3), dtype="float32") = R.subtract(x, y)
            gv0: R.Tensor((2, 3), dtype="float32") = R.add(x, y)
            R.output(gv0)
        with R.dataflow():
            lv1: R.Tensor((2, 3), dtype="float32") = R.subtract(x, y)
            lv2: R.Tensor((2, 3), dtype="float32") = R.add(x, y)
            gv1: R.Tensor((2, 3), dtype="float32") = R.multiply(lv1, lv2)
            R.output(gv1)
        return gv1
"""
    out = relax.transform.EliminateCommonSubexpr()(partita.script.from_source(src)).script()
    # gv0 (an output) is visible in the second block; lv0 (a dataflow variable) is not.
    assert 'lv1: R.Tensor((2, 3), dtype="float32") = R.subtract(x, y)' in out
    assert 'lv2: R.Tensor((2, 3), dtype="float32") = gv0' in out
    assert "R.multiply(lv1, gv0)" in out


def test_dead_code_elimination_entry_functions():
    src = """
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2,), dtype="float32")) -> R.Tensor((2,), dtype="float32"):
        unused: R.Tensor((2,), dtype="float32") = R.exp(x)
        gv: R.Tensor((2,), dtype="float32") = R.add(x, x)
        return gv

    @R.function(private=True)
    def helper(x: R.Tensor((2,), dtype="float32")) -> R.Tensor((2,), dtype="float32"):
        return x

    @R.function(private=True)
    def kept(x: R.Tensor((2,), dtype="float32")) -> R.Tensor((2,), dtype="float32"):
        return x
"""
    mod = partita.script.from_source(src)
    out = relax.transform.DeadCodeElimination()(mod)
    assert "helper" not in out and "kept" not in out and "R.exp" not in out.script()
    out = relax.transform.DeadCodeElimination(["kept"])(mod)
    assert "kept" in out and "helper" not in out


def test_function_attrs_and_module_from_expr():
    f = module()["main"]
    g = f.with_attrs({"Primitive": 1, "note": "x"})
    assert g.attrs["Primitive"] == 1 and g.attrs["note"] == "x" and "note" not in f.attrs
    assert "note" not in g.without_attr("note").attrs
    mod = partita.IRModule.from_expr(f)
    assert [gv.name_hint for gv in mod.get_global_vars()] == ["main"]
    x = relax.Var("x", relax.TensorStructInfo([2, 3], "float32"))
    expr = relax.op.add(x, x)
    mod2 = partita.IRModule.from_expr(expr)
    assert [p.name_hint for p in mod2["main"].params] == ["x"]
    a = np.ones((2, 3), "float32")
    out = relax.VirtualMachine(relax.build(mod2), partita.cpu())["main"](a)
    np.testing.assert_allclose(out.numpy(), a + a)
