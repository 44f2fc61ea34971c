"""The cuDNN backend's pattern table (``cudnn.*``): conv2d with bias, residual add and
activation (relu, gelu, silu, sigmoid, clip) fused, grouped and depthwise, float16 / bfloat16 /
float32, run in NHWC; and ``R.nn.attention`` (float16 / bfloat16) on cuDNN's fused flash
attention, with the matmul-softmax-matmul chain rewritten to it first."""
from .._partition import partition_for
from ...transform import FoldForInference, RewriteAttention


def partition_for_cudnn(mod, merge=True, bind_constants=True):
    """Folds constants, rewrites scaled dot-product chains to ``R.nn.attention``
    (``relax.transform.RewriteAttention``), then offloads what the ``cudnn.*`` patterns match;
    with ``merge`` neighbouring matches become one function, so activations stay in NHWC
    between convolutions."""
    mod = RewriteAttention()(FoldForInference()(mod))
    return partition_for("cudnn", mod, merge, bind_constants)
