"""The example NPU's pattern table (TVM v0.26's ``example_npu/patterns.py``).

The patterns themselves are registered by the backend (src/backend/example_npu/patterns.cc),
with TVM's names, annotations and order, when Partita loads; ``registered_patterns()`` lists
them. ``NPUConfig`` holds TVM's vendor-neutral NPU parameters, which the runtime's dispatch
decisions use (256 KiB L1 SRAM, 512 KiB CMX, 32 x 32 tiles).
"""
from typing import ClassVar

from ...pattern_registry import get_patterns_with_prefix


class NPUConfig:
    """NPU architectural parameters common across vendors (TVM's values)."""

    SRAM_SIZE_KB = 256  # on-chip SRAM / scratchpad
    CMX_SIZE_KB = 512  # compute memory near the compute units
    TILE_HEIGHT = 32
    TILE_WIDTH = 32
    VECTOR_SIZE = 16
    # TVM's list; Partita's runtime computes float32, so its checks take float32 only.
    SUPPORTED_DTYPES: ClassVar[list] = ["int8", "int16", "float16", "float32"]
    QUANTIZED_DTYPES: ClassVar[list] = ["int8", "int16"]
    MATRIX_ENGINE_SIZE = 16
    VECTOR_ENGINE_WIDTH = 64
    POWER_MODES: ClassVar[list] = ["high_performance", "balanced", "low_power"]


def registered_patterns():
    """The ``example_npu.*`` patterns, highest priority first (as TVM's registry lists them)."""
    return get_patterns_with_prefix("example_npu")
