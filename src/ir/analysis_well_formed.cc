// The well-formedness check (TVM Relax's analysis/well_formed.cc). It never throws: each
// problem becomes a message, and well_formed() logs them to stderr.
#include <iostream>
#include <unordered_set>

#include "partita/ir/analysis.h"
#include "partita/ir/functor.h"
#include "partita/ir/op_interface.h"
#include "partita/support/error.h"

namespace partita {

bool is_leaf(const Expr& e) {
  switch (e->kind()) {
    case NodeKind::Var: case NodeKind::DataflowVar: case NodeKind::Constant:
    case NodeKind::PrimValue: case NodeKind::StringImm: case NodeKind::DataTypeImm:
    case NodeKind::ShapeExpr: case NodeKind::GlobalVar: case NodeKind::ExternFunc:
    case NodeKind::Op:
      return true;
    default:
      return false;
  }
}

bool is_leaf_or_tuple(const Expr& e) {
  if (is_leaf(e)) return true;
  if (auto* t = e.as<TupleNode>()) {
    for (auto& f : t->fields)
      if (!f || !is_leaf_or_tuple(f)) return false;
    return true;
  }
  return false;
}

namespace {

std::string quote(const std::string& s) { return "'" + s + "'"; }

class WellFormedChecker : public ExprVisitor {
 public:
  WellFormedChecker(const IRModule* mod, bool check_struct_info)
      : mod_(mod), check_struct_info_(check_struct_info) {}

  std::vector<std::string> errors;

  void check_function(const std::string& name, const Function& func) {
    func_name_ = name;
    var_set_.clear();
    ever_defined_.clear();
    dataflow_defined_.clear();
    symbolic_.clear();
    visit_expr(func);
  }

  void visit_expr(const Expr& e) override {
    if (!e) {
      malformed("a null expression");
      return;
    }
    if (check_struct_info_ && !e->struct_info_ && !e.as<OpNode>() && !e.as<GlobalVarNode>() &&
        !e.as<VarNode>())
      malformed(std::string("a ") + node_kind_name(e->kind()) + " has no struct info");
    ExprVisitor::visit_expr(e);
  }

  void visit_(const VarNode* v) override {
    if (!var_set_.count(v)) malformed("variable " + quote(v->name_hint) + " is used but not defined");
  }

  void visit_(const DataflowVarNode* v) override {
    if (dataflow_set_.count(v)) return;
    if (dataflow_defined_.count(v))
      malformed("DataflowVar " + quote(v->name_hint) + " is used outside its dataflow block");
    else
      malformed("DataflowVar " + quote(v->name_hint) + " is used but not defined");
  }

  void visit_(const GlobalVarNode* g) override {
    if (mod_ && !mod_->contains(g->name_hint))
      malformed("GlobalVar " + quote(g->name_hint) + " is not a function of the module");
  }

  void visit_(const FunctionNode* f) override {
    // Vars and symbolic vars defined inside a nested function are not visible after it.
    auto saved_vars = var_set_;
    auto saved_symbolic = symbolic_;
    auto saved_dataflow = dataflow_set_;
    bool saved_in_dataflow = in_dataflow_;
    for (auto& p : f->params) {
      if (!p) {
        malformed("a function parameter is null");
        continue;
      }
      if (p.as<DataflowVarNode>())
        malformed("DataflowVar " + quote(p->name_hint) + " is used as a function parameter");
      define_var(p);
    }
    // Parameters' bare-variable dimensions define symbolic variables for the whole signature.
    for (auto& p : f->params)
      if (p && p->struct_info_)
        for (auto& v : definable_symbolic_vars_of(p->struct_info_)) symbolic_.insert(v.get());
    for (auto& p : f->params)
      if (p && p->struct_info_) check_symbolic_uses(p->struct_info_, "the struct info of parameter " + quote(p->name_hint));
    if (f->ret_struct_info) check_symbolic_uses(f->ret_struct_info, "the return struct info");
    if (!f->body) {
      malformed("a function has no body");
    } else {
      if (!f->body.as<SeqExprNode>()) malformed("a function body is not a SeqExpr");
      visit_expr(f->body);
    }
    var_set_ = std::move(saved_vars);
    symbolic_ = std::move(saved_symbolic);
    dataflow_set_ = std::move(saved_dataflow);
    in_dataflow_ = saved_in_dataflow;
  }

