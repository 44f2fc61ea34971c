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


def _op_pattern(composite_name, op_name, num_args):
    """A pattern matching a single op called with ``num_args`` wildcard arguments."""
    args = [wildcard() for _ in range(num_args)]
    return (composite_name, is_op(op_name)(*args), {})


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
    table = []
    # Activations and unary elementwise ops (single tensor argument).
    for composite, op in [
        ("tensorrt.nn.relu", "relax.nn.relu"),
        ("tensorrt.sigmoid", "relax.sigmoid"),
        ("tensorrt.nn.silu", "relax.nn.silu"),
        ("tensorrt.tanh", "relax.tanh"),
        ("tensorrt.exp", "relax.exp"),
        ("tensorrt.log", "relax.log"),
        ("tensorrt.sqrt", "relax.sqrt"),
        ("tensorrt.abs", "relax.abs"),
        ("tensorrt.negative", "relax.negative"),
        ("tensorrt.sin", "relax.sin"),
        ("tensorrt.cos", "relax.cos"),
        ("tensorrt.atan", "relax.atan"),
        ("tensorrt.ceil", "relax.ceil"),
        ("tensorrt.floor", "relax.floor"),
        ("tensorrt.erf", "relax.erf"),
        ("tensorrt.nn.softmax", "relax.nn.softmax"),
        ("tensorrt.nn.batch_flatten", "relax.nn.batch_flatten"),
        ("tensorrt.expand_dims", "relax.expand_dims"),
        ("tensorrt.squeeze", "relax.squeeze"),
        ("tensorrt.transpose", "relax.permute_dims"),
        ("tensorrt.layout_transform", "relax.layout_transform"),
        ("tensorrt.nn.max_pool2d", "relax.nn.max_pool2d"),
        ("tensorrt.nn.avg_pool2d", "relax.nn.avg_pool2d"),
        ("tensorrt.nn.max_pool3d", "relax.nn.max_pool3d"),
        ("tensorrt.nn.avg_pool3d", "relax.nn.avg_pool3d"),
        ("tensorrt.nn.adaptive_avg_pool2d", "relax.nn.adaptive_avg_pool2d"),
        ("tensorrt.sum", "relax.sum"),
        ("tensorrt.prod", "relax.prod"),
        ("tensorrt.max", "relax.max"),
        ("tensorrt.min", "relax.min"),
        ("tensorrt.mean", "relax.mean"),
        ("tensorrt.concatenate", "relax.concat"),
        ("tensorrt.split", "relax.split"),
    ]:
        table.append((composite, op, 1))
    # Binary elementwise ops (two tensor arguments).
    for composite, op in [
        ("tensorrt.add", "relax.add"),
        ("tensorrt.subtract", "relax.subtract"),
        ("tensorrt.multiply", "relax.multiply"),
        ("tensorrt.divide", "relax.divide"),
        ("tensorrt.power", "relax.power"),
        ("tensorrt.maximum", "relax.maximum"),
        ("tensorrt.minimum", "relax.minimum"),
    ]:
        table.append((composite, op, 2))
    patterns = [_op_pattern(c, op, n) for c, op, n in table if op in _KNOWN_OPS]
    # image.resize2d (data + target-size shape argument).
    if "relax.image.resize2d" in _KNOWN_OPS:
        patterns.append(_resize2d_pattern())
    table = []
    # Convolutions and matmul (data + weight).
    for composite, op in [
        ("tensorrt.nn.conv1d", "relax.nn.conv1d"),
        ("tensorrt.nn.conv2d", "relax.nn.conv2d"),
        ("tensorrt.nn.conv3d", "relax.nn.conv3d"),
        ("tensorrt.nn.conv2d_transpose", "relax.nn.conv2d_transpose"),
        ("tensorrt.nn.conv3d_transpose", "relax.nn.conv3d_transpose"),
        ("tensorrt.nn.batch_matmul", "relax.matmul"),
        ("tensorrt.reshape", "relax.reshape"),
    ]:
        table.append((composite, op, 2))
    # layer_norm (data, gamma, beta) and clip (data, min, max).
    table.append(("tensorrt.nn.layer_norm", "relax.nn.layer_norm", 3))
    table.append(("tensorrt.clip", "relax.clip", 3))
    # strided_slice is called either with or without the optional strides argument.
    table.append(("tensorrt.strided_slice", "relax.strided_slice", 5))
    table.append(("tensorrt.strided_slice", "relax.strided_slice", 4))
    patterns += [_op_pattern(c, op, n) for c, op, n in table if op in _KNOWN_OPS]
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
