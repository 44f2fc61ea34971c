"""The text format from Python: decorators, from_source, errors, printing of nodes."""
import textwrap

import numpy as np
import pytest

import partita
from partita import ir, relax, script
from partita.script import ir as I
from partita.script import relax as R
from partita.script import tir as T


@I.ir_module
class Symbolic:
    @R.function
    def main(x: R.Tensor(("n", 4), dtype="float32"), w: R.Tensor((4, 8), dtype="float32")) -> R.Tensor(("n", 8), dtype="float32"):
        n = T.int64()
        with R.dataflow():
            y: R.Tensor((n, 8), dtype="float32") = R.matmul(x, w, out_dtype=None)
            z: R.Tensor((n, 8), dtype="float32") = R.nn.relu(y)
            R.output(z)
        return z


def test_decorated_class_becomes_a_module():
    assert isinstance(Symbolic, ir.IRModule)
    main = Symbolic["main"]
    assert [p.name_hint for p in main.params] == ["x", "w"]
    text = Symbolic.script()
    assert "n = T.int64()" in text
    ir.assert_structural_equal(script.from_source(text), Symbolic)


def test_standalone_function_decorator():
    @R.function
    def add_one(x: R.Tensor((3,), dtype="float32")) -> R.Tensor((3,), dtype="float32"):
        y: R.Tensor((3,), dtype="float32") = R.add(x, R.const(1.0, "float32"))
        return y

    assert isinstance(add_one, relax.Function)
    assert add_one.attrs["global_symbol"] == "add_one"


def test_parse_errors_name_line_and_column():
    text = textwrap.dedent("""
        @I.ir_module
        class Module:
            @R.function
            def main(x: R.Tensor((2,), dtype="float32")) -> R.Tensor((2,), dtype="float32"):
                y: R.Tensor((2,), dtype="float32") = R.not_an_op(x)
                return y
    """)
    with pytest.raises(partita.PartitaError, match=r"bad.py:6:\d+"):
        script.from_source(text, "bad.py")


def test_type_errors_in_text_are_reported():
    text = textwrap.dedent("""
        @I.ir_module
        class Module:
            @R.function
            def main(x: R.Tensor((2, 3), dtype="float32"), y: R.Tensor((4,), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):
                z: R.Tensor((2, 3), dtype="float32") = R.add(x, y)
                return z
    """)
    with pytest.raises(partita.PartitaError, match="broadcast"):
        script.from_source(text)


def test_large_constants_round_trip_through_metadata():
    w = np.arange(12, dtype="float32").reshape(3, 4)
    x = relax.Var("x", relax.TensorStructInfo([2, 3], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.emit_output(relax.op.matmul(x, relax.const(w)))
        bb.emit_func_output(y)
    mod = bb.get()
    text = mod.script()
    assert 'metadata["relax.expr.Constant"][0]' in text
    back = script.from_source(text)
    ir.assert_structural_equal(back, mod)
    const = back["main"].body.blocks[0].bindings[0].value.args[1]
    np.testing.assert_array_equal(const.data, w)


def test_nodes_print_as_tvmscript():
    x = relax.Var("x", relax.TensorStructInfo([2, 2], "float32"))
    assert "R.Tensor((2, 2), dtype=\"float32\")" in repr(x.struct_info)
