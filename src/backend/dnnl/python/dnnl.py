"""The oneDNN backend's pattern table (``dnnl.*``): conv2d (+ bias, residual add, activation
fused as post-ops; depthwise when groups == channels), matmul / dense (+ bias + activation),
max / avg / adaptive avg pooling, softmax, layer_norm, eltwise unary ops and binary add /
multiply."""
from .._partition import partition_for


def partition_for_dnnl(mod, merge=True, bind_constants=True):
    """Offloads what the registered ``dnnl.*`` patterns match. With ``merge`` (the default),
    neighbouring matches become one function per partition (MergeCompositeFunctions), so the
    runtime keeps activations in oneDNN's blocked layouts between them."""
    return partition_for("dnnl", mod, merge, bind_constants)
