// A generic, field-by-field dump of IR nodes (see debug_print.h).
#include "partita/ir/debug_print.h"

#include <unordered_set>

#include "field_traits.h"
#include "partita/ir/dispatch.h"

namespace partita {
namespace {

using namespace detail;

bool is_prim_expr(const Object* x) { return x && PrimExprNode::classof(x->kind()); }

class Dumper {
 public:
  std::string out;

  void node(const Object* x, int indent) {
    if (is_prim_expr(x)) {  // inline, as an expression
      print_prim_expr(PrimExpr(static_cast<const PrimExprNode*>(x)), out);
      return;
    }
    out += short_print(ObjectRef(x));
    if (x == nullptr) return;
    bool is_var = x->kind() == NodeKind::Var || x->kind() == NodeKind::DataflowVar;
    if (is_var && !seen_vars_.insert(x).second) return;
    dispatch_node(*x, [&](const auto& c) {
      for_each_field(c, [&](const char* name, const auto& v) {
        newline(indent + 2);
        out += name;
        out += ": ";
        value(v, indent + 2);
      });
    });
  }

  template <class T>
  void value(const T& v, int indent) {
    if constexpr (IsRef<T>::value) {
      node(v.get(), indent);
    } else if constexpr (IsOptional<T>::value) {
      if (v) value(*v, indent); else out += "None";
    } else if constexpr (IsVector<T>::value) {
      if (v.empty()) { out += "[]"; return; }
      if (inline_type<typename T::value_type>()) {
        out += "[";
        for (size_t i = 0; i < v.size(); ++i) {
          if (i) out += ", ";
          value(v[i], indent);
        }
        out += "]";
        return;
      }
      out += "[";
      for (size_t i = 0; i < v.size(); ++i) {
        newline(indent + 2);
        out += '[';
        out += std::to_string(i);
        out += "] ";
        value(v[i], indent + 2);
      }
      newline(indent);
      out += "]";
    } else if constexpr (IsMap<T>::value) {
      if (v.empty()) { out += "{}"; return; }
      out += "{";
      for (const auto& [key, val] : v) {
        newline(indent + 2);
        value(key, indent + 2);
        out += ": ";
        value(val, indent + 2);
      }
      newline(indent);
      out += "}";
    } else if constexpr (IsPair<T>::value) {
      value(v.first, indent);
      out += " -> ";
      value(v.second, indent);
    } else {
      out += leaf_str(v);
    }
  }

 private:
  template <class T>
  static constexpr bool inline_type() {
    if constexpr (IsRef<T>::value) return std::is_base_of_v<PrimExprNode, typename T::Node>;
    else if constexpr (IsPair<T>::value) return inline_type<typename T::first_type>() && inline_type<typename T::second_type>();
    else return !IsVector<T>::value && !IsMap<T>::value && !IsOptional<T>::value;
  }

  void newline(int indent) {
    out += '\n';
    out.append(size_t(indent), ' ');
  }

  std::unordered_set<const Object*> seen_vars_;
};

}  // namespace

std::string short_print(const ObjectRef& x) {
  if (!x.defined()) return "null";
  std::string kind = node_kind_name(x->kind());
  if (const auto* v = x.as<VarNode>()) return kind + " " + v->name_hint;
  if (const auto* pv = x.as<PrimVarNode>()) return kind + " " + pv->name;
  if (const auto* imm = x.as<IntImmNode>()) return kind + " " + std::to_string(imm->value);
  if (const auto* f = x.as<FloatImmNode>()) return kind + " " + double_str(f->value);
  if (const auto* b = x.as<PrimBinaryNode>()) return kind + " (" + prim_expr_str(PrimExpr(b)) + ")";
  if (const auto* gv = x.as<GlobalVarNode>()) return kind + " " + gv->name_hint;
  if (const auto* op = x.as<OpNode>()) return kind + " " + op->name;
  if (const auto* ef = x.as<ExternFuncNode>()) return kind + " " + quote(ef->global_symbol);
  if (const auto* s = x.as<StringImmNode>()) return kind + " " + quote(s->value);
  if (const auto* d = x.as<DataTypeImmNode>()) return kind + " " + dtype_str(d->value);
  if (const auto* c = x.as<ConstantNode>()) return kind + " " + tensor_str(c->data);
  if (const auto* a = x.as<AttrsNode>()) return kind + " " + a->type_key;
  return kind;
}

std::string debug_print(const ObjectRef& x) {
  Dumper d;
  d.node(x.get(), 0);
  return d.out;
}

}  // namespace partita
