// Relax -> VM bytecode. One pass over each function's normalized body: every bound variable
// gets a register; calls become kernel / extern / function calls whose result shapes come from
// struct info (static, or postfix programs over symbolic slots bound by input matching).
// A final liveness scan marks each register dead after its last use so the VM can recycle it.
#include "partita/codegen/vm_lowering.h"

#include <limits>
#include <unordered_map>
#include <unordered_set>

#include "partita/ir/analysis.h"
#include "partita/op/ops.h"
#include "partita/op/registry.h"
#include "partita/support/error.h"

namespace partita::codegen {

using namespace partita::runtime;

namespace {

KernelAttrValue to_kernel_attr(const AttrValue& v) {
  return std::visit(
      [](const auto& x) -> KernelAttrValue {
        // The runtime knows devices, not targets: a vdevice reaches a kernel as
        // [DLPack device type, device id].
        if constexpr (std::is_same_v<std::decay_t<decltype(x)>, VDevice>)
          return std::vector<int64_t>{x ? int64_t(target_device_type(*x->target)) : int64_t(1),
                                      x ? int64_t(x->vdevice_id) : int64_t(0)};
        else
          return x;
      },
      v);
}

// The byte offset at which a call of a view-like op finds its result inside its first argument,
// or nullopt when the call must copy. An offset view keeps the 64-byte alignment kernels may
// rely on (allocations here are 64-byte aligned), and fits the instruction's 32-bit field.
std::optional<int64_t> view_byte_offset(const CallNode& call, const op::OpDef& def) {
  std::optional<int64_t> elements;
  if (def.view == op::ViewKind::Always) elements = 0;
  else if (def.view == op::ViewKind::Sometimes && def.view_offset) elements = def.view_offset(call);
  if (!elements || *elements == 0) return elements;
  const auto* t = call.struct_info_.as<TensorStructInfoNode>();
  if (!t || t->dtype.is_void() || t->dtype.bits() % 8 != 0) return std::nullopt;
  int64_t bytes = *elements * (t->dtype.bits() / 8) * t->dtype.lanes();
  if (bytes % 64 != 0 || bytes > std::numeric_limits<int32_t>::max()) return std::nullopt;
  return bytes;
}

/// Where a tensor of this struct info lives: its vdevice as a runtime device (the host when it
/// names none or is not a tensor).
Device device_of(const StructInfo& s) {
  const auto* t = s.as<TensorStructInfoNode>();
  if (!t || !t->vdevice) return Device::cpu();
  return Device{DeviceKind(target_device_type(*t->vdevice->target)),
                int32_t(t->vdevice->vdevice_id)};
}

class FunctionLowering {
 public:
  FunctionLowering(Executable& ex, const std::map<std::string, int32_t>& func_index, std::string name)
      : ex_(ex), func_index_(func_index) {
    f_.name = std::move(name);
  }

  VMFunction lower(const FunctionNode& fn) {
    collect_returned(fn.body);
    for (const Var& p : fn.params) {
      int32_t r = new_reg();
      regs_[p.get()] = r;
      f_.param_names.push_back(p->name_hint);
    }
    // Parameters annotated with a vdevice are expected there (the VM moves arguments on entry).
    bool any_device = false;
    for (const Var& p : fn.params) any_device |= !device_of(p->struct_info_).is_cpu();
    if (any_device)
      for (const Var& p : fn.params) f_.param_devices.push_back(device_of(p->struct_info_));
    for (const Var& p : fn.params) emit_match(regs_[p.get()], p->struct_info_, "argument '" + p->name_hint + "'");
    int32_t result = lower_expr(fn.body);
    Instruction ret;
    ret.op = Opcode::Ret;
    ret.args = {result};
    emit(std::move(ret));
    compute_kills();
    f_.num_registers = next_reg_;
    f_.num_sym_vars = int32_t(slots_.size());
    return std::move(f_);
  }

 private:
  [[noreturn]] void fail(const std::string& kind, const std::string& msg) {
    throw_error(kind, "building function '" + f_.name + "': " + msg);
  }
  int32_t new_reg() { return next_reg_++; }
  int32_t emit(Instruction in) {
    f_.code.push_back(std::move(in));
    return int32_t(f_.code.size() - 1);
  }

