"""partita.relax.backend.cuda.cutlass.partition_for_cutlass: TVM's signature and pattern names,
both composite paths (the codegen's own tests are C++: src/backend/cutlass/tests)."""
import partita
from partita import relax
from partita.relax.backend.cuda.cutlass import partition_for_cutlass

TEXT = """
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((64, 64), dtype="float16"), w: R.Tensor((64, 128), dtype="float16"), b: R.Tensor((128,), dtype="float16"), r: R.Tensor((64, 128), dtype="float16")) -> R.Tensor((64, 128), dtype="float16"):
        with R.dataflow():
            lv: R.Tensor((64, 128), dtype="float16") = R.matmul(x, w, out_dtype="void")
            lv1: R.Tensor((64, 128), dtype="float16") = R.add(lv, b)
            lv2: R.Tensor((64, 128), dtype="float16") = R.nn.gelu(lv1)
            lv3: R.Tensor((64, 128), dtype="float16") = R.multiply(lv2, r)
            R.output(lv3)
        return lv3
"""


def _composites(mod):
    return sorted(f.attrs["Composite"] for gv in mod.get_global_vars()
                  for f in [mod[gv]] if "Composite" in (f.attrs or {}))


def test_annotated_path_wraps_each_composite_in_a_codegen_function():
    mod = partition_for_cutlass(partita.script.from_source(TEXT))
    text = mod.script()
    assert '"Composite": "cutlass.matmul_bias_gelu_residual_multiply"' in text
    assert '"Codegen": "cutlass"' in text


def test_plain_composites_then_merge():
    mod = partition_for_cutlass(partita.script.from_source(TEXT), annotate_codegen=False)
    assert _composites(mod) == ["cutlass.matmul_bias_gelu_residual_multiply"]
    merged = relax.transform.MergeCompositeFunctions()(mod)
    assert '"Codegen": "cutlass"' in merged.script()
