// RealizeVDevice: infer every tensor variable's virtual device, then write it into the IR
// (see realize_vdevice.h for the rules, which are TVM's).
#include "partita/transform/realize_vdevice.h"

#include <unordered_map>

#include "function_return_refinement.h"
#include "partita/ir/analysis.h"
#include "partita/ir/functor.h"
#include "partita/op/registry.h"
#include "partita/support/error.h"

namespace partita::transform {
namespace {

/// Variables with a vdevice, in the order they were first recorded (so conflicts resolve the
/// same way on every run).
class VarDeviceMap {
 public:
  const VDevice* find(const Object* var) const {
    auto it = index_.find(var);
    return it == index_.end() ? nullptr : &entries_[it->second].second;
  }
  bool contains(const Object* var) const { return index_.count(var) != 0; }
  void set(const Var& var, const VDevice& vdevice) {
    auto [it, inserted] = index_.emplace(var.get(), entries_.size());
    if (inserted)
      entries_.emplace_back(var, vdevice);
    else
      entries_[it->second].second = vdevice;
  }
  const std::vector<std::pair<Var, VDevice>>& entries() const { return entries_; }

 private:
  std::vector<std::pair<Var, VDevice>> entries_;
  std::unordered_map<const Object*, size_t> index_;
};

bool is_op(const Expr& callee, const char* name) {
  const auto* op = callee.as<OpNode>();
  return op && op->name == name;
}

int64_t int_attr(const CallNode& call, const char* name) {
  const AttrValue* v = call.attrs ? call.attrs->find(name) : nullptr;
  const int64_t* i = v ? std::get_if<int64_t>(v) : nullptr;
  if (!i)
    throw_error("ValueError",
                std::string("RealizeVDevice: R.hint_on_device has no integer '") + name + "'");
  return *i;
}

/// The module's vdevice an R.hint_on_device call names: the one whose target has the hinted
/// device type, with the hinted id and memory scope.
class VDeviceLookup {
 public:
  explicit VDeviceLookup(const IRModule& mod) : vdevices_(mod.vdevices()) {
    for (const GlobalInfo& info : mod.global_infos("vdevice"))
      if (!info.as<VDeviceNode>())
        throw_error(
            "TypeError",
            std::string("RealizeVDevice: every entry of the module's \"vdevice\" list must be a "
                        "VDevice, not ") +
                node_kind_name(info->kind()));
  }

  VDevice operator()(const CallNode& hint) const {
    int64_t type = int_attr(hint, "device_type");
    int64_t id = int_attr(hint, "index");
    const AttrValue* s = hint.attrs->find("memory_scope");
    std::string scope =
        s && std::holds_alternative<std::string>(*s) ? std::get<std::string>(*s) : "global";
    std::string device = device_type_name(int(type)) + ":" + std::to_string(id);
    if (vdevices_.empty())
      throw_error("ValueError", "RealizeVDevice: R.hint_on_device(..., " + device +
                                    ") needs the module's vdevices, but it declares none "
                                    "(I.module_global_infos({\"vdevice\": [...]}))");
    if (id < 0)
      throw_error("ValueError",
                  "RealizeVDevice: the device id in R.hint_on_device must not be negative");
    for (const VDevice& v : vdevices_)
      if (target_device_type(*v->target) == type && v->vdevice_id == id && v->memory_scope == scope)
        return v;
    std::string listed;
    for (const VDevice& v : vdevices_)
      listed += (listed.empty() ? "" : ", ") + device_type_name(target_device_type(*v->target)) +
                ":" + std::to_string(v->vdevice_id) + " \"" + v->memory_scope + "\" (" +
                v->target->kind + ")";
    throw_error("ValueError", "RealizeVDevice: R.hint_on_device names device " + device +
                                  " with memory scope \"" + scope +
                                  "\", which is not among the module's vdevices: " + listed);
  }

 private:
  std::vector<VDevice> vdevices_;
};

const TensorStructInfoNode* tensor_of(const Object* var) {
  const auto* v = static_cast<const VarNode*>(var);
  return v->struct_info_.as<TensorStructInfoNode>();
}

/// Step 1: the variables whose device is stated (`known`) and the inputs of R.hint_on_device
/// (`hinted`, which yield to any other annotation).
class DeviceHintCollector : public ExprVisitor {
 public:
  explicit DeviceHintCollector(const VDeviceLookup& lookup) : lookup_(lookup) {}
  VarDeviceMap known, hinted;

