// PlaceDeviceCopies (see place_device_copies.h): offloaded functions get their codegen's device,
// host functions take and return host tensors, and a copy is inserted where an argument is on
// another device than its callee runs on.
#include "partita/transform/place_device_copies.h"

#include <unordered_map>
#include <unordered_set>

#include "function_return_refinement.h"
#include "partita/ir/analysis.h"
#include "partita/ir/functor.h"
#include "partita/op/ops.h"
#include "partita/op/registry.h"
#include "partita/support/error.h"

namespace partita::transform {
namespace {

/// `s` with every tensor that has no vdevice placed on `d` (tuples recursively).
StructInfo place_on(const StructInfo& s, const VDevice& d) {
  if (const auto* t = s.as<TensorStructInfoNode>()) return t->vdevice ? s : tensor_sinfo_on(*t, d);
  if (const auto* tu = s.as<TupleStructInfoNode>()) {
    std::vector<StructInfo> fields;
    bool changed = false;
    for (const auto& f : tu->fields) {
      fields.push_back(place_on(f, d));
      changed |= fields.back().get() != f.get();
    }
    return changed ? tuple_sinfo(std::move(fields)) : s;
  }
  return s;
}

Var with_sinfo(const Var& v, const StructInfo& s) {
  if (s.get() == v->struct_info_.get()) return v;
  if (v.as<DataflowVarNode>()) return make<DataflowVarNode>(v->name_hint, s);
  return make<VarNode>(v->name_hint, s);
}

/// The module's vdevice list, extended by the devices the pass uses (equal ones reused).
class VDeviceList {
 public:
  explicit VDeviceList(const IRModule& mod) : list_(mod.global_infos("vdevice")) {}
  VDevice canonical(const VDevice& v) {
    for (const GlobalInfo& info : list_)
      if (auto existing = info.as_ref<VDeviceNode>(); existing && same_vdevice(existing, v))
        return existing;
    list_.push_back(v);
    changed_ = true;
    return v;
  }
  bool changed() const { return changed_; }
  const std::vector<GlobalInfo>& list() const { return list_; }

 private:
  std::vector<GlobalInfo> list_;
  bool changed_ = false;
};

/// Rewrites references to replaced GlobalVars (whose functions changed signature).
class GlobalVarRemapper : public ExprMutator {
 public:
  GlobalVarRemapper(const IRModule& mod, const std::unordered_map<const Object*, GlobalVar>& remap)
      : ExprMutator(mod), remap_(remap) {}
  using ExprMutator::visit_;
  Expr visit_(const GlobalVarNode* op) override {
    auto it = remap_.find(op);
    return it == remap_.end() ? Expr(op) : Expr(it->second);
  }

 protected:
  const std::unordered_map<const Object*, GlobalVar>& remap_;
};

/// An offloaded function on its device: tensor parameters and results carry it, those of the
/// functions inside it (composites) too, so its body's values are typed on the device.
class OffloadedFunctionPlacer : public GlobalVarRemapper {
 public:
  OffloadedFunctionPlacer(const IRModule& mod,
                          const std::unordered_map<const Object*, GlobalVar>& remap, VDevice device)
      : GlobalVarRemapper(mod, remap), device_(std::move(device)) {}

  using GlobalVarRemapper::visit_;

  Var visit_var_def(const Var& var) override {
    Var v = ExprMutator::visit_var_def(var);
    return params_.count(var.get()) ? with_sinfo(v, place_on(v->struct_info_, device_)) : v;
  }
  Expr visit_(const FunctionNode* op) override {
    Expr out = GlobalVarRemapper::visit_(op);
    const auto* g = out.as<FunctionNode>();
    StructInfo ret = g && g->ret_struct_info ? place_on(g->ret_struct_info, device_) : StructInfo();
    if (!g || ret.get() == g->ret_struct_info.get()) return out;
    return make<FunctionNode>(g->params, g->body, ret, g->is_pure, g->attrs);
  }

