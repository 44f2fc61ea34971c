"""relax.nn.attention from Python: TVM's signature (a bias makes it attention_bias), the text
format, the RewriteAttention pass, and the cudnn partitioning where the backend is built."""
import importlib.util

import numpy as np
import pytest

import partita
from partita import relax
from partita.relax import op
from partita.script import relax as R  # noqa: F401


def _var(name, shape, dtype="float16"):
    return relax.Var(name, relax.TensorStructInfo(shape, dtype))


def test_bias_makes_attention_bias_and_prints_as_tvm():
    q, k, v, b = _var("q", (1, 8, 2, 16)), _var("k", (1, 8, 2, 16)), _var("v", (1, 8, 2, 16)), _var("b", (1, 2, 8, 8))
    plain = op.nn.attention(q, k, v, scale=0.25, causal_mask="TopLeft")
    assert plain.op.name == "relax.nn.attention"
    biased = op.nn.attention(q, k, v, b)
    assert biased.op.name == "relax.nn.attention_bias"
    bb = relax.BlockBuilder()
    with bb.function("main", [q, k, v, b]):
        with bb.dataflow():
            out = bb.emit_output(op.nn.attention(q, k, v, b, scale=0.125))
        bb.emit_func_output(out)
    text = bb.get().script()
    assert "R.nn.attention_bias(q, k, v, b, scale=T.float32(0.125), causal_mask=None, window_size=None)" in text


def test_rewrite_attention_from_python():
    text = _CHAIN
    mod = partita.script.from_source(text)
    after = relax.transform.RewriteAttention()(mod)
    assert "R.nn.attention(q, k, v, scale=T.float32(0.5)" in after.script()
    rng = np.random.default_rng(0)
    args = [rng.standard_normal((1, 4, 2, 8)).astype("float32") for _ in range(3)]
    want = relax.VirtualMachine(relax.build(mod), partita.cpu())["main"](*args)
    got = relax.VirtualMachine(relax.build(after), partita.cpu())["main"](*args)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-6)


_CHAIN = '''
@I.ir_module
class Module:
    @R.function
    def main(q: R.Tensor((1, 4, 2, 8), dtype="float32"), k: R.Tensor((1, 4, 2, 8), dtype="float32"), v: R.Tensor((1, 4, 2, 8), dtype="float32")) -> R.Tensor((1, 4, 2, 8), dtype="float32"):
        with R.dataflow():
            lv: R.Tensor((1, 2, 4, 8), dtype="float32") = R.permute_dims(q, axes=[0, 2, 1, 3])
            lv1: R.Tensor((1, 2, 8, 4), dtype="float32") = R.permute_dims(k, axes=[0, 2, 3, 1])
            lv2: R.Tensor((1, 2, 4, 8), dtype="float32") = R.permute_dims(v, axes=[0, 2, 1, 3])
            lv3: R.Tensor((1, 2, 4, 4), dtype="float32") = R.matmul(lv, lv1, out_dtype="void")
            lv4: R.Tensor((1, 2, 4, 4), dtype="float32") = R.multiply(lv3, R.const(0.5, "float32"))
            lv6: R.Tensor((1, 2, 4, 4), dtype="float32") = R.nn.softmax(lv4, axis=-1)
            lv7: R.Tensor((1, 2, 4, 8), dtype="float32") = R.matmul(lv6, lv2, out_dtype="void")
            gv: R.Tensor((1, 4, 2, 8), dtype="float32") = R.permute_dims(lv7, axes=[0, 2, 1, 3])
            R.output(gv)
        return gv
'''

@pytest.mark.skipif(importlib.util.find_spec("partita.relax.backend.cuda.cudnn") is None,
                    reason="the cudnn backend is not built here (no CUDA toolkit / cuDNN / frontend headers)")
def test_partition_for_cudnn_rewrites_and_offloads_attention():
    from partita.relax.backend.cuda.cudnn import partition_for_cudnn

    text = _CHAIN.replace("float32", "float16")
    after = partition_for_cudnn(partita.script.from_source(text))
    printed = after.script()
    assert '"Composite": "cudnn.attention"' in printed
    assert "R.nn.softmax" not in printed


@pytest.mark.skipif(importlib.util.find_spec("partita.relax.backend.cuda.cudnn") is None,
                    reason="the cudnn backend is not built here (no CUDA toolkit / cuDNN / frontend headers)")
def test_partition_for_cudnn_is_the_prepare_step_then_the_patterns():
    # One implementation: Python's partition_for_cudnn runs the C++ prepare step, so an attention
    # cuDNN declines (float32 here) is given back as matmul and softmax, as `partita compile` does.
    from partita.relax.backend import prepare_for
    from partita.relax.backend.cuda.cudnn import partition_for_cudnn
    prepared = prepare_for(["cudnn"], partita.script.from_source(_CHAIN)).script()
    assert "R.nn.attention" not in prepared and "R.nn.softmax" in prepared
    assert "cudnn.attention" not in partition_for_cudnn(partita.script.from_source(_CHAIN)).script()
    # In float16 cuDNN takes it.
    half = _CHAIN.replace("float32", "float16")
    assert "R.nn.attention" in prepare_for(["cudnn"], partita.script.from_source(half)).script()
