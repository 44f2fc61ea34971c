"""Relax passes (``tvm.relax.transform``)."""
from ..._ffi import Normalize, CanonicalizeBindings, ConvertToDataflow, DeadCodeElimination
from ..._ffi import FoldConstant, FoldBatchnormToConv2D, FoldForInference
from ..._ffi import RewriteAttention, DecomposeAttention
from ..._ffi import Normalize, CanonicalizeBindings, ConvertToDataflow, DeadCodeElimination, FuseOpsByKind
from ..._ffi import RealizeVDevice, PlaceDeviceCopies
from ..._ffi import (RunCodegen, InlineCompilerFunctions, OutlineCompilerFunctions,
                     MarkCompilerFunctionsAsExtern, NameCodegenConstants)
from ...transform import Pass, PassContext, Sequential
from .partition import FuseOpsByPattern, MergeCompositeFunctions, FusionPattern, PatternCheckContext

__all__ = ["Normalize", "CanonicalizeBindings", "ConvertToDataflow", "DeadCodeElimination",
           "FoldConstant", "FoldBatchnormToConv2D", "FoldForInference", "RewriteAttention", "DecomposeAttention",
           "FuseOpsByPattern", "MergeCompositeFunctions", "FusionPattern",
           "PatternCheckContext", "Pass", "PassContext", "Sequential", "RunCodegen",
           "InlineCompilerFunctions", "OutlineCompilerFunctions", "MarkCompilerFunctionsAsExtern",
           "NameCodegenConstants", "RealizeVDevice", "PlaceDeviceCopies", "FuseOpsByKind"]