  using ExprVisitor::visit_;
  using ExprVisitor::visit_binding_;
  using ExprVisitor::visit_var_def_;

  void visit_var_def_(const VarNode* var) override { record_def(var); }
  void visit_var_def_(const DataflowVarNode* var) override { record_def(var); }

  void visit_binding(const Binding& binding) override {
    ExprVisitor::visit_binding(binding);
    bound_[binding->var.get()] = binding_value(*binding);
  }

  void visit_binding_(const VarBindingNode* binding) override {
    ExprVisitor::visit_binding_(binding);
    const auto* call = binding->value.as<CallNode>();
    if (!call || !is_op(call->op, "relax.hint_on_device")) return;
    VDevice vdevice = lookup_(*call);
    known.set(binding->var, vdevice);
    if (!call->args.empty())
      if (auto arg = call->args[0].as_ref<VarNode>()) hinted.set(arg, vdevice);
  }

  void visit_(const FunctionNode* func) override {
    ExprVisitor::visit_(func);
    const auto* seq = func->body.as<SeqExprNode>();
    check_return(seq ? seq->body : func->body, func->ret_struct_info);
  }

 private:
  void record_def(const VarNode* var) {
    const TensorStructInfoNode* t = tensor_of(var);
    if (t && t->vdevice) known.set(Var(var), t->vdevice);
  }

  // A function annotated as returning a tensor on a device places the returned variable there;
  // a returned tuple places each element it can trace to a variable.
  void check_return(Expr expr, const StructInfo& sinfo) {
    if (!expr || !sinfo) return;
    if (const auto* t = sinfo.as<TensorStructInfoNode>(); t && t->vdevice) {
      if (auto var = expr.as_ref<VarNode>(); var && !known.contains(var.get()))
        known.set(var, t->vdevice);
    }
    const auto* tuple_sinfo = sinfo.as<TupleStructInfoNode>();
    if (!tuple_sinfo) return;
    while (expr.as<VarNode>()) {
      auto it = bound_.find(expr.get());
      if (it == bound_.end()) break;
      expr = it->second;
    }
    const auto* tuple = expr.as<TupleNode>();
    if (!tuple) return;
    if (tuple->fields.size() != tuple_sinfo->fields.size())
      throw_error("ValueError", "RealizeVDevice: a function returns a tuple of " +
                                    std::to_string(tuple->fields.size()) +
                                    " elements but is annotated as returning " +
                                    std::to_string(tuple_sinfo->fields.size()));
    for (size_t i = 0; i < tuple->fields.size(); ++i)
      check_return(tuple->fields[i], tuple_sinfo->fields[i]);
  }

  const VDeviceLookup& lookup_;
  std::unordered_map<const Object*, Expr> bound_;
};

/// Step 2: which variables must share a device. Edges in discovery order.
class CoLocationCollector : public ExprVisitor {
 public:
  std::unordered_map<const Object*, std::vector<Var>> neighbours;

  using ExprVisitor::visit_;

  void visit_binding(const Binding& binding) override {
    Var saved = current_;
    current_ = binding->var;
    ExprVisitor::visit_binding(binding);
    current_ = saved;
  }
  void visit_(const CallNode* call) override {
    // Data may change device across these two; their operands are not co-located.
    if (is_op(call->op, "relax.to_vdevice") || is_op(call->op, "relax.hint_on_device")) return;
    ExprVisitor::visit_(call);
  }
  void visit_(const VarNode* var) override { link(var); }
  void visit_(const DataflowVarNode* var) override { link(var); }

