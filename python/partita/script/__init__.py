"""The TVMScript text format (``tvm.script``).

``from partita.script import ir as I, relax as R, tir as T`` gives the decorators used in
TVMScript source: ``@I.ir_module`` on a class and ``@R.function`` on a function parse their own
source text with the C++ parser. ``from_source(text)`` parses a module from a string.
"""
from . import ir, relax, tir
from .parser import from_source
from .ir import ir_module  # TVM's tvm.script.ir_module

__all__ = ["ir", "relax", "tir", "from_source", "ir_module"]
