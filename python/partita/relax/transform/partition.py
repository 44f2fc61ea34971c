"""Pattern-based partitioning passes: FuseOpsByPattern and MergeCompositeFunctions."""
from collections.abc import Mapping

from ... import _ffi
from ..._ffi import FusionPattern, PatternCheckContext, MergeCompositeFunctions


def _as_fusion_pattern(entry):
    """Accepts what TVM accepts: a FusionPattern or a tuple ``(name, pattern)``,
    ``(name, pattern, annotations)``, ``(name, pattern, annotations, check)`` (TVM's
    ``FusionPattern(*entry)``), and also ``(name, pattern, check)``."""
    if isinstance(entry, FusionPattern):
        return entry
    if not isinstance(entry, (tuple, list)) or not 2 <= len(entry) <= 4:
        raise TypeError(f"a fusion pattern must be a FusionPattern or a (name, pattern[, ...]) tuple, got {entry!r}")
    name, pattern = entry[0], entry[1]
    annotations, check = {}, None
    if len(entry) == 3:
        if isinstance(entry[2], Mapping):
            annotations = dict(entry[2])
        else:
            check = entry[2]
    elif len(entry) == 4:
        annotations, check = dict(entry[2]), entry[3]
    return FusionPattern(name, pattern, annotations, check)


def FuseOpsByPattern(patterns, bind_constants=True, annotate_codegen=False,  # noqa: N802
                     entry_functions=None):
    """Groups each match of ``patterns`` (tried in order) into a "Composite" function; with
    ``annotate_codegen`` each is wrapped in a function carrying "Codegen"."""
    return _ffi.FuseOpsByPattern([_as_fusion_pattern(p) for p in patterns], bind_constants,
                                 annotate_codegen, list(entry_functions or []))


__all__ = ["FuseOpsByPattern", "MergeCompositeFunctions", "FusionPattern", "PatternCheckContext"]
