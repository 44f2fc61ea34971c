"""CPU backends (``partita.relax.backend.cpu``)."""
from . import ccompiler  # noqa: E402,F401