 private:
  static bool is_scalar(const VarNode* v) {
    return v->struct_info_.as<PrimStructInfoNode>() != nullptr;
  }
  void link(const VarNode* var) {
    if (!current_ || is_scalar(current_.get()) || is_scalar(var)) return;
    neighbours[current_.get()].push_back(Var(var));
    neighbours[var].push_back(current_);
  }
  Var current_;
};

/// Step 3: propagate the known devices, then the hinted ones, along co-location.
VarDeviceMap infer_vdevices(const IRModule& mod, const VDeviceLookup& lookup) {
  DeviceHintCollector hints(lookup);
  CoLocationCollector colocated;
  for (const auto& [gv, f] : mod.functions()) {
    if (!f.as<FunctionNode>()) continue;
    hints.visit_expr(f);
    colocated.visit_expr(f);
  }
  VarDeviceMap result;
  std::vector<const Object*> stack;
  auto propagate = [&]() {
    while (!stack.empty()) {
      const Object* var = stack.back();
      stack.pop_back();
      auto it = colocated.neighbours.find(var);
      if (it == colocated.neighbours.end()) continue;
      VDevice vdevice = *result.find(var);
      for (const Var& other : it->second) {
        if (result.contains(other.get())) continue;
        result.set(other, vdevice);
        stack.push_back(other.get());
      }
    }
  };
  for (const auto& [var, vdevice] : hints.known.entries()) {
    result.set(var, vdevice);
    stack.push_back(var.get());
  }
  propagate();
  for (const auto& [var, vdevice] : hints.hinted.entries()) {
    if (result.contains(var.get())) continue;
    result.set(var, vdevice);
    stack.push_back(var.get());
  }
  propagate();
  return result;
}

/// Step 4: the devices written into struct info; hints become copies or disappear.
class VDeviceStructInfoUpdater : public ExprMutator {
 public:
  VDeviceStructInfoUpdater(const IRModule& mod, const VDeviceLookup& lookup,
                           const VarDeviceMap& vdevices)
      : ExprMutator(mod), lookup_(lookup), vdevices_(vdevices) {}

  Var visit_var_def(const Var& old_var) override {
    Var var = ExprMutator::visit_var_def(old_var);
    const VDevice* vdevice = vdevices_.find(old_var.get());
    const auto* t = var->struct_info_.as<TensorStructInfoNode>();
    // As TVM, a placed variable is always redefined (even on the device it had), so a function
    // with any placed variable is rebuilt and its return struct info refined.
    if (!vdevice || !t) return var;
    StructInfo sinfo = tensor_sinfo_on(*t, *vdevice);
    if (var.as<DataflowVarNode>()) return make<DataflowVarNode>(var->name_hint, sinfo);
    return make<VarNode>(var->name_hint, sinfo);
  }

  using ExprMutator::visit_;

  Expr visit_(const CallNode* op) override {
    Expr out = ExprMutator::visit_(op);
    const auto* call = out.as<CallNode>();
    if (!call || !is_op(call->op, "relax.hint_on_device") || call->args.size() != 1) return out;
    const Expr& arg = call->args[0];
    const auto* t = arg->struct_info_.as<TensorStructInfoNode>();
    if (!t)
      throw_error("TypeError", "RealizeVDevice: the argument of R.hint_on_device must be a tensor");
    VDevice dst = lookup_(*call);
    if (t->vdevice && same_vdevice(t->vdevice, dst)) return arg;
    return op::make_call("relax.to_vdevice", {arg}, {{"dst_vdevice", dst}});
  }

  // As TVM's Function constructor: a rebuilt function returns its body's struct info when that
  // is more precise than the declared one (here: the device its result now lives on).
  Expr visit_(const FunctionNode* op) override {
    Expr out = ExprMutator::visit_(op);
    if (out.get() == op || !out.as<FunctionNode>()) return out;
    return detail::refine_return_struct_info(out.as_ref<FunctionNode>());
  }

 private:
  const VDeviceLookup& lookup_;
  const VarDeviceMap& vdevices_;
};

}  // namespace

Pass RealizeVDevice() {
  return create_module_pass(
      [](IRModule mod, const PassContext&) -> IRModule {
        VDeviceLookup lookup(mod);
        VarDeviceMap vdevices = infer_vdevices(mod, lookup);
        VDeviceStructInfoUpdater updater(mod, lookup, vdevices);
        std::vector<std::pair<GlobalVar, Expr>> updates;
        for (const auto& [gv, f] : mod.functions()) {
          if (!f.as<FunctionNode>()) continue;
          Expr out = updater.visit_expr(f);
          if (out.get() != f.get()) updates.emplace_back(gv, out);
        }
        for (const auto& [gv, f] : updates) mod.update(gv, f);
        return mod;
      },
      0, "RealizeVDevice");
}

}  // namespace partita::transform
