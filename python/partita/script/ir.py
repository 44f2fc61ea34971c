"""``I``: the IR-module decorator of TVMScript."""
import inspect

from .. import _ffi
from .parser import source_of


def ir_module(cls=None, *, check_well_formed=True):
    """Parses the decorated class as an ``@I.ir_module`` and returns the IRModule."""
    def parse(klass):
        if not inspect.isclass(klass):
            raise TypeError("@I.ir_module decorates a class")
        text, filename = source_of(klass)
        mod = _ffi.parse_module(text, filename)
        if check_well_formed and not _ffi.well_formed(mod, True):
            raise ValueError(f"{filename}: module {klass.__name__} is not well formed: "
                             + "; ".join(_ffi.well_formed_errors(mod)))
        return mod
    return parse(cls) if cls is not None else parse


def __getattr__(name):
    from ._sugar import Placeholder
    return Placeholder(f"I.{name}")
