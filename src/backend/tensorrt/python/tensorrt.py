"""TensorRT's pattern table and ``partition_for_tensorrt`` (TVM v0.26's
``tvm.relax.backend.contrib.tensorrt``), for the BYOC code written against it.

As in TVM, the table is pure Python: importing this module registers the ``tensorrt.<op>``
patterns (the composite names TVM's TensorRT converters are keyed by), and
``partition_for_tensorrt`` groups what they match into functions whose ``"Codegen"`` is
``"tensorrt"``. Partita has no TensorRT codegen or runtime (there is no TensorRT on its
machines), so ``get_global_func("relax.ext.tensorrt", True)`` is None and building such a
module for its functions fails at RunCodegen, naming the missing codegen, as a TVM build
without ``USE_TENSORRT_CODEGEN`` does.

Differences from TVM's module: a pattern whose operator Partita does not define
(``relax.nn.batch_flatten``, ``relax.layout_transform``, the 3-d pools and convolutions,
``relax.nn.conv1d``) is left out, since there is nothing it could match.
"""
from partita import _ffi
from partita.ir import IRModule
from partita.relax.dpl.pattern import is_op, wildcard
from partita.relax.transform import FuseOpsByPattern, MergeCompositeFunctions, PatternCheckContext

from ..pattern_registry import get_patterns_with_prefix, register_patterns

_KNOWN_OPS = set(_ffi.list_ops())


def _op_patterns(num_args, names):
    """``tensorrt.<name>`` patterns of ``relax.<op>`` called with ``num_args`` wildcard arguments,
    for each entry ``name`` (``op`` the same) or ``(name, op)`` whose operator Partita defines."""
    patterns = []
    for entry in names:
        name, op = entry if isinstance(entry, tuple) else (entry, entry)
        if "relax." + op in _KNOWN_OPS:
            args = [wildcard() for _ in range(num_args)]
            patterns.append(("tensorrt." + name, is_op("relax." + op)(*args), {}))
    return patterns


def _resize2d_check(context: PatternCheckContext) -> bool:
    """The subset of resize2d that TVM's TensorRT converter implements exactly (TVM's check)."""
    data_expr = context.annotated_expr["data"]
    size_expr = context.annotated_expr["size"]
    resize = context.annotated_expr["root"]
    bindings = dict(context.matched_bindings)
    # Follow an ANF binding when the static ShapeExpr was assigned to a variable.
    while size_expr in bindings:
        size_expr = bindings[size_expr]
    if not isinstance(size_expr, _ffi.ShapeExpr) or len(size_expr.values) != 2:
        return False
    if not all(isinstance(dim, _ffi.IntImm) and dim.value > 0 for dim in size_expr.values):
        return False
    attrs = resize.attrs
    if attrs["layout"] != "NCHW":
        return False
    data_sinfo = data_expr.struct_info
    if not isinstance(data_sinfo, _ffi.TensorStructInfo) or data_sinfo.ndim != 4 or data_sinfo.shape is None:
        return False
    # TensorRT Resize keeps its input dtype, FP16 or FP32 only.
    if data_sinfo.dtype not in ("float16", "float32") or resize.struct_info.dtype != data_sinfo.dtype:
        return False
    if attrs["method"] not in ("nearest_neighbor", "linear", "cubic"):
        return False
    if attrs["coordinate_transformation_mode"] not in (
        "asymmetric", "align_corners", "half_pixel", "pytorch_half_pixel"
    ):
        return False
    # Relax's `round` rounds ties to even, which TensorRT has no ResizeRoundMode for.
    if attrs["method"] == "nearest_neighbor" and attrs["rounding_method"] not in (
        "floor", "ceil", "round_prefer_ceil", "round_prefer_floor"
    ):
        return False
    return True


def _resize2d_pattern():
    data = wildcard()
    size = wildcard()
    root = is_op("relax.image.resize2d")(data, size)
    return ("tensorrt.image.resize2d", root, {"data": data, "size": size, "root": root}, _resize2d_check)


def _tensorrt_patterns():
    # Activations, unary elementwise ops, pools, reductions, concat and split (one argument).
    patterns = _op_patterns(1, [
        "nn.relu", "sigmoid", "nn.silu", "tanh", "exp", "log", "sqrt", "abs", "negative", "sin",
        "cos", "atan", "ceil", "floor", "erf", "nn.softmax", "nn.batch_flatten", "expand_dims",
        "squeeze", ("transpose", "permute_dims"), "layout_transform", "nn.max_pool2d",
        "nn.avg_pool2d", "nn.max_pool3d", "nn.avg_pool3d", "nn.adaptive_avg_pool2d", "sum",
        "prod", "max", "min", "mean", ("concatenate", "concat"), "split",
    ])
    # Binary elementwise ops (two tensor arguments).
    patterns += _op_patterns(
        2, ["add", "subtract", "multiply", "divide", "power", "maximum", "minimum"]
    )
    # image.resize2d (data + target-size shape argument).
    if "relax.image.resize2d" in _KNOWN_OPS:
        patterns.append(_resize2d_pattern())
    # Convolutions and matmul (data + weight), reshape (data + shape).
    patterns += _op_patterns(2, [
        "nn.conv1d", "nn.conv2d", "nn.conv3d", "nn.conv2d_transpose", "nn.conv3d_transpose",
        ("nn.batch_matmul", "matmul"), "reshape",
    ])
    # layer_norm (data, gamma, beta) and clip (data, min, max).
    patterns += _op_patterns(3, ["nn.layer_norm", "clip"])
    # strided_slice is called either with or without the optional strides argument.
    patterns += _op_patterns(5, ["strided_slice"]) + _op_patterns(4, ["strided_slice"])
    return patterns


register_patterns(_tensorrt_patterns())


def partition_for_tensorrt(mod: IRModule) -> IRModule:
    """Partitions the module, offloading TensorRT-supported subgraphs (TVM's function).

    Bind model parameters (e.g. with ``relax.transform.BindParams``) first, so that weights are
    constants TensorRT can bake into its engine. Returns the module with the matched subgraphs
    grouped into composite functions annotated for the ``tensorrt`` codegen.
    """
    patterns = get_patterns_with_prefix("tensorrt")
    mod = FuseOpsByPattern(patterns, bind_constants=True, annotate_codegen=False)(mod)
    mod = MergeCompositeFunctions()(mod)
    return mod
