"""Partita: a bring-your-own-codegen deep-learning graph compiler.

The layout mirrors Apache TVM's Python API: ``partita.ir`` (IRModule, structural equality),
``partita.relax`` (Relax IR, BlockBuilder, operators, passes, pattern language),
``partita.tir`` (symbolic integers) and ``partita.script`` (the TVMScript text format).
"""
from . import _ffi
from ._ffi import PartitaError
from . import ir, tir, transform, relax, script

__all__ = ["ir", "tir", "relax", "script", "PartitaError"]
