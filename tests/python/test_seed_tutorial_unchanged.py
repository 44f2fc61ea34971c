"""The seed tutorial (shared/seeds/003_0bb08eff7f3ada31.txt), its code with ``tvm`` replaced by
``partita`` and nothing else changed, runs and prints exactly the modules the tutorial shows.

The code and the printed modules are copied here verbatim (only ``tvm`` -> ``partita``), so the
test does not depend on the seeds folder. Its first lines import ``partition_for_cublas``: where
the cublas backend's wrapper is not built the test says so and skips.
"""
import contextlib
import importlib
import io

import pytest

TUTORIAL_CODE = '''
import numpy as np

import partita
from partita import relax
from partita.relax.backend.cuda.cublas import partition_for_cublas
from partita.relax.backend.cuda.cutlass import partition_for_cutlass
from partita.relax.dpl.pattern import (
    is_op,
    is_tuple_get_item,
    make_fused_bias_activation_pattern,
    wildcard,
)
from partita.relax.transform import PatternCheckContext
from partita.script import ir as I
from partita.script import relax as R
from partita.script import tir as T
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

mod.show()
patterns = [("cutlass.multiply", is_op("relax.multiply")(wildcard(), wildcard()))]
mod1 = relax.transform.FuseOpsByPattern(patterns, bind_constants=True, annotate_codegen=True)(
    mod
)
assert partita.relax.analysis.well_formed(mod1)
mod1.show()
mod2 = relax.transform.FuseOpsByPattern(patterns, bind_constants=True, annotate_codegen=False)(
    mod
)
mod2 = relax.transform.MergeCompositeFunctions()(mod2)
assert partita.relax.analysis.well_formed(mod2)
mod2.show()
'''

# What path 1 and path 2 print: the multiply offloaded to cutlass, the composite a local
# function of the Codegen function; the two differ in the names they give.
_OFFLOADED = '''
# from partita.script import ir as I
# from partita.script import relax as R

@I.ir_module
class Module:
    @R.function
    def {fused}(x: R.Tensor((10, 10), dtype="float32"), y: R.Tensor((10, 10), dtype="float32")) -> R.Tensor((10, 10), dtype="float32"):
        R.func_attr({{"Codegen": "cutlass"}})
        # from partita.script import relax as R

        @R.function
        def {local}(x_1: R.Tensor((10, 10), dtype="float32"), y_1: R.Tensor((10, 10), dtype="float32")) -> R.Tensor((10, 10), dtype="float32"):
            R.func_attr({{"Composite": "cutlass.multiply"}})
            with R.dataflow():
                {inner}: R.Tensor((10, 10), dtype="float32") = R.multiply(x_1, y_1)
                R.output({inner})
            return {inner}

        {out}: R.Tensor((10, 10), dtype="float32") = {local}(x, y)
        return {out}

    @R.function
    def main(x: R.Tensor((10, 10), dtype="float32"), y: R.Tensor((10, 10), dtype="float32")) -> R.Tensor((10, 10), dtype="float32"):
        cls = Module
        with R.dataflow():
            gv: R.Tensor((10, 10), dtype="float32") = cls.{fused}(x, y)
            R.output(gv)
        return gv
'''

EXPECTED_PRINTS = [
'''
# from partita.script import ir as I
# from partita.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((10, 10), dtype="float32"), y: R.Tensor((10, 10), dtype="float32")) -> R.Tensor((10, 10), dtype="float32"):
        with R.dataflow():
            gv: R.Tensor((10, 10), dtype="float32") = R.multiply(x, y)
            R.output(gv)
        return gv
''',
    _OFFLOADED.format(fused="fused_relax_multiply_cutlass", local="local_func", inner="gv", out="output"),
    _OFFLOADED.format(fused="fused_relax_multiply1_cutlass", local="gv", inner="gv_1", out="gv_1"),
]


def _normalize(text):
    return "\n".join(line.rstrip() for line in text.strip().splitlines())


def test_seed_tutorial_runs_unchanged_and_prints_what_it_shows():
    for name in ("partita.relax.backend.cuda.cublas", "partita.relax.backend.cuda.cutlass"):
        try:
            importlib.import_module(name)
        except ImportError as err:
            pytest.skip(f"the tutorial imports {name}, which this build lacks ({err})")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(TUTORIAL_CODE, "seed_tutorial.py", "exec"), {"__name__": "seed_tutorial"})
    shown = printed.getvalue()
    # mod.show() three times: the original, path 1, path 2.
    marker = "# from partita.script import ir as I"
    starts = [i for i in range(len(shown)) if shown.startswith(marker, i)]
    assert len(starts) == 3, shown
    parts = [shown[a:b] for a, b in zip(starts, starts[1:] + [len(shown)])]
    for got, want in zip(parts, EXPECTED_PRINTS):
        assert _normalize(got) == _normalize(want)
