// Structural equality, derived from declared_fields(); see structural_equal.h for the rules.
//
// The comparison walks both sides in field order. Variables are matched through a bijective map
// filled at first encounter. On a difference, each level on the way back up adds its path segment,
// so a successful comparison pays nothing for the diff machinery.
#include "partita/ir/structural_equal.h"

#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "field_traits.h"
#include "partita/ir/debug_print.h"
#include "partita/ir/dispatch.h"
#include "partita/ir/ptr_map.h"
#include "partita/support/error.h"

namespace partita {
namespace {

using namespace detail;

bool is_var_kind(NodeKind k) {
  return k == NodeKind::Var || k == NodeKind::DataflowVar || k == NodeKind::PrimVar;
}

class SEqual {
 public:
  SEqual(bool map_free_vars, bool record) : map_free_vars_(map_free_vars), record_(record) {}

  bool node(const Object* a, const Object* b) {
    if (a == nullptr || b == nullptr) {
      if (a == b) return true;
      return fail_nodes(a, b, "lhs " + short_print(ObjectRef(a)) + " vs rhs " + short_print(ObjectRef(b)));
    }
    if (a->kind() != b->kind())
      return fail_nodes(a, b, "lhs " + short_print(ObjectRef(a)) + " vs rhs " + short_print(ObjectRef(b)));
    bool ok = is_var_kind(a->kind()) ? var(a, b) : dispatch_node(*a, [&](const auto& ca) {
      using N = std::decay_t<decltype(ca)>;
      return fields(ca, static_cast<const N&>(*b));
    });
    if (!ok && record_ && !lhs_.defined() && !rhs_.defined()) {
      lhs_ = ObjectRef(a);
      rhs_ = ObjectRef(b);
    }
    return ok;
  }

  template <class T>
  bool value(const T& a, const T& b) {
    if constexpr (IsRef<T>::value) {
      return node(a.get(), b.get());
    } else if constexpr (IsVector<T>::value) {
      return vector(a, b);
    } else if constexpr (IsOptional<T>::value) {
      if (a.has_value() != b.has_value())
        return fail(std::string("lhs ") + (a ? "has a value" : "None") + " vs rhs " + (b ? "has a value" : "None"));
      return !a.has_value() || value(*a, *b);
    } else if constexpr (IsMap<T>::value) {
      return map(a, b);
    } else if constexpr (IsPair<T>::value) {
      if (!value(a.first, b.first)) return segment(".first");
      if (!value(a.second, b.second)) return segment(".second");
      return true;
    } else if constexpr (IsVariant<T>::value) {
      if (a.index() != b.index()) return fail("lhs " + leaf_str(a) + " vs rhs " + leaf_str(b));
      return std::visit(
          [&](const auto& x) {
            using V = std::decay_t<decltype(x)>;
            return value(x, std::get<V>(b));
          },
          a);
    } else if constexpr (std::is_same_v<T, Tensor>) {
      if (a.defined() != b.defined() || (a.defined() && !a.content_equal(b))) {
        std::string why = a.defined() && b.defined() && a.shape() == b.shape() && a.dtype() == b.dtype()
                              ? " (bytes differ)" : "";
        return fail("lhs " + leaf_str(a) + " vs rhs " + leaf_str(b) + why);
      }
      return true;
    } else if constexpr (std::is_floating_point_v<T>) {
      if (a == b || (std::isnan(a) && std::isnan(b))) return true;
      return fail("lhs " + leaf_str(a) + " vs rhs " + leaf_str(b));
    } else {
      if (a == b) return true;
      return fail("lhs " + leaf_str(a) + " vs rhs " + leaf_str(b));
    }
  }

  std::string message() const {
    std::string path = "root";
    for (auto it = path_.rbegin(); it != path_.rend(); ++it) path += *it;
    return path + ": " + detail_;
  }
  const ObjectRef& lhs() const { return lhs_; }
  const ObjectRef& rhs() const { return rhs_; }

 private:
  template <class N>
  bool fields(const N& a, const N& b) {
    return all_fields(a, b, [&](const char* name, const auto& x, const auto& y) {
      // Definition sites: parameters, a binding's var and a match_cast's struct info may
      // introduce variables (matters only when free variables may not be mapped).
      bool defines = false;
      if constexpr (std::is_same_v<N, FunctionNode>) defines = std::strcmp(name, "params") == 0;
      if constexpr (std::is_same_v<N, VarBindingNode>) defines = std::strcmp(name, "var") == 0;
      if constexpr (std::is_same_v<N, MatchCastNode>)
        defines = std::strcmp(name, "var") == 0 || std::strcmp(name, "struct_info") == 0;
      defining_ += defines;
      bool ok = value(x, y);
      defining_ -= defines;
      return ok || segment(std::string(".") + name);
    });
  }

