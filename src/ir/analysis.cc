// Variable collections and purity analysis (see analysis.h).
#include <unordered_set>

#include "partita/ir/analysis.h"
#include "partita/ir/functor.h"
#include "partita/ir/op_interface.h"

namespace partita {

namespace {

// Collects bound and used variables in first-occurrence order.
class VarCollector : public ExprVisitor {
 public:
  std::vector<Var> bound, used, all;
  std::vector<GlobalVar> globals;

  void visit_var_def(const Var& v) override {
    if (bound_set_.insert(v.get()).second) bound.push_back(v);
    add_all(v);
  }
  void visit_(const VarNode* v) override { use(Var(v)); }
  void visit_(const DataflowVarNode* v) override { use(Var(v)); }
  void visit_(const GlobalVarNode* g) override {
    if (global_set_.insert(g).second) globals.push_back(GlobalVar(g));
  }

 private:
  void use(const Var& v) {
    if (used_set_.insert(v.get()).second) used.push_back(v);
    add_all(v);
  }
  void add_all(const Var& v) {
    if (all_set_.insert(v.get()).second) all.push_back(v);
  }
  std::unordered_set<const Object*> bound_set_, used_set_, all_set_, global_set_;
};

}  // namespace

std::vector<Var> free_vars(const Expr& expr) {
  VarCollector c;
  c.visit_expr(expr);
  std::unordered_set<const Object*> bound;
  for (auto& v : c.bound) bound.insert(v.get());
  std::vector<Var> out;
  for (auto& v : c.used)
    if (!bound.count(v.get())) out.push_back(v);
  return out;
}

std::vector<Var> bound_vars(const Expr& expr) {
  VarCollector c;
  c.visit_expr(expr);
  return c.bound;
}

std::vector<Var> all_vars(const Expr& expr) {
  VarCollector c;
  c.visit_expr(expr);
  return c.all;
}

std::vector<GlobalVar> all_global_vars(const Expr& expr) {
  VarCollector c;
  c.visit_expr(expr);
  return c.globals;
}

bool is_impure_op(const std::string& name) {
  const OpInterface* iface = find_op_interface(name);
  return !iface || !iface->pure;  // an operator nobody registered may do anything
}

namespace {

class ImpurityFinder : public ExprVisitor {
 public:
  bool found = false;
  // A function definition has no effect; calling it is checked by its signature's purity.
  void visit_(const FunctionNode*) override {}
  void visit_(const CallNode* call) override {
    if (auto* o = call->op.as<OpNode>()) {
      if (is_impure_op(o->name)) found = true;
    } else {
      const StructInfo& s = call->op->struct_info_;
      auto* f = s ? s.as<FuncStructInfoNode>() : nullptr;
      if (!f || !f->purity) found = true;
    }
    ExprVisitor::visit_(call);
  }
};

}  // namespace

bool contains_impure_call(const Expr& expr) {
  ImpurityFinder f;
  if (auto* fn = expr.as<FunctionNode>()) f.visit_expr(fn->body);
  else f.visit_expr(expr);
  return f.found;
}

const CallNode* call_of(const Expr& e, std::string_view op_name) {
  const auto* call = e ? e.as<CallNode>() : nullptr;
  const auto* op = call ? call->op.as<OpNode>() : nullptr;
  return op && op->name == op_name ? call : nullptr;
}

bool is_plain_function(const FunctionNode& func) {
  return !func.attrs.count("Primitive") && !func.attrs.count("Composite") &&
         !func.attrs.count("Codegen");
}

}  // namespace partita
