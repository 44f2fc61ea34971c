"""The cuDNN backend's pattern table (``cudnn.*``): conv2d with bias, residual add and
activation (relu, gelu, silu, sigmoid, clip) fused, grouped (depthwise when asked), float16 /
bfloat16 / float32, run in NHWC; and ``R.nn.attention`` (float16 / bfloat16) on cuDNN's fused flash
attention, with the matmul-softmax-matmul chain rewritten to it first."""
from .._partition import partition_for, prepare_for
from ...transform import PassContext

DEPTHWISE_CONFIG = "cudnn.depthwise"


def partition_for_cudnn(mod, merge=True, bind_constants=True, depthwise=None):
    """The backend's prepare step (``prepare_for(["cudnn"], mod)``: folds constants, rewrites
    scaled dot-product chains to ``R.nn.attention`` and decomposes again those cuDNN declines),
    then offloads what the ``cudnn.*`` patterns match; with ``merge`` neighbouring matches become
    one function, so activations stay in NHWC between convolutions.

    Placement preferences, each a PassContext config that turns it off: depthwise convolutions
    (groups equal to the input channels) are left to the generated CUDA kernels, which ran them
    faster than cuDNN's engines on the H200 (``depthwise=True`` or ``"cudnn.depthwise": 1``
    offloads them); a clip (ReLU6) is not fused into a convolution, measured likewise
    (``"cudnn.fuse_clip": 1``); an attention with a bias is not taken (``"cudnn.attention_bias": 1``;
    that default's measurement turned out to be of something else, see the C++ header cudnn.h)."""
    if depthwise is not None:
        current = PassContext.current()
        config = dict(current.config)
        config[DEPTHWISE_CONFIG] = bool(depthwise)
        with PassContext(current.opt_level, config, current.required_pass, current.disabled_pass,
                         current.instruments):
            return partition_for_cudnn(mod, merge, bind_constants)
    return partition_for("cudnn", prepare_for(["cudnn"], mod), merge, bind_constants)