  DimProgram compile_dim(const PrimExpr& e) {
    DimProgram p;
    compile_dim_into(e, p);
    return p;
  }
  void compile_dim_into(const PrimExpr& e, DimProgram& p) {
    if (const auto* i = e.as<IntImmNode>()) {
      p.insert(p.end(), {int64_t(DimOp::Const), i->value});
    } else if (const auto* v = e.as<PrimVarNode>()) {
      auto it = slots_.find(v);
      if (it == slots_.end())
        fail("ValueError", "symbolic variable '" + v->name + "' is not defined by the function's inputs");
      p.insert(p.end(), {int64_t(DimOp::Var), it->second});
    } else if (const auto* b = e.as<PrimBinaryNode>()) {
      compile_dim_into(b->a, p);
      compile_dim_into(b->b, p);
      static const DimOp ops[] = {DimOp::Add, DimOp::Sub, DimOp::Mul, DimOp::FloorDiv,
                                  DimOp::FloorMod, DimOp::Min, DimOp::Max};
      p.insert(p.end(), {int64_t(ops[size_t(b->op)]), 0});
    } else {
      fail("TypeError", "unsupported expression in a shape");
    }
  }

  TensorSpec spec_of(const StructInfo& s, const std::string& what) {
    const auto* t = s.as<TensorStructInfoNode>();
    if (!t) fail("TypeError", what + " must be a tensor");
    if (t->dtype.is_void()) fail("ValueError", "the dtype of " + what + " is unknown at compile time");
    if (!t->shape) fail("ValueError", "the shape of " + what + " is unknown at compile time");
    TensorSpec spec;
    spec.dtype = t->dtype;
    spec.device = device_of(s);
    for (const auto& d : *t->shape) {
      if (auto c = as_const_int(d)) {
        spec.static_shape.push_back(*c);
      } else {
        spec.is_static = false;
        break;
      }
    }
    if (!spec.is_static) {
      spec.static_shape.clear();
      for (const auto& d : *t->shape) spec.dims.push_back(compile_dim(d));
    }
    return spec;
  }

  /// Result specs of a call; sets `tuple` when the result is a tuple of tensors.
  std::vector<TensorSpec> result_specs(const StructInfo& s, bool& tuple, const std::string& what) {
    if (const auto* tt = s.as<TupleStructInfoNode>()) {
      tuple = true;
      std::vector<TensorSpec> out;
      for (size_t i = 0; i < tt->fields.size(); ++i)
        out.push_back(spec_of(tt->fields[i], what + " (field " + std::to_string(i) + ")"));
      return out;
    }
    tuple = false;
    return {spec_of(s, what)};
  }

  void emit_match(int32_t reg, const StructInfo& s, const std::string& what) {
    if (const auto* tt = s.as<TupleStructInfoNode>()) {
      // Each field is taken out by a named GetItem (which checks that the value is a tuple of
      // this many fields, match_ndim) and matched in turn, binding its symbolic dimensions.
      for (size_t i = 0; i < tt->fields.size(); ++i) {
        Instruction get;
        get.op = Opcode::GetItem;
        get.args = {reg};
        get.index = int32_t(i);
        get.dst = new_reg();
        get.name = what;
        get.match_ndim = int32_t(tt->fields.size());
        int32_t field = get.dst;
        emit(std::move(get));
        emit_match(field, tt->fields[i], "field " + std::to_string(i) + " of " + what);
      }
      return;
    }
    const auto* t = s.as<TensorStructInfoNode>();
    if (!t) return;  // objects pass unchecked
    Instruction in;
    in.op = Opcode::MatchTensor;
    in.args = {reg};
    in.dst = reg;
    in.match_dtype = t->dtype;
    in.match_ndim = t->ndim;
    in.name = what;
    if (t->shape) {
      for (const auto& d : *t->shape) {
        DimMatch m;
        const auto* v = d.as<PrimVarNode>();
        if (v && !slots_.count(v)) {
          int32_t slot = int32_t(slots_.size());
          slots_[v] = slot;
          m.bind = true;
          m.slot = slot;
        } else {
          // May still reference variables bound later in this same shape; those must come first.
          m.expect = compile_dim(d);
        }
        in.match_dims.push_back(std::move(m));
      }
    }
    emit(std::move(in));
  }

