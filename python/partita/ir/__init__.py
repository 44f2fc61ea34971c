"""IR containers and structural comparison (``tvm.ir``)."""
from .._ffi import IRModule, GlobalVar, Op, Object, Attrs, GlobalInfo, VDevice, TargetDesc
from .structural import structural_equal, structural_hash, assert_structural_equal

__all__ = ["IRModule", "GlobalVar", "Op", "Object", "Attrs", "GlobalInfo", "VDevice", "TargetDesc",
           "structural_equal", "structural_hash", "assert_structural_equal"]

from .. import _ffi as _native


def _script(self, show_meta=True):
    """The module in the TVMScript text format."""
    return _native.print_module(self, show_meta)


def _show(self, show_meta=True):
    """Prints :meth:`script`."""
    print(_script(self, show_meta))


def _node_script(self):
    return _native.print_expr(self)


IRModule.script = _script
IRModule.show = _show
IRModule.__str__ = _script
Object.script = _node_script
Object.show = lambda self: print(_node_script(self))
Object.__repr__ = _node_script
