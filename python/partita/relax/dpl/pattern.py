"""Pattern constructors with TVM's names (``tvm.relax.dpl.pattern``)."""
from ..._ffi import (
    DFPattern, PatternSeq, PatternContext, wildcard, is_op, is_expr, is_const, is_var, is_dfv,
    is_gv, is_extern, is_tuple, is_tuple_get_item, is_shape, has_dtype, has_shape, has_attr,
    reject, make_fused_bias_activation_pattern, match_expr, extract_matched_expr, rewrite_call,
)


def used_by(lhs, rhs, index=-1):
    """``lhs`` is used by ``rhs`` (``lhs >> rhs``)."""
    return lhs.used_by(rhs, index)


def only_used_by(lhs, rhs, index=-1):
    """``lhs`` is used only by ``rhs`` (``lhs ^ rhs``)."""
    return lhs.only_used_by(rhs, index)


def dup_pattern(pattern):
    """A copy of ``pattern`` with a new identity."""
    return pattern.dup()


__all__ = [
    "DFPattern", "PatternSeq", "PatternContext", "wildcard", "is_op", "is_expr", "is_const",
    "is_var", "is_dfv", "is_gv", "is_extern", "is_tuple", "is_tuple_get_item", "is_shape",
    "has_dtype", "has_shape", "has_attr", "reject", "make_fused_bias_activation_pattern",
    "match_expr", "extract_matched_expr", "rewrite_call", "used_by", "only_used_by",
    "dup_pattern",
]
