// LambdaLift: see the header.
#include "partita/transform/lambda_lift.h"

#include <set>

#include "partita/ir/analysis.h"
#include "partita/ir/functor.h"
#include "partita/ir/substitute.h"
#include "partita/support/error.h"

namespace partita::transform {

namespace {

struct Lifted {
  GlobalVar gv;
  std::vector<Var> captured;  // passed after the lambda's own arguments
};

class LambdaLifter : public ExprMutator {
 public:
  LambdaLifter(IRModule mod, std::set<std::string>& taken)
      : ExprMutator(mod), mod_(mod), taken_(taken) {}

  /// `fn` (the module function `name`) with its lambdas lifted; the lifted ones in `lifted`.
  Function run(const std::string& name, const Function& fn) {
    path_ = {name};
    return visit_expr(fn).as_ref<FunctionNode>();
  }
  std::vector<std::pair<GlobalVar, Function>> lifted;

  void visit_binding_(const VarBindingNode* b) override {
    const auto* lambda = b->value.as<FunctionNode>();
    if (!lambda) return ExprMutator::visit_binding_(b);
    lift(b->var, Function(lambda));
    // The binding goes: uses of the variable now name the GlobalVar.
  }

  Expr visit_(const CallNode* op) override {
    if (const auto* v = op->op.as<VarNode>()) {
      auto it = lambdas_.find(Var(v));
      if (it != lambdas_.end()) {
        std::vector<Expr> args;
        for (const Expr& a : op->args) args.push_back(visit_expr(a));
        for (const Var& c : it->second.captured) args.push_back(visit_expr(c));
        return builder_.normalize(make<CallNode>(it->second.gv, args, op->attrs, op->sinfo_args));
      }
    }
    return ExprMutator::visit_(op);
  }
  Expr visit_(const VarNode* op) override { return use(op); }
  Expr visit_(const DataflowVarNode* op) override { return use(op); }

 private:
  Expr use(const VarNode* op) {
    auto it = lambdas_.find(Var(op));
    if (it == lambdas_.end()) return ExprMutator::visit_(op);
    if (!it->second.captured.empty())
      throw_error("ValueError",
                  "LambdaLift: " + path_.front() + " uses the closure " + op->name_hint +
                      " other than by calling it; Partita lifts closures by passing what they "
                      "capture at each call and has no closure objects");
    return it->second.gv;
  }

  std::string name_for(const FunctionNode& lambda, const std::string& var_name) {
    std::vector<std::string> candidates;
    if (auto sym = lambda.attr_string("global_symbol")) {
      if (taken_.count(*sym))
        throw_error("ValueError", "LambdaLift: " + path_.front() +
                                      " holds a function whose global_symbol \"" + *sym +
                                      "\" is already a name in the module");
      candidates.push_back(*sym);
    }
    candidates.push_back(path_.front() + "_" + var_name);
    if (path_.size() > 1) {
      std::string full;
      for (const std::string& p : path_) full += p + "_";
      candidates.push_back(full + var_name);
    }
    for (const std::string& c : candidates)
      if (!taken_.count(c)) return c;
    for (int n = 0;; ++n)
      if (std::string c = path_.front() + "_" + var_name + "_" + std::to_string(n);
          !taken_.count(c))
        return c;
  }

  void lift(const Var& var, const Function& lambda) {
    std::string name = name_for(*lambda, var->name_hint);
    taken_.insert(name);
    std::vector<Var> captured;
    for (const Var& v : free_vars(lambda))
      if (v.get() != var.get()) captured.push_back(v);
    // Captured variables become parameters (fresh variables of the same names and struct info).
    std::vector<Var> params = lambda->params;
    VarRemap to_params;
    for (const Var& c : captured) {
      Var p = make<VarNode>(c->name_hint, c->struct_info_);
      params.push_back(p);
      to_params[c] = p;
    }
    Function opened = make<FunctionNode>(
        params, to_params.empty() ? lambda->body : substitute_vars(lambda->body, to_params),
        lambda->ret_struct_info, lambda->is_pure, lambda->attrs);
    GlobalVar gv = make<GlobalVarNode>(name);
    gv->struct_info_ = func_struct_info_of(*opened);
    lambdas_[var] = Lifted{gv, captured};
    // Inside the lifted function, a recursive call passes its own parameters for the captures.
    Lifted inside{gv, {}};
    for (size_t i = lambda->params.size(); i < params.size(); ++i)
      inside.captured.push_back(params[i]);
    auto saved = lambdas_[var];
    lambdas_[var] = inside;
    path_.push_back(var->name_hint);
    Function body_lifted = visit_with_scope(opened);
    path_.pop_back();
    lambdas_[var] = saved;
    Function out = copy_with_new_vars(body_lifted);
    out->struct_info_ = func_struct_info_of(*out);
    gv->struct_info_ = out->struct_info_;
    lifted.emplace_back(gv, out);
  }

  /// Visits a function to be lifted as a function of its own (its body in a fresh scope).
  Function visit_with_scope(const Function& f) {
    return ExprMutator::visit_(f.get()).as_ref<FunctionNode>();
  }

  IRModule mod_;
  std::set<std::string>& taken_;
  std::vector<std::string> path_;
  std::unordered_map<Var, Lifted, RefHash, RefEq> lambdas_;
};

}  // namespace

Pass LambdaLift() {
  return create_module_pass(
      [](IRModule mod, const PassContext&) -> IRModule {
        std::set<std::string> taken;
        for (const auto& [gv, f] : mod.functions()) taken.insert(gv->name_hint);
        std::vector<std::pair<GlobalVar, Expr>> updates;
        for (const auto& [gv, f] : mod.functions()) {
          const auto* fn = f.as<FunctionNode>();
          if (!fn) continue;
          LambdaLifter lifter(mod, taken);
          Function nf = lifter.run(gv->name_hint, Function(fn));
          if (lifter.lifted.empty()) continue;
          updates.emplace_back(gv, nf);
          for (auto& [lgv, lf] : lifter.lifted) updates.emplace_back(lgv, lf);
        }
        for (auto& [gv, f] : updates) mod.add(gv, f, /*replace=*/true);
        return mod;
      },
      0, "LambdaLift");
}

}  // namespace partita::transform
