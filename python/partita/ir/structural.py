"""Structural equality and hashing: equal up to renaming of bound variables."""
from .. import _ffi


def structural_equal(lhs, rhs, map_free_vars=True):
    """True when ``lhs`` and ``rhs`` have the same structure (variable names aside)."""
    return _ffi.structural_equal(lhs, rhs, map_free_vars)


def structural_hash(node):
    """A hash consistent with :func:`structural_equal`."""
    return _ffi.structural_hash(node)


def assert_structural_equal(lhs, rhs):
    """Raises ``ValueError`` naming the path of the first difference."""
    _ffi.assert_structural_equal(lhs, rhs)
