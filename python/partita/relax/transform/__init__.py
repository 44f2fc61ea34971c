"""Relax passes (``tvm.relax.transform``)."""
from ..._ffi import Normalize, CanonicalizeBindings, ConvertToDataflow, DeadCodeElimination
from ..._ffi import FoldConstant, FoldBatchnormToConv2D, FoldForInference, FuseOpsByKind
from ..._ffi import RealizeVDevice, PlaceDeviceCopies
from ..._ffi import (RunCodegen, InlineCompilerFunctions, OutlineCompilerFunctions,
                     MarkCompilerFunctionsAsExtern, NameCodegenConstants)
from ..._ffi import AttachGlobalSymbol, EliminateCommonSubexpr, RemoveUnusedOutputs, FuseOps
from ..._ffi import DecomposeOpsForInference, LambdaLift
from ...transform import Pass, PassContext, Sequential, function_pass
from .partition import FuseOpsByPattern, MergeCompositeFunctions, FusionPattern, PatternCheckContext
from .bind_params import BindParams
from .mixed_precision import ToMixedPrecision

__all__ = ["Normalize", "CanonicalizeBindings", "ConvertToDataflow", "DeadCodeElimination",
           "FoldConstant", "FoldBatchnormToConv2D", "FoldForInference",
           "FuseOpsByPattern", "MergeCompositeFunctions", "FusionPattern",
           "PatternCheckContext", "Pass", "PassContext", "Sequential", "function_pass",
           "RunCodegen", "InlineCompilerFunctions", "OutlineCompilerFunctions",
           "MarkCompilerFunctionsAsExtern", "NameCodegenConstants", "RealizeVDevice",
           "PlaceDeviceCopies", "FuseOpsByKind", "AttachGlobalSymbol", "EliminateCommonSubexpr",
           "RemoveUnusedOutputs", "BindParams", "ToMixedPrecision", "FuseOps", "DecomposeOpsForInference", "LambdaLift"]
