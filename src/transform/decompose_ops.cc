// DecomposeOpsForInference: see the header. The rewrite builds one nested expression per
// batch_norm; the normalizer binds its parts in evaluation order, which is TVM's order.
#include "partita/transform/decompose_ops.h"

#include "partita/ir/analysis.h"
#include "partita/ir/functor.h"
#include "partita/op/registry.h"
#include "partita/support/error.h"

namespace partita::transform {

namespace {

Expr scalar_constant(double value, DataType dtype) {
  Tensor t = Tensor::empty({}, dtype);
  if (dtype == DataType::Float(32))
    *t.data_as<float>() = float(value);
  else if (dtype == DataType::Float(64))
    *t.data_as<double>() = value;
  else
    throw_error("TypeError", "DecomposeOpsForInference: batch_norm on " + dtype.str() +
                                 " tensors (float32 or float64 expected)");
  return make<ConstantNode>(t);
}

/// `e` (1-d, along `axis`) expanded to rank `ndim` so that it broadcasts along `axis`.
Expr expand_to(const Expr& e, int64_t ndim, int64_t axis) {
  std::vector<int64_t> axes;
  for (int64_t i = 0; i < ndim; ++i)
    if (i != axis) axes.push_back(i);
  return op::make_call("relax.expand_dims", {e}, {{"axis", axes}});
}

class OpDecomposer : public ExprMutator {
 public:
  using ExprMutator::ExprMutator;
  Expr visit_(const CallNode* op) override {
    Expr e = ExprMutator::visit_(op);
    const auto* call = e.as<CallNode>();
    const auto* callee = call ? call->op.as<OpNode>() : nullptr;
    if (!callee || callee->name != "relax.nn.batch_norm" || call->args.size() != 5) return e;
    const auto* t = struct_info_of(call->args[0]).as<TensorStructInfoNode>();
    if (!t || t->is_unknown_ndim())
      throw_error("TypeError",
                  "DecomposeOpsForInference: batch_norm's data must be a tensor of known rank");
    int64_t ndim = t->ndim;
    int64_t axis = call->attrs->get<int64_t>("axis");
    if (axis < 0) axis += ndim;
    double eps = call->attrs->get<double>("epsilon");
    auto make = [](const char* name, std::vector<Expr> args) {
      return Expr(op::make_call(name, std::move(args)));
    };
    Expr out = make("relax.subtract", {call->args[0], expand_to(call->args[3], ndim, axis)});
    Expr sqrt_var = make("relax.sqrt", {make("relax.add", {expand_to(call->args[4], ndim, axis),
                                                           scalar_constant(eps, t->dtype)})});
    out = make("relax.divide", {out, sqrt_var});
    if (call->attrs->get<bool>("scale"))
      out = make("relax.multiply", {out, expand_to(call->args[1], ndim, axis)});
    if (call->attrs->get<bool>("center"))
      out = make("relax.add", {out, expand_to(call->args[2], ndim, axis)});
    return make_tuple(out, call->args[3], call->args[4]);
  }

 private:
  static Expr make_tuple(Expr a, Expr b, Expr c) {
    return partita::make<TupleNode>(std::vector<Expr>{std::move(a), std::move(b), std::move(c)});
  }
};

}  // namespace

Pass DecomposeOpsForInference(std::string func_name) {
  return create_module_pass(
      [func_name](IRModule mod, const PassContext&) -> IRModule {
        if (!func_name.empty() && !mod.contains(func_name))
          throw_error(
              "ValueError",
              "DecomposeOpsForInference: the module has no function named \"" + func_name + "\"");
        for (const auto& [gv, f] : mod.functions()) {
          const auto* fn = f.as<FunctionNode>();
          if (!fn || (!func_name.empty() && gv->name_hint != func_name)) continue;
          OpDecomposer decomposer(mod);
          Expr nf = decomposer.visit_expr(f);
          if (nf.get() != f.get()) mod.update(gv, nf);
        }
        return mod;
      },
      0, "DecomposeOpsForInference");
}

}  // namespace partita::transform