  Function place(const Function& f) {
    post_order_visit(f, [&](const Expr& e) {
      if (const auto* fn = e.as<FunctionNode>())
        for (const Var& p : fn->params) params_.insert(p.get());
    });
    return visit_expr(f).as_ref<FunctionNode>();
  }

 private:
  VDevice device_;
  std::unordered_set<const Object*> params_;
};

/// A host function: parameters and results on the host, and each call's arguments moved to the
/// device of its callee.
class HostFunctionPlacer : public GlobalVarRemapper {
 public:
  HostFunctionPlacer(const IRModule& mod, const std::unordered_map<const Object*, GlobalVar>& remap,
                     const std::unordered_map<std::string, VDevice>& offloaded,
                     const std::map<std::string, VDevice>& externs, VDevice host)
      : GlobalVarRemapper(mod, remap), offloaded_(offloaded), externs_(externs),
        host_(std::move(host)) {}

  Function place(const Function& f) {
    post_order_visit(f, [&](const Expr& e) {
      if (const auto* fn = e.as<FunctionNode>())
        for (const Var& p : fn->params) params_.insert(p.get());
    });
    Expr out = visit_expr(f);
    Function g = out.as_ref<FunctionNode>();
    Function refined = detail::refine_return_struct_info(g);
    if (refined.get() != g.get()) refined->struct_info_ = func_struct_info_of(*refined);
    return refined;
  }

  using GlobalVarRemapper::visit_;

  Var visit_var_def(const Var& var) override {
    Var v = ExprMutator::visit_var_def(var);
    return params_.count(var.get()) ? with_sinfo(v, place_on(v->struct_info_, host_)) : v;
  }

  Expr visit_(const FunctionNode* op) override {
    const FunctionNode* saved = function_;
    function_ = op;
    Expr out = GlobalVarRemapper::visit_(op);
    function_ = saved;
    return out;
  }

  // The arguments move to the callee's device before the call is rebuilt (an operator's
  // inference refuses operands on two devices).
  Expr visit_(const CallNode* op) override {
    Expr callee = visit_expr(op->op);
    VDevice target = callee_device(callee);
    bool changed = callee.get() != op->op.get();
    std::vector<Expr> args;
    for (const Expr& a : op->args) {
      Expr v = visit_expr(a);
      if (target) v = to_device(v, target);
      changed |= v.get() != a.get();
      args.push_back(v);
    }
    // A compiled function's result is on its device (the host's for one not listed): its
    // declared result says so.
    std::vector<StructInfo> sinfo_args = op->sinfo_args;
    if (const auto* ext = callee.as<ExternFuncNode>(); ext && target) {
      for (StructInfo& s : sinfo_args) {
        StructInfo placed = place_on(s, target);
        changed |= placed.get() != s.get();
        s = placed;
      }
      if (changed && !sinfo_args.empty()) {
        auto placed_callee = make<ExternFuncNode>(ext->global_symbol);
        placed_callee->struct_info_ = make<FuncStructInfoNode>(std::nullopt, sinfo_args[0], true);
        callee = placed_callee;
      }
    }
    if (!changed) return Expr(op);
    return make<CallNode>(callee, std::move(args), op->attrs, std::move(sinfo_args));
  }

  // As ExprMutator's, plus: a function's result goes where its return struct info says (the
  // host unless it names a device).
  Expr visit_(const SeqExprNode* op) override {
    bool is_function_body = function_ && function_->body.get() == op;
    StructInfo ret = is_function_body ? function_->ret_struct_info : StructInfo();
    bool unchanged = true;
    std::vector<BindingBlock> blocks;
    for (const auto& b : op->blocks) {
      BindingBlock nb = visit_binding_block(b);
      if (!nb->bindings.empty()) blocks.push_back(nb);
      unchanged &= nb.get() == b.get();
    }
    builder_.begin_binding_block();
    copies_.clear();
    Expr body = visit_expr(op->body);
    if (is_function_body) body = result_to(body, ret);
    BindingBlock prologue = builder_.end_block();
    copies_.clear();
    if (!prologue->bindings.empty()) {
      blocks.push_back(prologue);
      unchanged = false;
    }
    if (unchanged && body.get() == op->body.get()) return Expr(op);
    return make<SeqExprNode>(std::move(blocks), body);
  }

