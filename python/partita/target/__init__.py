"""Compilation targets (``tvm.target``): a kind plus typed options with defaults."""
from .._ffi import Target, list_target_kinds

__all__ = ["Target", "list_target_kinds"]