  int32_t constant_reg(const Tensor& t, const TensorSpec* on_device = nullptr) {
    Instruction in;
    in.op = Opcode::LoadConst;
    in.index = ex_.add_constant(t);
    // A constant copied to a device is that device's copy, which the VM uploads once when it
    // is made (the spec says where), instead of a copy per call.
    if (on_device) in.outs = {*on_device};
    in.dst = new_reg();
    return f_.code[size_t(emit(std::move(in)))].dst;
  }

  /// The variables the function returns (its body's value, or the fields of a returned tuple).
  void collect_returned(const Expr& body) {
    const auto* seq = body.as<SeqExprNode>();
    Expr result = seq ? seq->body : body;
    std::vector<Expr> work{result};
    std::unordered_map<const VarNode*, Expr> bound;
    if (seq)
      for (const auto& block : seq->blocks)
        for (const auto& b : block->bindings)
          if (const auto* vb = b.as<VarBindingNode>()) bound[vb->var.get()] = vb->value;
    while (!work.empty()) {
      Expr e = work.back();
      work.pop_back();
      if (const auto* t = e.as<TupleNode>()) {
        for (const auto& f : t->fields) work.push_back(f);
      } else if (const auto* v = e.as<VarNode>()) {
        if (!returned_.insert(v).second) continue;
        auto it = bound.find(v);
        if (it != bound.end() && it->second.as<TupleNode>()) work.push_back(it->second);
      }
    }
  }

  Tensor scalar_tensor(const PrimExpr& e, DataType dtype) {
    Tensor t = Tensor::empty({}, dtype);
    double v = 0;
    if (auto c = as_const_int(e)) v = double(*c);
    else if (const auto* f = e.as<FloatImmNode>()) v = f->value;
    else fail("TypeError", "expected a constant scalar");
    if (dtype == DataType::Float(32)) *t.data_as<float>() = float(v);
    else if (dtype == DataType::Float(64)) *t.data_as<double>() = v;
    else if (dtype == DataType::Int(32)) *t.data_as<int32_t>() = int32_t(v);
    else if (dtype == DataType::Int(64)) *t.data_as<int64_t>() = int64_t(v);
    else if (dtype.is_bool() || dtype.bits() == 8) *t.data_as<uint8_t>() = uint8_t(v != 0);
    else fail("TypeError", "unsupported scalar dtype " + dtype.str());
    return t;
  }

  int32_t lower_prim_value(const PrimValueNode& pv) {
    DataType dt = pv.value->dtype;
    if (as_const_int(pv.value) || pv.value.as<FloatImmNode>()) return constant_reg(scalar_tensor(pv.value, dt));
    Instruction in;
    in.op = Opcode::PrimToTensor;
    in.prim = compile_dim(pv.value);
    TensorSpec s;
    s.dtype = dt;
    in.outs = {s};
    in.dst = new_reg();
    return f_.code[size_t(emit(std::move(in)))].dst;
  }

  int32_t lower_expr(const Expr& e) {
    if (const auto* v = e.as<VarNode>()) {
      auto it = regs_.find(v);
      if (it == regs_.end()) fail("ValueError", "variable '" + v->name_hint + "' is used before it is bound");
      return it->second;
    }
    if (const auto* c = e.as<ConstantNode>()) return constant_reg(c->data);
    if (const auto* pv = e.as<PrimValueNode>()) return lower_prim_value(*pv);
    if (const auto* t = e.as<TupleNode>()) {
      Instruction in;
      in.op = Opcode::MakeTuple;
      for (const auto& f : t->fields) in.args.push_back(lower_expr(f));
      in.dst = new_reg();
      return f_.code[size_t(emit(std::move(in)))].dst;
    }
    if (const auto* g = e.as<TupleGetItemNode>()) {
      Instruction in;
      in.op = Opcode::GetItem;
      in.args = {lower_expr(g->tuple)};
      in.index = g->index;
      in.dst = new_reg();
      return f_.code[size_t(emit(std::move(in)))].dst;
    }
    if (const auto* s = e.as<SeqExprNode>()) {
      for (const auto& block : s->blocks)
        for (const auto& b : block->bindings) lower_binding(b);
      return lower_expr(s->body);
    }
    if (const auto* i = e.as<IfNode>()) return lower_if(*i);
    if (const auto* c = e.as<CallNode>()) return lower_call(*c);
    fail("TypeError", "unsupported expression kind in a host function");
  }

