"""``R``: the Relax namespace of TVMScript (``@R.function``; everything else inside TVMScript
source is read by the C++ parser, so here it only needs to evaluate)."""
import inspect

from .. import _ffi
from .parser import source_of


def _in_class_body(frame):
    return frame is not None and "__module__" in frame.f_locals and "__qualname__" in frame.f_locals


def function(func=None, *, private=False, pure=True, check_well_formed=True):
    """Parses a standalone ``@R.function`` into a Function. Inside an ``@I.ir_module`` class the
    function is left for the module parser, which reads the whole class."""
    caller = inspect.currentframe().f_back

    def parse(fn):
        if _in_class_body(caller):
            return fn
        text, filename = source_of(fn)
        return _ffi.parse_function(text, filename)

    return parse(func) if func is not None else parse


def __getattr__(name):
    from ._sugar import Placeholder
    return Placeholder(f"R.{name}")
