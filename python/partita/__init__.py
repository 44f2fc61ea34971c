"""Partita: a bring-your-own-codegen deep-learning graph compiler."""
from . import _ffi  # noqa: F401
