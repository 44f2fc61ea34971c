"""Helpers for backend check functions."""
from ..._ffi import has_leaking_intermediate_variables

__all__ = ["has_leaking_intermediate_variables"]