  bool var(const Object* a, const Object* b) {
    if (const Object* const* mapped = lhs_to_rhs_.find(a)) {
      if (*mapped == b) return true;
      return fail("lhs " + short_print(ObjectRef(a)) + " vs rhs " + short_print(ObjectRef(b)) + " (lhs " +
                  short_print(ObjectRef(a)) + " is bound to rhs " + short_print(ObjectRef(*mapped)) + ")");
    }
    if (const Object* const* back = rhs_to_lhs_.find(b))
      return fail("lhs " + short_print(ObjectRef(a)) + " vs rhs " + short_print(ObjectRef(b)) + " (rhs " +
                  short_print(ObjectRef(b)) + " is bound to lhs " + short_print(ObjectRef(*back)) + ")");
    if (!map_free_vars_ && defining_ == 0 && a != b)
      return fail("lhs " + short_print(ObjectRef(a)) + " vs rhs " + short_print(ObjectRef(b)) +
                  " (free variables differ)");
    bool ok = dispatch_node(*a, [&](const auto& ca) {
      using N = std::decay_t<decltype(ca)>;
      return fields(ca, static_cast<const N&>(*b));
    });
    if (!ok) return false;
    lhs_to_rhs_.emplace(a, b);
    rhs_to_lhs_.emplace(b, a);
    return true;
  }

  template <class T>
  bool vector(const std::vector<T>& a, const std::vector<T>& b) {
    size_t n = std::min(a.size(), b.size());
    for (size_t i = 0; i < n; ++i) {
      if constexpr (IsNamedPair<T>::value) {
        // Named entries (attribute lists): the path names the entry.
        if (a[i].first != b[i].first)
          return fail("lhs key " + quote(a[i].first) + " vs rhs key " + quote(b[i].first)) ||
                 segment("[" + std::to_string(i) + "]");
        if (!value(a[i].second, b[i].second)) return segment("[" + quote(a[i].first) + "]");
      } else {
        if (!value(a[i], b[i])) return segment("[" + std::to_string(i) + "]");
      }
    }
    if (a.size() != b.size())
      return fail("lhs has " + std::to_string(a.size()) + " elements vs rhs " + std::to_string(b.size()));
    return true;
  }

  template <class M>
  bool map(const M& a, const M& b) {
    auto ia = a.begin(), ib = b.begin();
    for (; ia != a.end() && ib != b.end(); ++ia, ++ib) {
      if (!(ia->first == ib->first))
        return fail("lhs has key " + key_str(ia->first) + " where rhs has key " + key_str(ib->first));
      using V = typename M::mapped_type;
      if constexpr (IsPair<V>::value) {
        // Module functions: (GlobalVar, function); the key already names the entry.
        if (!value(ia->second.first, ib->second.first) || !value(ia->second.second, ib->second.second))
          return segment("[" + key_str(ia->first) + "]");
      } else {
        if (!value(ia->second, ib->second)) return segment("[" + key_str(ia->first) + "]");
      }
    }
    if (ia != a.end()) return fail("lhs has key " + key_str(ia->first) + " missing in rhs");
    if (ib != b.end()) return fail("rhs has key " + key_str(ib->first) + " missing in lhs");
    return true;
  }

  template <class K>
  static std::string key_str(const K& k) { return leaf_str(k); }

  bool fail(std::string detail) {
    if (record_) detail_ = std::move(detail);
    return false;
  }
  bool fail_nodes(const Object* a, const Object* b, std::string detail) {
    if (record_) {
      lhs_ = ObjectRef(a);
      rhs_ = ObjectRef(b);
    }
    return fail(std::move(detail));
  }
  // Records one path segment on the way back up from a difference; always returns false.
  bool segment(std::string s) {
    if (record_) path_.push_back(std::move(s));
    return false;
  }

  bool map_free_vars_;
  bool record_;
  int defining_ = 0;
  PtrMap<const Object*> lhs_to_rhs_, rhs_to_lhs_;
  std::vector<std::string> path_;  // innermost first
  std::string detail_;
  ObjectRef lhs_, rhs_;
};

// A few lines of the debug dump, enough to recognise the differing parts.
std::string excerpt(const ObjectRef& x) {
  std::string text = x.defined() ? debug_print(x) : "null";
  size_t pos = 0;
  for (int line = 0; line < 12 && pos != std::string::npos; ++line) {
    pos = text.find('\n', pos);
    if (pos != std::string::npos) ++pos;
  }
  if (pos != std::string::npos && pos < text.size()) text = text.substr(0, pos) + "  ...";
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

}  // namespace

bool structural_equal(const ObjectRef& a, const ObjectRef& b, bool map_free_vars) {
  SEqual eq(map_free_vars, /*record=*/false);
  return eq.node(a.get(), b.get());
}

std::optional<std::string> structural_diff(const ObjectRef& a, const ObjectRef& b, bool map_free_vars) {
  SEqual eq(map_free_vars, /*record=*/true);
  if (eq.node(a.get(), b.get())) return std::nullopt;
  return eq.message();
}

void assert_structural_equal(const ObjectRef& a, const ObjectRef& b, bool map_free_vars) {
  SEqual eq(map_free_vars, /*record=*/true);
  if (eq.node(a.get(), b.get())) return;
  throw_error("ValueError", "structurally unequal: " + eq.message() + "\nlhs part:\n" + excerpt(eq.lhs()) +
                                "\nrhs part:\n" + excerpt(eq.rhs()));
}

}  // namespace partita
