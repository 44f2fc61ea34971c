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


def vdevice(target, vdevice_id=0, memory_scope="global"):
    """A virtual device (``I.vdevice``): ``target`` is a target string ("cuda", "llvm -mcpu=x")
    or a target dictionary ({"kind": "cuda", "arch": "sm_80"}). Inside an ``@I.ir_module``
    class the C++ parser reads the call from the source; called from Python it builds the
    VDevice, as TVM's ``I.vdevice`` does."""
    return _ffi.VDevice(target, vdevice_id, memory_scope)


def module_global_infos(infos):
    """``I.module_global_infos({"vdevice": [...]})`` in a module class body. The parser reads the
    statement from the source; executing the class body in Python does nothing with it."""
    del infos


def __getattr__(name):
    from ._sugar import Placeholder
    return Placeholder(f"I.{name}")
