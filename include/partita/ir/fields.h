// Field declarations: each node type lists its fields once, as
//
//   static constexpr auto declared_fields() {
//     return std::make_tuple(field("op", &CallNode::op), field("args", &CallNode::args));
//   }
//
// Structural equality, hashing, the Python bindings and debug printing iterate that list.
#pragma once

#include <tuple>
#include <utility>

namespace partita {

template <class C, class M>
struct Field {
  const char* name;
  M C::*member;
};

template <class C, class M>
constexpr Field<C, M> field(const char* name, M C::*member) { return {name, member}; }

/// Calls f(name, value) for each declared field of `node`, in declaration order.
template <class T, class F>
void for_each_field(const T& node, F&& f) {
  std::apply([&](auto... fd) { (f(fd.name, node.*(fd.member)), ...); }, T::declared_fields());
}

/// Calls f(name, a_value, b_value) for each declared field of two nodes of the same type;
/// stops early and returns false as soon as f returns false.
template <class T, class F>
bool all_fields(const T& a, const T& b, F&& f) {
  return std::apply([&](auto... fd) { return (f(fd.name, a.*(fd.member), b.*(fd.member)) && ...); },
                    T::declared_fields());
}

}  // namespace partita