  // A copy is reused within its block (a dataflow variable cannot leave it).
  BindingBlock visit_binding_block(const BindingBlock& block) override {
    copies_.clear();
    BindingBlock out = ExprMutator::visit_binding_block(block);
    copies_.clear();
    return out;
  }

 private:
  VDevice callee_device(const Expr& callee) const {
    if (const auto* op = callee.as<OpNode>()) {
      // The device operators say where their result goes themselves; a view (reshape between
      // two partitions on a GPU, left alone by the fusion) is its operand's bytes wherever they
      // are, and the VM makes it without a kernel.
      if (op->name == "relax.to_vdevice" || op->name == "relax.hint_on_device") return {};
      const op::OpDef* def = op::find_op_def(op->name);
      if (def && def->view == op::ViewKind::Always) return {};
      return host_;
    }
    if (const auto* gv = callee.as<GlobalVarNode>()) {
      auto it = offloaded_.find(gv->name_hint);
      return it == offloaded_.end() ? host_ : it->second;
    }
    if (const auto* ext = callee.as<ExternFuncNode>()) {
      auto it = externs_.find(ext->global_symbol);
      return it == externs_.end() ? host_ : it->second;
    }
    return host_;  // host functions, closures, other packed functions
  }

  const VDevice& device_of(const TensorStructInfoNode& t) const {
    return t.vdevice ? t.vdevice : host_;
  }

  /// `e` on `d`: itself when already there, else a copy (tuples field by field).
  Expr to_device(const Expr& e, const VDevice& d) {
    const StructInfo& s = e->struct_info_;
    if (const auto* t = s.as<TensorStructInfoNode>()) {
      if (same_vdevice(device_of(*t), d)) return e;
      auto key = std::make_pair(e.get(), d.get());
      auto it = copies_.find(key);
      if (it != copies_.end()) return it->second;
      Var copy = builder_.emit(op::to_vdevice(e, d));
      copies_.emplace(key, copy);
      return copy;
    }
    const auto* tu = s.as<TupleStructInfoNode>();
    if (!tu || !needs_copy(s, d)) return e;
    std::vector<Expr> fields;
    const auto* literal = e.as<TupleNode>();
    for (size_t i = 0; i < tu->fields.size(); ++i) {
      Expr f =
          literal ? literal->fields[i] : Expr(builder_.emit(make<TupleGetItemNode>(e, int(i))));
      fields.push_back(to_device(f, d));
    }
    return builder_.normalize(make<TupleNode>(std::move(fields)));
  }

  bool needs_copy(const StructInfo& s, const VDevice& d) const {
    if (const auto* t = s.as<TensorStructInfoNode>()) return !same_vdevice(device_of(*t), d);
    if (const auto* tu = s.as<TupleStructInfoNode>()) {
      for (const auto& f : tu->fields)
        if (needs_copy(f, d)) return true;
    }
    return false;
  }

  /// The returned value moved to the devices its declared struct info names (host elsewhere).
  Expr result_to(const Expr& e, const StructInfo& declared) {
    const StructInfo& s = e->struct_info_;
    if (s.as<TensorStructInfoNode>()) {
      const auto* d = declared ? declared.as<TensorStructInfoNode>() : nullptr;
      return to_device(e, d && d->vdevice ? d->vdevice : host_);
    }
    const auto* tu = s.as<TupleStructInfoNode>();
    if (!tu) return e;
    const auto* dt = declared ? declared.as<TupleStructInfoNode>() : nullptr;
    const auto* literal = e.as<TupleNode>();
    std::vector<Expr> fields;
    bool changed = false;
    for (size_t i = 0; i < tu->fields.size(); ++i) {
      StructInfo fd = dt && i < dt->fields.size() ? dt->fields[i] : StructInfo();
      Expr f = literal ? literal->fields[i] : Expr(make<TupleGetItemNode>(e, int(i)));
      f = builder_.normalize(f);
      Expr moved = result_to(f, fd);
      changed |= moved.get() != f.get();
      fields.push_back(moved);
    }
    if (!changed) return e;
    return builder_.normalize(make<TupleNode>(std::move(fields)));
  }

