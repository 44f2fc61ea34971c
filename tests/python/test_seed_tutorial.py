"""The seed tutorial's code, with ``tvm`` replaced by ``partita``, runs unchanged."""
import numpy as np  # noqa: F401 - imported by the tutorial

import partita  # noqa: F401
from partita import relax
from partita.relax.dpl.pattern import (
    is_op,
    is_tuple_get_item,  # noqa: F401
    make_fused_bias_activation_pattern,  # noqa: F401
    wildcard,
)
from partita.relax.transform import PatternCheckContext  # noqa: F401
from partita.script import ir as I  # noqa: F401
from partita.script import relax as R  # noqa: F401
from partita.script import tir as T  # noqa: F401


def build_seed_module():
    x = relax.Var("x", relax.TensorStructInfo([10, 10], "float32"))
    y = relax.Var("y", relax.TensorStructInfo([10, 10], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, y]):
        with bb.dataflow():
            lv0 = bb.emit(relax.op.multiply(x, y))
            gv = bb.emit_output(lv0)
        bb.emit_func_output(gv)
    mod = bb.get()
    mod = relax.transform.CanonicalizeBindings()(mod)
    return mod


def test_both_paths_give_the_same_interface_to_run_codegen(capsys):
    mod = build_seed_module()
    mod.show()
    patterns = [("cutlass.multiply", is_op("relax.multiply")(wildcard(), wildcard()))]
    mod1 = relax.transform.FuseOpsByPattern(patterns, bind_constants=True, annotate_codegen=True)(mod)
    assert partita.relax.analysis.well_formed(mod1)
    mod1.show()
    mod2 = relax.transform.FuseOpsByPattern(patterns, bind_constants=True, annotate_codegen=False)(mod)
    mod2 = relax.transform.MergeCompositeFunctions()(mod2)
    assert partita.relax.analysis.well_formed(mod2)
    mod2.show()
    printed = capsys.readouterr().out
    assert "def fused_relax_multiply_cutlass(" in printed
    assert "def fused_relax_multiply1_cutlass(" in printed
    # Both paths end with one public "Codegen" function called from main.
    for m in (mod1, mod2):
        codegen = [gv.name_hint for gv in m.get_global_vars() if gv.name_hint != "main"]
        assert len(codegen) == 1
        assert m[codegen[0]].attrs["Codegen"] == "cutlass"


def test_partition_for_cutlass_matches_the_explicit_passes():
    from partita.relax.backend.cuda.cutlass import partition_for_cutlass
    mod = build_seed_module()
    patterns = [("cutlass.multiply", is_op("relax.multiply")(wildcard(), wildcard()))]
    explicit = relax.transform.MergeCompositeFunctions()(relax.transform.FuseOpsByPattern(patterns)(mod))
    # TVM's signature: annotate_codegen=False gives the plain composites of path 2.
    merged = relax.transform.MergeCompositeFunctions()(partition_for_cutlass(mod, annotate_codegen=False))
    partita.ir.assert_structural_equal(merged, explicit)
    annotated = relax.transform.FuseOpsByPattern(patterns, annotate_codegen=True)(mod)
    partita.ir.assert_structural_equal(partition_for_cutlass(mod), annotated)
