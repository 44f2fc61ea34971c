"""The registry of fusion patterns, by backend-prefixed name (``<backend>.<pattern>``)."""
import atexit

from ... import _ffi
from ..transform.partition import _as_fusion_pattern

# Names of patterns registered from Python. Their check functions are Python objects held by
# the C++ registry, which outlives the interpreter; at exit each is registered again without
# them (TVM's pattern_registry removes its Python patterns at exit for the same reason), so no
# Python object is released after Python has finalized.
_PYTHON_PATTERNS = set()


def _drop_python_callables():
    for name in sorted(_PYTHON_PATTERNS):
        p = _ffi.get_pattern(name)
        if p is not None:
            _ffi.register_patterns([_ffi.FusionPattern(p.name, p.pattern, dict(p.annotation_patterns))])
    _PYTHON_PATTERNS.clear()


atexit.register(_drop_python_callables)


def register_patterns(patterns):
    """Registers patterns; later ones take priority within a prefix, as in TVM."""
    entries = [_as_fusion_pattern(p) for p in patterns]
    _ffi.register_patterns(entries)
    _PYTHON_PATTERNS.update(p.name for p in entries)


def get_patterns_with_prefix(prefix):
    return _ffi.get_patterns_with_prefix(prefix)


def get_pattern(name):
    return _ffi.get_pattern(name)


def list_pattern_names():
    return _ffi.list_pattern_names()
