// Structural equality and hashing of IR nodes (TVM's SEqual / SHash semantics).
//
// Both are derived from each node's declared_fields(); the only node-specific rules are:
//  - Var, DataflowVar and PrimVar compare up to renaming: a bijective map between the two sides
//    is established at first encounter (definition sites come first in field order: function
//    params before the body, a binding's value before its var), and their declared struct info
//    / dtype is compared at that point. Names of local variables are ignored.
//  - GlobalVar compares by name, Op by name, Constant by tensor content (shape, dtype, bytes).
//  - ExprNode::struct_info_ is compared only for variables (it is a declared field of VarNode).
//  - IRModule: same function names with structurally equal functions, same constant names with
//    equal tensors, equal attributes.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "partita/ir/object.h"

namespace partita {

/// True when `a` and `b` are structurally equal. With `map_free_vars` false, a variable that is
/// not defined inside the compared nodes (a function parameter, a binding's var, a symbolic
/// variable first appearing in a parameter's or match_cast's struct info) must be the same
/// object on both sides.
bool structural_equal(const ObjectRef& a, const ObjectRef& b, bool map_free_vars = true);

/// A hash consistent with structural_equal (equal nodes have equal hashes); invariant under
/// renaming of variables.
size_t structural_hash(const ObjectRef& x);

/// The first difference between `a` and `b`, or nullopt when they are structurally equal, e.g.
/// `root.functions["main"].body.blocks[0].bindings[1].value.args[0]: lhs Var x vs rhs Constant`.
std::optional<std::string> structural_diff(const ObjectRef& a, const ObjectRef& b,
                                           bool map_free_vars = true);

/// Throws Error("ValueError") with the structural_diff message and short renderings of the two
/// differing parts when `a` and `b` are not structurally equal.
void assert_structural_equal(const ObjectRef& a, const ObjectRef& b, bool map_free_vars = true);

/// Functors for unordered containers keyed by structure.
struct StructuralHash {
  size_t operator()(const ObjectRef& x) const { return structural_hash(x); }
};
struct StructuralEqual {
  bool operator()(const ObjectRef& a, const ObjectRef& b) const { return structural_equal(a, b); }
};

}  // namespace partita
