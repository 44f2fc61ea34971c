"""A model with a dynamic batch, partitioned for a CPU backend: every extracted function has its
own symbolic variables (as TVM gives them), and RunCodegen's module receives the batch size at
run time — one build runs batches of several sizes and matches numpy."""
import numpy as np

import partita
from partita import relax, script
from partita.relax.backend.cpu import ccompiler

SOURCE = """
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 16), "float32"), w: R.Tensor((16, 8), "float32"), b: R.Tensor((8,), "float32")) -> R.Tensor(("n", 8), "float32"):
        n = T.int64()
        with R.dataflow():
            m = R.matmul(x, w)
            a = R.add(m, b)
            r = R.nn.relu(a)
            e = R.exp(r)
            R.output(e)
        return e
"""


def test_partitions_declare_their_own_symbolic_variables():
    mod = ccompiler.partition_for_ccompiler(script.from_source(SOURCE))
    assert relax.analysis.well_formed(mod)
    text = mod.script()
    # The merged function declares n; each composite inside it declares its own n_1, before its
    # attributes.
    assert '        n = T.int64()\n        R.func_attr({"Codegen": "ccompiler"})' in text, text
    assert text.count('            n_1 = T.int64()\n            R.func_attr({"Composite": "ccompiler.') >= 2, text
    # Printing and parsing give the same module back.
    assert script.from_source(text).script() == text


def test_symbolic_sizes_reach_the_backend_at_run_time():
    mod = ccompiler.partition_for_ccompiler(script.from_source(SOURCE))
    assert "Codegen" in mod.script()  # the products and the bias add are offloaded
    vm = relax.VirtualMachine(relax.build(mod, target="llvm"), partita.cpu())
    rng = np.random.default_rng(0)
    w = rng.random((16, 8), dtype=np.float32)
    b = rng.random(8, dtype=np.float32)
    for n in (1, 3, 7):
        x = rng.random((n, 16), dtype=np.float32)
        out = vm["main"](x, w, b)
        out = out.numpy() if hasattr(out, "numpy") else np.asarray(out)
        assert out.shape == (n, 8)
        np.testing.assert_allclose(out, np.exp(np.maximum(x @ w + b, 0)), rtol=1e-4)
