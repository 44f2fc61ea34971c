// Kind dispatch: call a generic function with a node's concrete type.
#pragma once

#include "partita/ir/module.h"

namespace partita {

/// Calls `f(static_cast<const XNode&>(*node))` for the concrete type of `node`.
template <class F>
decltype(auto) dispatch_node(const Object& node, F&& f) {
  switch (node.kind()) {
#define PARTITA_X(name) \
  case NodeKind::name:  \
    return f(static_cast<const name##Node&>(node));
    PARTITA_FOR_EACH_NODE(PARTITA_X)
#undef PARTITA_X
  }
  __builtin_unreachable();
}

}  // namespace partita
