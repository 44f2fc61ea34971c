"""Relax IR: expressions, struct info, the BlockBuilder, operators, passes (``tvm.relax``)."""
from .._ffi import (
    Expr, Var, DataflowVar, Constant, PrimValue, StringImm, DataTypeImm, ShapeExpr, Tuple,
    TupleGetItem, Call, Function, ExternFunc, SeqExpr, If, Binding, VarBinding, MatchCast,
    BindingBlock, StructInfo, ObjectStructInfo, PrimStructInfo, ShapeStructInfo,
    TensorStructInfo, TupleStructInfo, FuncStructInfo, GlobalVar, VDevice,
)
from .expr import const, DataflowBlock
from .block_builder import BlockBuilder
from .vm import build, VirtualMachine
from . import op, transform, analysis, dpl, backend, pipeline
from .pipeline import get_pipeline, register_pipeline

__all__ = [
    "Expr", "Var", "DataflowVar", "Constant", "PrimValue", "StringImm", "DataTypeImm",
    "ShapeExpr", "Tuple", "TupleGetItem", "Call", "Function", "ExternFunc", "SeqExpr", "If",
    "Binding", "VarBinding", "MatchCast", "BindingBlock", "DataflowBlock", "StructInfo",
    "ObjectStructInfo", "PrimStructInfo", "ShapeStructInfo", "TensorStructInfo",
    "TupleStructInfo", "FuncStructInfo", "GlobalVar", "VDevice", "const", "BlockBuilder", "op",
    "transform", "analysis", "dpl", "backend", "build", "VirtualMachine", "pipeline", "get_pipeline",
    "register_pipeline",
]
