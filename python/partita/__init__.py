"""Partita: a bring-your-own-codegen deep-learning graph compiler.

The layout mirrors Apache TVM's Python API: ``partita.ir`` (IRModule, structural equality),
``partita.relax`` (Relax IR, BlockBuilder, operators, passes, pattern language),
``partita.tir`` (symbolic integers) and ``partita.script`` (the TVMScript text format).
"""
from . import _ffi
from ._ffi import PartitaError
from . import ir, tir, transform, target, runtime, relax, script
from .runtime import cpu

__all__ = ["ir", "tir", "transform", "target", "runtime", "relax", "script", "cpu", "PartitaError"]
