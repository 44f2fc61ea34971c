"""Model importers (``tvm.relax.frontend``)."""
from .common import detach_params

__all__ = ["detach_params"]
