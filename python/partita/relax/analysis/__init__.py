"""Analyses over Relax IR (``tvm.relax.analysis``)."""
from ..._ffi import (well_formed, well_formed_errors, free_vars, bound_vars, all_vars,
                     all_global_vars)

__all__ = ["well_formed", "well_formed_errors", "free_vars", "bound_vars", "all_vars",
           "all_global_vars"]