  struct PairHash {
    size_t operator()(const std::pair<const Object*, const Object*>& p) const {
      return std::hash<const void*>()(p.first) * 31 + std::hash<const void*>()(p.second);
    }
  };

  const std::unordered_map<std::string, VDevice>& offloaded_;
  const std::map<std::string, VDevice>& externs_;
  VDevice host_;
  std::unordered_set<const Object*> params_;
  const FunctionNode* function_ = nullptr;
  std::unordered_map<std::pair<const Object*, const Object*>, Expr, PairHash> copies_;
};

}  // namespace

namespace {

Pass place_device_copies(std::map<std::string, VDevice> codegen_devices, VDevice host,
                         std::map<std::string, VDevice> extern_devices) {
  for (const auto& [name, d] : codegen_devices)
    if (!d)
      throw_error("ValueError", "PlaceDeviceCopies: the device of codegen '" + name + "' is null");
  for (const auto& [name, d] : extern_devices)
    if (!d)
      throw_error("ValueError", "PlaceDeviceCopies: the device of external function '" + name +
                                    "' is null");
  return create_module_pass(
      [codegen_devices = std::move(codegen_devices), host = std::move(host),
       extern_devices = std::move(extern_devices)](IRModule mod, const PassContext&) -> IRModule {
        VDeviceList vdevices(mod);
        VDevice host_device = vdevices.canonical(host ? host : make_vdevice("llvm"));
        std::map<std::string, VDevice> externs;
        for (const auto& [name, d] : extern_devices) externs[name] = vdevices.canonical(d);
        // Offloaded functions first: their new signatures type the calls in host functions.
        std::unordered_map<std::string, VDevice> offloaded;
        std::unordered_map<const Object*, GlobalVar> remap;
        std::vector<std::pair<GlobalVar, Function>> placed;
        for (const auto& [gv, f] : mod.functions()) {
          const auto* fn = f.as<FunctionNode>();
          auto codegen = fn ? fn->attr_string("Codegen") : std::nullopt;
          if (!codegen) continue;
          auto it = codegen_devices.find(*codegen);
          VDevice d = it == codegen_devices.end() ? host_device : vdevices.canonical(it->second);
          offloaded[gv->name_hint] = d;
          GlobalVar ngv = make<GlobalVarNode>(gv->name_hint);
          remap[gv.get()] = ngv;
          placed.emplace_back(ngv, f.as_ref<FunctionNode>());
        }
        for (auto& [ngv, f] : placed) {
          f = OffloadedFunctionPlacer(mod, remap, offloaded.at(ngv->name_hint)).place(f);
          ngv->struct_info_ = f->struct_info_;
        }
        std::vector<std::pair<GlobalVar, Expr>> updated;
        for (const auto& [gv, f] : mod.functions()) {
          if (remap.count(gv.get()) || !f.as<FunctionNode>()) continue;
          Function out = HostFunctionPlacer(mod, remap, offloaded, externs, host_device)
                             .place(f.as_ref<FunctionNode>());
          if (out.get() != f.get()) updated.emplace_back(gv, out);
        }
        for (const auto& [ngv, f] : placed) {
          mod.remove(ngv->name_hint);
          mod.add(ngv, f);
        }
        for (const auto& [gv, f] : updated) mod.update(gv, f);
        if (vdevices.changed()) mod.update_global_info("vdevice", vdevices.list());
        return mod;
      },
      0, "PlaceDeviceCopies");
}

}  // namespace

Pass PlaceDeviceCopies(std::map<std::string, VDevice> codegen_devices, VDevice host) {
  return place_device_copies(std::move(codegen_devices), std::move(host), {});
}

Pass PlaceDeviceCopiesOfExterns(std::map<std::string, VDevice> extern_devices, VDevice host) {
  return place_device_copies({}, std::move(host), std::move(extern_devices));
}

}  // namespace partita::transform
