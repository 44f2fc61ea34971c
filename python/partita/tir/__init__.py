"""Symbolic integer expressions used in shapes (``tvm.tir`` subset)."""
from .._ffi import PrimExpr, IntImm, FloatImm, PrimVar as Var, simplify, prove_equal

SizeVar = Var

__all__ = ["PrimExpr", "IntImm", "FloatImm", "Var", "SizeVar", "simplify", "prove_equal"]
