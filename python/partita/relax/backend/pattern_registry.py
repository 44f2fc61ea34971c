"""The registry of fusion patterns, by backend-prefixed name (``<backend>.<pattern>``)."""
from ... import _ffi
from ..transform.partition import _as_fusion_pattern


def register_patterns(patterns):
    """Registers patterns; later ones take priority within a prefix, as in TVM."""
    _ffi.register_patterns([_as_fusion_pattern(p) for p in patterns])


def get_patterns_with_prefix(prefix):
    return _ffi.get_patterns_with_prefix(prefix)


def get_pattern(name):
    return _ffi.get_pattern(name)


def list_pattern_names():
    return _ffi.list_pattern_names()