  /// `v = R.to_vdevice(x, <host>)` that the function returns: results go to the user's device,
  /// which the VM does on return, so a copy to the host here would only be copied back when the
  /// user's tensors are on the GPU.
  bool is_returned_host_copy(const VarBindingNode& vb) const {
    const auto* call = vb.value.as<CallNode>();
    const auto* op = call ? call->op.as<OpNode>() : nullptr;
    if (!op || op->name != "relax.to_vdevice" || call->args.size() != 1) return false;
    return returned_.count(vb.var.get()) && device_of(vb.value->struct_info_).is_cpu() &&
           call->args[0]->struct_info_.as<TensorStructInfoNode>();
  }

  void lower_binding(const Binding& b) {
    if (const auto* vb = b.as<VarBindingNode>()) {
      regs_[vb->var.get()] = is_returned_host_copy(*vb)
                                 ? lower_expr(vb->value.as<CallNode>()->args[0])
                                 : lower_expr(vb->value);
      return;
    }
    const auto* mc = b.as<MatchCastNode>();
    int32_t r = lower_expr(mc->value);
    emit_match(r, mc->struct_info, "match_cast of '" + mc->var->name_hint + "'");
    regs_[mc->var.get()] = r;
  }

  int32_t lower_if(const IfNode& node) {
    int32_t cond = lower_expr(node.cond);
    int32_t result = new_reg();
    Instruction jf;
    jf.op = Opcode::JumpIfFalse;
    jf.args = {cond};
    int32_t jf_at = emit(std::move(jf));
    auto branch = [&](const Expr& body) {
      int32_t r = lower_expr(body);
      Instruction mv;
      mv.op = Opcode::Move;
      mv.args = {r};
      mv.dst = result;
      emit(std::move(mv));
    };
    branch(node.true_branch);
    Instruction go;
    go.op = Opcode::Goto;
    int32_t go_at = emit(std::move(go));
    f_.code[size_t(jf_at)].index = int32_t(f_.code.size());
    branch(node.false_branch);
    f_.code[size_t(go_at)].index = int32_t(f_.code.size());
    return result;
  }

  static bool is_tensor_like(const StructInfo& s) {
    if (s.as<TensorStructInfoNode>()) return true;
    if (const auto* t = s.as<TupleStructInfoNode>()) {
      for (const auto& f : t->fields)
        if (!is_tensor_like(f)) return false;
      return !t->fields.empty();
    }
    return false;
  }

  /// Integer values of a non-tensor argument (shape, prim value, tuple of prims).
  std::optional<std::vector<PrimExpr>> int_values(const Expr& a) {
    if (const auto* s = a.as<ShapeExprNode>()) return s->values;
    if (const auto* p = a.as<PrimValueNode>()) return std::vector<PrimExpr>{p->value};
    if (const auto* t = a.as<TupleNode>()) {
      std::vector<PrimExpr> out;
      for (const auto& f : t->fields) {
        auto sub = int_values(f);
        if (!sub) return std::nullopt;
        out.insert(out.end(), sub->begin(), sub->end());
      }
      return out;
    }
    const StructInfo& s = a->struct_info_;
    if (const auto* ss = s.as<ShapeStructInfoNode>(); ss && ss->values) return *ss->values;
    if (const auto* ps = s.as<PrimStructInfoNode>(); ps && ps->value) return std::vector<PrimExpr>{ps->value};
    if (const auto* ts = s.as<TupleStructInfoNode>()) {
      std::vector<PrimExpr> out;
      for (const auto& f : ts->fields) {
        const auto* p = f.as<PrimStructInfoNode>();
        if (!p || !p->value) return std::nullopt;
        out.push_back(p->value);
      }
      return out;
    }
    return std::nullopt;
  }