  void visit_(const IfNode* op) override {
    visit_expr(op->cond);
    for (const Expr* branch : {&op->true_branch, &op->false_branch}) {
      if (*branch && !branch->as<SeqExprNode>()) malformed("an If branch is not a SeqExpr");
      auto saved_vars = var_set_;
      auto saved_symbolic = symbolic_;
      visit_expr(*branch);
      var_set_ = std::move(saved_vars);
      symbolic_ = std::move(saved_symbolic);
    }
  }

  void visit_(const SeqExprNode* op) override {
    for (auto& b : op->blocks) visit_binding_block(b);
    if (op->body && !is_leaf_or_tuple(op->body))
      malformed(std::string("a SeqExpr body is a ") + node_kind_name(op->body->kind()) +
                ", not a leaf expression");
    visit_expr(op->body);
  }

  void visit_(const TupleNode* op) override {
    for (auto& f : op->fields)
      if (f && !is_leaf_or_tuple(f))
        malformed(std::string("a tuple field is a ") + node_kind_name(f->kind()) + ", not a leaf");
    ExprVisitor::visit_(op);
  }

  void visit_(const CallNode* call) override {
    for (auto& a : call->args)
      if (a && !is_leaf_or_tuple(a))
        malformed(std::string("a call argument is a ") + node_kind_name(a->kind()) +
                  ", not a leaf expression");
    ExprVisitor::visit_(call);
    check_call_signature(*call);
  }

  void visit_binding_block_(const BindingBlockNode* block) override {
    in_dataflow_ = false;
    ExprVisitor::visit_binding_block_(block);
  }

  void visit_dataflow_block_(const BindingBlockNode* block) override {
    in_dataflow_ = true;
    dataflow_set_.clear();
    ExprVisitor::visit_dataflow_block_(block);
    dataflow_set_.clear();
    in_dataflow_ = false;
  }

  void visit_binding_(const VarBindingNode* b) override {
    bool saved = in_dataflow_;
    visit_expr(b->value);
    in_dataflow_ = saved;
    define_binding_var(b->var);
  }

  void visit_binding_(const MatchCastNode* b) override {
    bool saved = in_dataflow_;
    visit_expr(b->value);
    in_dataflow_ = saved;
    if (b->struct_info)
      for (auto& v : definable_symbolic_vars_of(b->struct_info)) symbolic_.insert(v.get());
    define_binding_var(b->var);
  }

  void visit_expr_dep_struct_info_field(const StructInfo& sinfo) override {
    check_symbolic_uses(sinfo, "a struct info field");
  }

  void visit_prim_expr(const PrimExpr& e) override {
    for (auto& v : prim_vars_of(e))
      if (!symbolic_.count(v.get()))
        malformed("symbolic variable " + quote(v->name) + " is used before it is defined");
  }

 private:
  void malformed(const std::string& what) {
    errors.push_back((func_name_.empty() ? std::string() : "function " + quote(func_name_) + ": ") + what);
  }

  void check_symbolic_uses(const StructInfo& sinfo, const std::string& where) {
    // A function signature defines the variables its parameters introduce (a nested composite
    // function's own `n_1`, as TVM's FuseOpsByPattern makes them); only the others are uses.
    std::unordered_set<const Object*> local;
    if (const auto* f = sinfo.as<FuncStructInfoNode>(); f && f->params)
      for (const StructInfo& p : *f->params)
        for (auto& v : definable_symbolic_vars_of(p)) local.insert(v.get());
    for (auto& v : symbolic_vars_of(sinfo))
      if (!symbolic_.count(v.get()) && !local.count(v.get()))
        malformed("symbolic variable " + quote(v->name) + " is used in " + where +
                  " before it is defined");
  }

  void define_var(const Var& v) {
    if (ever_defined_.count(v.get()))
      malformed("variable " + quote(v->name_hint) + " is defined more than once");
    ever_defined_.insert(v.get());
    if (check_struct_info_ && !v->struct_info_)
      malformed("variable " + quote(v->name_hint) + " has no struct info");
    if (v.as<DataflowVarNode>()) {
      dataflow_set_.insert(v.get());
      dataflow_defined_.insert(v.get());
    } else {
      var_set_.insert(v.get());
    }
  }

  void define_binding_var(const Var& v) {
    if (!v) {
      malformed("a binding has no variable");
      return;
    }
    if (v.as<DataflowVarNode>() && !in_dataflow_)
      malformed("DataflowVar " + quote(v->name_hint) + " is defined outside a dataflow block");
    if (v->struct_info_) check_symbolic_uses(v->struct_info_, "the struct info of " + quote(v->name_hint));
    define_var(v);
  }

