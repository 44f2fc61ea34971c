"""Backends and their pattern tables (``tvm.relax.backend``)."""
from . import pattern_registry, cpu, cuda
from .pattern_registry import register_patterns, get_patterns_with_prefix, get_pattern
from .utils import has_leaking_intermediate_variables
from ._partition import prepare_for

__all__ = ["pattern_registry", "cpu", "cuda", "register_patterns", "get_patterns_with_prefix", "get_pattern",
           "has_leaking_intermediate_variables", "prepare_for"]