  int32_t lower_call(const CallNode& call) {
    const StructInfo& rs = call.struct_info_;
    // R.call_pure_packed(f, args...) runs as the call f(args...): its purity matters to passes.
    const auto* callee = call.op.as<OpNode>();
    if (callee && callee->name == "relax.call_pure_packed" && !call.args.empty()) {
      std::vector<Expr> args(call.args.begin() + 1, call.args.end());
      Call direct = make<CallNode>(call.args[0], std::move(args), Attrs(), call.sinfo_args);
      direct->struct_info_ = rs;
      return lower_call(*direct);
    }
    if (const auto* op = call.op.as<OpNode>()) {
      const op::OpDef* def = op::find_op_def(op->name);
      std::string what = "the result of " + op->name;
      // The op's view trait says whether its result may alias its input; for one that is a view
      // only sometimes, the call decides (and where in the input the result starts).
      if (auto offset = def ? view_byte_offset(call, *def) : std::nullopt) {
        Instruction in;
        in.op = Opcode::View;
        if (def->view == op::ViewKind::Sometimes) in.index = int32_t(*offset);  // -1: a reshape
        in.args = {lower_expr(call.args.at(0))};
        in.outs = {spec_of(rs, what)};
        in.dst = new_reg();
        return f_.code[size_t(emit(std::move(in)))].dst;
      }
      if (op->name == "relax.to_vdevice" && call.args.size() == 1)
        if (const auto* c = call.args[0].as<ConstantNode>()) {
          TensorSpec on = spec_of(rs, what);
          if (!on.device.is_cpu()) return constant_reg(c->data, &on);
        }
      Instruction in;
      in.op = Opcode::CallKernel;
      int32_t kidx = -1;
      for (size_t k = 0; k < ex_.kernel_names.size(); ++k)
        if (ex_.kernel_names[k] == op->name) kidx = int32_t(k);
      if (kidx < 0) {
        ex_.kernel_names.push_back(op->name);
        kidx = int32_t(ex_.kernel_names.size() - 1);
      }
      in.index = kidx;
      KernelAttrs attrs;
      if (call.attrs)
        for (const auto& [k, v] : call.attrs->values) attrs.values[k] = to_kernel_attr(v);
      bool scalar_tensors = def && def->scalar_operands_as_tensors;
      for (size_t i = 0; i < call.args.size(); ++i) {
        const Expr& a = call.args[i];
        std::string arg_name = def && i < def->args.size() ? def->args[i].name : "arg" + std::to_string(i);
        if (def && !def->args.empty() && def->args.back().variadic && i >= def->args.size() - 1)
          arg_name = def->args.back().name;
        const StructInfo& as = a->struct_info_;
        if (is_tensor_like(as) || (scalar_tensors && as.as<PrimStructInfoNode>())) {
          in.args.push_back(lower_expr(a));
          continue;
        }
        auto vals = int_values(a);
        if (!vals) fail("ValueError", op->name + ": argument '" + arg_name + "' is not known at compile time");
        // A float scalar (clip's min/max) stays a float.
        if (vals->size() == 1 && (*vals)[0].as<FloatImmNode>() && a.as<PrimValueNode>()) {
          attrs.values[arg_name] = (*vals)[0].as<FloatImmNode>()->value;
          continue;
        }
        bool is_static = true;
        std::vector<int64_t> ints;
        for (const auto& v : *vals) {
          if (auto c = as_const_int(v)) ints.push_back(*c);
          else is_static = false;
        }
        if (is_static) {
          if (a.as<PrimValueNode>() || as.as<PrimStructInfoNode>()) attrs.values[arg_name] = ints[0];
          else attrs.values[arg_name] = ints;
        } else {
          std::vector<DimProgram> progs;
          for (const auto& v : *vals) progs.push_back(compile_dim(v));
          in.dyn_attrs.emplace_back(arg_name, std::move(progs));
        }
      }
      in.outs = result_specs(rs, in.tuple_result, what);
      f_.attrs.push_back(std::move(attrs));
      in.attrs = int32_t(f_.attrs.size() - 1);
      in.dst = new_reg();
      return f_.code[size_t(emit(std::move(in)))].dst;
    }
    if (const auto* ext = call.op.as<ExternFuncNode>()) {
      Instruction in;
      in.op = Opcode::CallExtern;
      int32_t idx = -1;
      for (size_t k = 0; k < ex_.extern_symbols.size(); ++k)
        if (ex_.extern_symbols[k] == ext->global_symbol) idx = int32_t(k);
      if (idx < 0) {
        ex_.extern_symbols.push_back(ext->global_symbol);
        idx = int32_t(ex_.extern_symbols.size() - 1);
      }
      in.index = idx;
      for (const auto& a : call.args) in.args.push_back(lower_expr(a));
      StructInfo out_s = !call.sinfo_args.empty() ? call.sinfo_args[0] : rs;
      in.outs = result_specs(out_s, in.tuple_result, "the result of external function '" + ext->global_symbol + "'");
      in.dst = new_reg();
      return f_.code[size_t(emit(std::move(in)))].dst;
    }
    if (const auto* gv = call.op.as<GlobalVarNode>()) {
      auto it = func_index_.find(gv->name_hint);
      if (it == func_index_.end())
        fail("ValueError", "call of '" + gv->name_hint + "', which is not a host function (was RunCodegen applied?)");
      Instruction in;
      in.op = Opcode::CallFunc;
      in.index = it->second;
      for (const auto& a : call.args) in.args.push_back(lower_expr(a));
      in.dst = new_reg();
      return f_.code[size_t(emit(std::move(in)))].dst;
    }
    fail("TypeError", "unsupported callee (local functions must be lifted to globals before build)");
  }