  void check_call_signature(const CallNode& call) {
    if (!call.op) return;
    std::string callee;
    StructInfo sinfo;
    if (auto* o = call.op.as<OpNode>()) {
      const OpInterface* iface = find_op_interface(o->name);
      if (!iface) {
        malformed("call of unknown operator " + quote(o->name));
        return;
      }
      if (call.args.size() < iface->min_args || call.args.size() > iface->max_args)
        malformed("call of " + quote(o->name) + " has " + std::to_string(call.args.size()) +
                  " argument(s), which the operator does not accept");
      return;
    }
    if (auto* g = call.op.as<GlobalVarNode>()) {
      callee = "function " + quote(g->name_hint);
      sinfo = g->struct_info_;
      if (mod_ && mod_->contains(g->name_hint)) {
        Expr f = mod_->lookup(g->name_hint);
        if (auto* fn = f.as<FunctionNode>()) {
          bool ok = true;
          for (auto& p : fn->params) ok &= p && bool(p->struct_info_);
          if (ok) sinfo = func_struct_info_of(*fn);
        }
      }
    } else if (auto* v = call.op.as<VarNode>()) {
      callee = "variable " + quote(v->name_hint);
      sinfo = v->struct_info_;
    } else if (auto* fn = call.op.as<FunctionNode>()) {
      callee = "a local function";
      sinfo = fn->struct_info_;
    } else {
      return;  // ExternFunc: opaque
    }
    if (!sinfo) return;
    auto* finfo = sinfo.as<FuncStructInfoNode>();
    if (!finfo) {
      malformed("call of " + callee + ", whose struct info is not a function signature");
      return;
    }
    if (!finfo->params) return;
    if (finfo->params->size() != call.args.size()) {
      malformed("call of " + callee + " has " + std::to_string(call.args.size()) +
                " argument(s) but its signature takes " + std::to_string(finfo->params->size()));
      return;
    }
    for (auto& a : call.args)
      if (!a || !a->struct_info_) return;  // reported as missing struct info
    try {
      derive_call_ret_struct_info(FuncStructInfo(finfo), call);
    } catch (const Error& e) {
      malformed("call of " + callee + ": " + e.message());
    }
  }

  const IRModule* mod_;
  bool check_struct_info_;
  std::string func_name_;
  bool in_dataflow_ = false;
  std::unordered_set<const Object*> var_set_, ever_defined_, dataflow_set_, dataflow_defined_;
  std::unordered_set<const Object*> symbolic_;
};

}  // namespace

std::vector<std::string> well_formed_errors(const IRModule& mod, bool check_struct_info) {
  std::vector<std::string> errors;
  if (!mod) return {"the module is null"};
  WellFormedChecker checker(&mod, check_struct_info);
  for (auto& [name, entry] : mod->functions) {
    const auto& [gv, func] = entry;
    if (!gv || gv->name_hint != name)
      errors.push_back("function " + quote(name) + " is stored under a GlobalVar of another name");
    if (!func) {
      errors.push_back("function " + quote(name) + " is null");
      continue;
    }
    auto* fn = func.as<FunctionNode>();
    if (!fn) continue;  // ExternFunc
    if (auto sym = fn->attr_string("global_symbol"); sym && *sym != name)
      errors.push_back("function " + quote(name) + " has \"global_symbol\" " + quote(*sym) +
                       ", which differs from its name");
    try {
      checker.check_function(name, Function(fn));
    } catch (const std::exception& e) {
      errors.push_back("function " + quote(name) + ": checking failed: " + e.what());
    }
  }
  errors.insert(errors.end(), checker.errors.begin(), checker.errors.end());
  return errors;
}

std::vector<std::string> well_formed_errors(const Function& func, bool check_struct_info) {
  if (!func) return {"the function is null"};
  WellFormedChecker checker(nullptr, check_struct_info);
  try {
    checker.check_function("", func);
  } catch (const std::exception& e) {
    checker.errors.push_back(std::string("checking failed: ") + e.what());
  }
  return checker.errors;
}

namespace {
bool report(const std::vector<std::string>& errors) {
  for (auto& e : errors) std::cerr << "well_formed: " << e << "\n";
  return errors.empty();
}
}  // namespace

bool well_formed(const IRModule& mod, bool check_struct_info) {
  try {
    return report(well_formed_errors(mod, check_struct_info));
  } catch (...) {
    std::cerr << "well_formed: the check itself failed\n";
    return false;
  }
}

bool well_formed(const Function& func, bool check_struct_info) {
  try {
    return report(well_formed_errors(func, check_struct_info));
  } catch (...) {
    std::cerr << "well_formed: the check itself failed\n";
    return false;
  }
}

}  // namespace partita
