"""Relax passes (``tvm.relax.transform``)."""
from ..._ffi import Normalize, CanonicalizeBindings, ConvertToDataflow, DeadCodeElimination
from ..._ffi import FoldConstant, FoldBatchnormToConv2D, FoldForInference
from ..._ffi import RewriteAttention, DecomposeAttention
from ..._ffi import Normalize, CanonicalizeBindings, ConvertToDataflow, DeadCodeElimination, FuseOpsByKind
from ..._ffi import RealizeVDevice, PlaceDeviceCopies
from ..._ffi import (RunCodegen, InlineCompilerFunctions, OutlineCompilerFunctions,
                     MarkCompilerFunctionsAsExtern, NameCodegenConstants)
from ...transform import Pass, PassContext, Sequential
from .collage import CollagePartition, collage_partition
from .partition import FuseOpsByPattern, MergeCompositeFunctions, FusionPattern, PatternCheckContext

__all__ = ["Normalize", "CanonicalizeBindings", "ConvertToDataflow", "DeadCodeElimination",
           "FoldConstant", "FoldBatchnormToConv2D", "FoldForInference", "RewriteAttention", "DecomposeAttention",
           "FuseOpsByPattern", "MergeCompositeFunctions", "FusionPattern",
           "PatternCheckContext", "Pass", "PassContext", "Sequential", "RunCodegen",
           "InlineCompilerFunctions", "OutlineCompilerFunctions", "MarkCompilerFunctionsAsExtern",
           "NameCodegenConstants", "RealizeVDevice", "PlaceDeviceCopies", "FuseOpsByKind",
           "CollagePartition", "collage_partition"]

# The passes a TVM pipeline uses beyond the basic ones (src/python/bind_relax_passes.cc).
from ..._ffi import (AttachGlobalSymbol, EliminateCommonSubexpr, RemoveUnusedOutputs, FuseOps,  # noqa: E402
                     DecomposeOpsForInference, LambdaLift)
from ...transform import function_pass  # noqa: E402
from .bind_params import BindParams  # noqa: E402
from .mixed_precision import ToMixedPrecision  # noqa: E402

__all__ += ["AttachGlobalSymbol", "EliminateCommonSubexpr", "RemoveUnusedOutputs", "FuseOps",
            "DecomposeOpsForInference", "LambdaLift", "BindParams", "ToMixedPrecision", "function_pass"]