  void compute_kills() {
    std::vector<int32_t> last_use(size_t(next_reg_), -1);
    std::vector<bool> returned(size_t(next_reg_), false);
    for (size_t i = 0; i < f_.code.size(); ++i) {
      const auto& in = f_.code[i];
      for (int32_t a : in.args) last_use[size_t(a)] = int32_t(i);
      if (in.dst >= 0 && last_use[size_t(in.dst)] < int32_t(i)) last_use[size_t(in.dst)] = int32_t(i);
      if (in.op == Opcode::Ret) returned[size_t(in.args[0])] = true;
      // Registers written inside a branch (If results) live until their own last read.
    }
    for (int32_t r = 0; r < next_reg_; ++r) {
      int32_t at = last_use[size_t(r)];
      if (at < 0 || returned[size_t(r)]) continue;
      if (f_.code[size_t(at)].op == Opcode::Ret) continue;
      f_.code[size_t(at)].kills.push_back(r);
    }
  }

  Executable& ex_;
  const std::map<std::string, int32_t>& func_index_;
  VMFunction f_;
  int32_t next_reg_ = 0;
  std::unordered_map<const VarNode*, int32_t> regs_;
  std::map<const PrimVarNode*, int32_t> slots_;
  std::unordered_set<const VarNode*> returned_;
};

}  // namespace

std::shared_ptr<Executable> build_vm_executable(const IRModule& mod, std::vector<ModulePtr> external_mods) {
  auto ex = std::make_shared<Executable>();
  std::map<std::string, int32_t> func_index;
  std::vector<std::pair<std::string, const FunctionNode*>> host;
  for (const auto& [name, entry] : mod->functions) {
    const auto* fn = entry.second.as<FunctionNode>();
    if (!fn || !is_plain_function(*fn)) continue;
    func_index[name] = int32_t(host.size());
    host.emplace_back(name, fn);
  }
  for (const auto& [name, fn] : host) {
    FunctionLowering lowering(*ex, func_index, name);
    ex->functions.push_back(lowering.lower(*fn));
  }
  for (const auto& [name, t] : mod->const_name_to_constant) ex->named_constants[name] = ex->add_constant(t);
  ex->external_modules = std::move(external_mods);
  ex->init_external_modules();
  return ex;
}

}  // namespace partita::codegen
