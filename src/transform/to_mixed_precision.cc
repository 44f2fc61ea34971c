// ToMixedPrecision: see the header. As TVM, in two walks over each function:
//  1. backwards (DTypeCollector): which values are used only by "always" operators — a lattice
//     per tensor leaf of "unknown" < float16 < float32 (a use outside such an operator asks for
//     the value's own dtype, recorded as float32);
//  2. forwards (MixedPrecisionRewriter): every binding rewritten by its operator's policy, values
//     found float16-only cast once where they are defined, other uses cast back to their dtype.
// The policies are TVM's TMixedPrecisionPolicy per operator name (ops without one are "never"),
// kept here beside the pass rather than in every operator definition.
#include "partita/transform/to_mixed_precision.h"

#include <cmath>
#include <unordered_map>
#include <unordered_set>

#include "partita/ir/analysis.h"
#include "partita/ir/functor.h"
#include "partita/ir/structural_equal.h"
#include "partita/op/registry.h"
#include "partita/support/error.h"

namespace partita::transform {

namespace {

enum class Policy { kAlways, kFollow, kNever, kNotAnOp };

Policy policy_of(const CallNode& call) {
  static const std::unordered_set<std::string> always = {"relax.matmul",
                                                         "relax.outer",
                                                         "relax.nn.conv1d",
                                                         "relax.nn.conv2d",
                                                         "relax.nn.conv3d",
                                                         "relax.nn.conv1d_transpose",
                                                         "relax.nn.conv2d_transpose",
                                                         "relax.nn.conv3d_transpose",
                                                         "relax.nn.attention",
                                                         "relax.nn.attention_bias",
                                                         "relax.nn.attention_var_len"};
  static const std::unordered_set<std::string> follow = {
      // unary element-wise (TVM's RELAX_REGISTER_UNARY_OP family)
      "relax.abs", "relax.acos", "relax.acosh", "relax.asin", "relax.asinh", "relax.atan",
      "relax.atanh", "relax.bitwise_not", "relax.ceil", "relax.cos", "relax.cosh", "relax.exp",
      "relax.floor", "relax.log", "relax.logical_not", "relax.negative", "relax.round",
      "relax.rsqrt", "relax.sigmoid", "relax.sign", "relax.sin", "relax.sinh", "relax.square",
      "relax.sqrt", "relax.tan", "relax.tanh", "relax.trunc", "relax.erf", "relax.isfinite",
      "relax.isinf", "relax.isnan", "relax.nn.relu", "relax.nn.gelu", "relax.nn.gelu_tanh",
      "relax.nn.selu", "relax.nn.silu",
      // binary broadcasting and comparisons
      "relax.add", "relax.divide", "relax.floor_divide", "relax.log_add_exp", "relax.multiply",
      "relax.power", "relax.atan2", "relax.subtract", "relax.mod", "relax.floor_mod",
      "relax.minimum", "relax.maximum", "relax.logical_and", "relax.logical_or",
      "relax.logical_xor", "relax.bitwise_and", "relax.bitwise_or", "relax.bitwise_xor",
      "relax.left_shift", "relax.right_shift", "relax.equal", "relax.greater",
      "relax.greater_equal", "relax.less", "relax.less_equal", "relax.not_equal",
      // pooling, norms, image, vision
      "relax.nn.max_pool1d", "relax.nn.max_pool2d", "relax.nn.max_pool3d", "relax.nn.avg_pool1d",
      "relax.nn.avg_pool2d", "relax.nn.avg_pool3d", "relax.nn.adaptive_avg_pool1d",
      "relax.nn.adaptive_avg_pool2d", "relax.nn.adaptive_avg_pool3d", "relax.nn.layer_norm",
      "relax.nn.group_norm", "relax.nn.instance_norm", "relax.nn.rms_norm", "relax.nn.dropout",
      "relax.nn.batch_flatten", "relax.image.resize2d", "relax.image.resize3d",
      "relax.image.grid_sample", "relax.image.affine_grid", "relax.vision.roi_pool",
      "relax.vision.roi_align",
      // creation, data movement
      "relax.astype", "relax.full", "relax.full_like", "relax.ones", "relax.zeros", "relax.eye",
      "relax.arange", "relax.hamming_window", "relax.strided_slice", "relax.dynamic_strided_slice",
      "relax.ewise_fma", "relax.broadcast_to", "relax.concat", "relax.expand_dims", "relax.flatten",
      "relax.layout_transform", "relax.permute_dims", "relax.reshape", "relax.split",
      "relax.squeeze", "relax.stack", "relax.meshgrid"};
  const auto* op = call.op.as<OpNode>();
  if (!op) return Policy::kNotAnOp;
  if (always.count(op->name)) return Policy::kAlways;
  if (follow.count(op->name)) return Policy::kFollow;
  return Policy::kNever;
}

const DataType kF16 = DataType::Float(16);
const DataType kF32 = DataType::Float(32);

// ---- nested dtypes: one dtype string per tensor leaf ("" unknown) ----

struct NType {
  bool is_tuple = false;
  std::string leaf;
  std::vector<NType> fields;
};

bool is_nested_tensor(const StructInfo& s) {
  if (!s) return false;
  if (s.as<TensorStructInfoNode>()) return true;
  if (const auto* t = s.as<TupleStructInfoNode>()) {
    for (const StructInfo& f : t->fields)
      if (!is_nested_tensor(f)) return false;
    return true;
  }
  return false;
}
bool is_nested_tensor(const Expr& e) {
  return e->struct_info_ && is_nested_tensor(e->struct_info_);
}

/// The NType of `s`: each tensor's own dtype, or `force` for every leaf ("" is unknown).
NType ntype_of(const StructInfo& s, const std::optional<std::string>& force = std::nullopt) {
  if (const auto* t = s.as<TupleStructInfoNode>()) {
    NType n;
    n.is_tuple = true;
    for (const StructInfo& f : t->fields) n.fields.push_back(ntype_of(f, force));
    return n;
  }
  NType n;
  if (force)
    n.leaf = *force;
  else if (const auto* t = s.as<TensorStructInfoNode>())
    n.leaf = t->dtype.is_void() ? "" : t->dtype.str();
  return n;
}
NType ntype_of(const Expr& e, const std::optional<std::string>& force = std::nullopt) {
  return ntype_of(struct_info_of(e), force);
}

/// Leafwise combination of two NTypes of the same structure.
template <class F>
NType combine(const NType& a, const NType& b, F&& f) {
  if (!a.is_tuple || !b.is_tuple) {
    NType n;
    n.leaf = f(a.is_tuple ? std::string() : a.leaf, b.is_tuple ? std::string() : b.leaf);
    return n;
  }
  PARTITA_ICHECK(a.fields.size() == b.fields.size());
  NType n;
  n.is_tuple = true;
  for (size_t i = 0; i < a.fields.size(); ++i)
    n.fields.push_back(combine(a.fields[i], b.fields[i], f));
  return n;
}

/// The lattice's meet: unknown yields the other; otherwise the wider dtype.
NType merge(const NType& a, const NType& b) {
  return combine(a, b, [](const std::string& x, const std::string& y) {
    if (x.empty()) return y;
    if (y.empty()) return x;
    return DataType::parse(x).bits() >= DataType::parse(y).bits() ? x : y;
  });
}

bool ntype_equal(const NType& a, const NType& b) {
  if (a.is_tuple != b.is_tuple) return false;
  if (!a.is_tuple) return a.leaf == b.leaf;
  if (a.fields.size() != b.fields.size()) return false;
  for (size_t i = 0; i < a.fields.size(); ++i)
    if (!ntype_equal(a.fields[i], b.fields[i])) return false;
  return true;
}

using VarNTypes = std::unordered_map<Var, NType, RefHash, RefEq>;

// ---- 1. backwards: which values are float16-only ----

class DTypeCollector : public ExprVisitor {
 public:
  VarNTypes decided;

  void visit_(const SeqExprNode* op) override {
    visit_expr(op->body);
    for (auto it = op->blocks.rbegin(); it != op->blocks.rend(); ++it) {
      if (!(*it)->is_dataflow) continue;  // TVM decides inside dataflow blocks only
      for (auto b = (*it)->bindings.rbegin(); b != (*it)->bindings.rend(); ++b) visit_binding(*b);
    }
  }
  void visit_(const IfNode* op) override {
    visit_expr(op->true_branch);
    visit_expr(op->false_branch);
    visit_expr(op->cond);
  }
  void visit_(const VarNode* op) override { use_as_is(Var(op)); }
  void visit_(const DataflowVarNode* op) override { use_as_is(Var(op)); }

  void visit_binding_(const VarBindingNode* b) override {
    if (const auto* call = b->value.as<CallNode>()) {
      Policy p = policy_of(*call);
      if (p != Policy::kNotAnOp) {
        require_args(call->args, p == Policy::kAlways ? "float16" : "float32");
        return;
      }
    } else if (const auto* tuple = b->value.as<TupleNode>()) {
      NType lhs = tracked(b->var);
      for (size_t i = 0; i < tuple->fields.size(); ++i)
        if (lhs.is_tuple && i < lhs.fields.size()) require(tuple->fields[i], lhs.fields[i]);
      return;
    } else if (const auto* tgi = b->value.as<TupleGetItemNode>()) {
      if (is_nested_tensor(tgi->tuple)) {
        NType want = ntype_of(tgi->tuple, std::string());
        if (want.is_tuple && tgi->index >= 0 && size_t(tgi->index) < want.fields.size()) {
          want.fields[size_t(tgi->index)] = tracked(b->var);
          require(tgi->tuple, want);
          return;
        }
      }
    }
    ExprVisitor::visit_binding_(b);
  }

 private:
  void use_as_is(const Var& v) {
    if (is_nested_tensor(v)) update(v, ntype_of(v, std::string("float32")));
  }
  void update(const Var& v, const NType& n) {
    auto it = decided.find(v);
    if (it == decided.end())
      decided.emplace(v, n);
    else
      it->second = merge(it->second, n);
  }
  NType tracked(const Var& v) {
    auto it = decided.find(v);
    if (it != decided.end()) return it->second;
    NType unknown = is_nested_tensor(v) ? ntype_of(v, std::string()) : NType{};
    decided.emplace(v, unknown);
    return unknown;
  }
  void require(const Expr& e, const NType& n) {
    if (const auto* v = e.as<VarNode>()) {
      update(Var(v), n);
    } else if (const auto* t = e.as<TupleNode>()) {
      for (size_t i = 0; i < t->fields.size(); ++i)
        if (n.is_tuple && i < n.fields.size()) require(t->fields[i], n.fields[i]);
    } else if (!e.as<ConstantNode>()) {
      visit_expr(e);
    }
  }
  void require_args(const std::vector<Expr>& args, const std::string& dtype) {
    for (const Expr& a : args)
      if (is_nested_tensor(a)) require(a, ntype_of(a, dtype));
  }
};

// ---- 2. forwards: the rewrite ----

bool in_fp16_range(const Tensor& t) {
  auto check = [&](auto tag) {
    using T = decltype(tag);
    const T* p = t.data_as<T>();
    for (int64_t i = 0; i < t.numel(); ++i)
      if (std::abs(double(p[i])) > 65504.0) return false;
    return true;
  };
  DataType d = t.dtype();
  if (!t.device().is_host_accessible()) return false;
  if (d == kF16) return true;
  if (d == kF32) return check(float());
  if (d == DataType::Float(64)) return check(double());
  if (d == DataType::Int(8)) return check(int8_t());
  if (d == DataType::Int(16)) return check(int16_t());
  if (d == DataType::Int(32)) return check(int32_t());
  if (d == DataType::Int(64)) return check(int64_t());
  return false;
}

class MixedPrecisionRewriter : public ExprMutator {
 public:
  MixedPrecisionRewriter(const VarNTypes& decided, DataType out_dtype,
                         const std::vector<std::string>& fp16_inputs, IRModule mod)
      : ExprMutator(mod),
        decided_(decided),
        out_dtype_(out_dtype),
        fp16_inputs_(fp16_inputs.begin(), fp16_inputs.end()) {}

  /// Parameters named in fp16_input_names are defined as float16 tensors.
  Var visit_var_def(const Var& var) override {
    Var v = ExprMutator::visit_var_def(var);
    const auto* t = v->struct_info_ ? v->struct_info_.as<TensorStructInfoNode>() : nullptr;
    if (!t || !fp16_inputs_.count(v->name_hint) || !is_param(var)) return v;
    StructInfo s = t->shape ? make<TensorStructInfoNode>(*t->shape, kF16, t->vdevice)
                            : make<TensorStructInfoNode>(kF16, t->ndim, t->vdevice);
    Var fp16 = with_struct_info(v, s);
    fp16_params_[var] = fp16;
    return fp16;
  }

  Expr visit_(const FunctionNode* op) override {
    params_ = op->params;
    return ExprMutator::visit_(op);
  }

  BindingBlock visit_dataflow_block_(const BindingBlockNode* block) override {
    builder_.begin_dataflow_block();
    for (const Var& p : params_) cast_if_fp16_only(p);
    for (const Binding& b : block->bindings) visit_binding(b);
    for (const Var& p : params_) {
      var_remap_.erase(p);  // the block-local float16 copies end here
      if (auto it = fp16_params_.find(p); it != fp16_params_.end()) var_remap_[p] = it->second;
    }
    BindingBlock out = builder_.end_block();
    bool same = out->bindings.size() == block->bindings.size();
    for (size_t i = 0; same && i < out->bindings.size(); ++i)
      same = out->bindings[i].get() == block->bindings[i].get();
    return same ? BindingBlock(block) : out;
  }

  void visit_binding(const Binding& binding) override {
    ExprMutator::visit_binding(binding);
    if (in_dataflow()) cast_if_fp16_only(binding->var);
  }

  Expr visit_(const VarNode* op) override { return use(op); }
  Expr visit_(const DataflowVarNode* op) override { return use(op); }

  void visit_binding_(const VarBindingNode* b) override {
    if (!in_dataflow()) return ExprMutator::visit_binding_(b);
    const bool dataflow_var = b->var.as<DataflowVarNode>() != nullptr;
    if (const auto* call = b->value.as<CallNode>()) {
      Policy policy = policy_of(*call);
      if (policy == Policy::kNotAnOp) return ExprMutator::visit_binding_(b);
      std::vector<Expr> args;
      for (const Expr& a : call->args) args.push_back(remap(a));
      Attrs attrs = call->attrs;
      std::optional<DataType> compute;
      if (policy == Policy::kAlways) {
        compute = kF16;
        attrs = with_out_dtype(*call);
      } else if (policy == Policy::kFollow) {
        compute = all_fp16_castable(args) ? kF16 : kF32;
      } else {
        // "never": exactly the dtypes it had.
        for (size_t i = 0; i < args.size(); ++i)
          if (args[i].get() != call->args[i].get() && is_nested_tensor(call->args[i]))
            args[i] = rewrite(args[i], ntype_of(call->args[i]));
      }
      Expr value;
      if (compute) {
        std::string to = compute->str();
        for (Expr& a : args)
          if (is_nested_tensor(a)) a = rewrite(a, ntype_of(a, to));
        value = builder_.normalize(make<CallNode>(call->op, args, attrs, call->sinfo_args));
        if (!dataflow_var)
          value = rewrite(value, ntype_of(b->var));  // block outputs keep their dtype
        else if (policy == Policy::kAlways)
          value = rewrite(value, ntype_of(value, std::string("float16")));
      } else {
        value = make<CallNode>(call->op, args, attrs, call->sinfo_args);
      }
      return reemit(b, builder_.normalize(value));
    }
    if (const auto* tuple = b->value.as<TupleNode>()) {
      std::vector<Expr> fields;
      for (const Expr& f : tuple->fields) fields.push_back(remap(f));
      Expr value = builder_.normalize(make<TupleNode>(fields));
      if (!dataflow_var) value = rewrite(value, ntype_of(b->var));
      return reemit(b, builder_.normalize(value));
    }
    if (const auto* tgi = b->value.as<TupleGetItemNode>()) {
      Expr value = builder_.normalize(make<TupleGetItemNode>(remap(tgi->tuple), tgi->index));
      if (!dataflow_var) value = rewrite(value, ntype_of(b->var));
      return reemit(b, builder_.normalize(value));
    }
    ExprMutator::visit_binding_(b);
  }

 private:
  bool in_dataflow() const { return builder_.in_block() && builder_.current_block_is_dataflow(); }

  void reemit(const VarBindingNode* b, const Expr& value) {
    // Unchanged values keep their binding (and the variable its identity).
    if (value.get() == b->value.get() || structural_equal(value, b->value, false)) {
      builder_.emit_normalized(Binding(b));
      return;
    }
    reemit_binding(b, value);
  }

  /// The current version of `v` (its float16 copy or rebuilt variable), without casts.
  Expr current(const Var& v) const {
    auto it = var_remap_.find(v);
    return it == var_remap_.end() ? Expr(v) : it->second;
  }
  Expr remap(const Expr& e) {
    if (const auto* v = e.as<VarNode>()) return current(Var(v));
    if (const auto* t = e.as<TupleNode>()) {
      std::vector<Expr> fields;
      bool changed = false;
      for (const Expr& f : t->fields) {
        fields.push_back(remap(f));
        changed |= fields.back().get() != f.get();
      }
      return changed ? builder_.normalize(make<TupleNode>(fields)) : e;
    }
    return e;
  }

  Expr use(const VarNode* op) {
    if (!in_dataflow()) return ExprMutator::visit_(op);
    Var v(op);
    auto it = var_remap_.find(v);
    if (it == var_remap_.end()) return v;
    return is_nested_tensor(v) ? rewrite(it->second, ntype_of(v)) : it->second;
  }

  /// `e` with each float16/float32 tensor leaf cast to the dtype `to` names (unchanged where it
  /// already has it, has no known dtype or another dtype).
  Expr rewrite(const Expr& e, const NType& to) {
    const StructInfo& s = struct_info_of(e);
    // Nothing to cast: no items of a tuple are taken (the normalizer would bind them).
    if (!needs_cast(s, to)) return e;
    if (const auto* t = s.as<TensorStructInfoNode>()) {
      if (to.is_tuple || to.leaf.empty() || t->dtype.is_void()) return e;
      if (t->dtype.str() == to.leaf || (t->dtype != kF16 && t->dtype != kF32)) return e;
      return builder_.normalize(
          op::make_call("relax.astype", {e}, {{"dtype", DataType::parse(to.leaf)}}));
    }
    const auto* ts = s.as<TupleStructInfoNode>();
    if (!ts || !to.is_tuple || to.fields.size() != ts->fields.size()) return e;
    const auto* literal = e.as<TupleNode>();
    std::vector<Expr> fields;
    bool changed = false;
    for (size_t i = 0; i < ts->fields.size(); ++i) {
      Expr field =
          literal ? literal->fields[i] : builder_.normalize(make<TupleGetItemNode>(e, int(i)));
      Expr nf = rewrite(field, to.fields[i]);
      changed |= nf.get() != field.get();
      fields.push_back(nf);
    }
    return changed ? builder_.normalize(make<TupleNode>(fields)) : e;
  }

  static bool needs_cast(const StructInfo& s, const NType& to) {
    if (const auto* t = s.as<TensorStructInfoNode>()) {
      if (to.is_tuple || to.leaf.empty() || t->dtype.is_void()) return false;
      return t->dtype.str() != to.leaf && (t->dtype == kF16 || t->dtype == kF32);
    }
    const auto* ts = s.as<TupleStructInfoNode>();
    if (!ts || !to.is_tuple || to.fields.size() != ts->fields.size()) return false;
    for (size_t i = 0; i < ts->fields.size(); ++i)
      if (needs_cast(ts->fields[i], to.fields[i])) return true;
    return false;
  }

  void cast_if_fp16_only(const Var& v) {
    auto it = decided_.find(v);
    if (it == decided_.end()) return;
    Expr cur = current(v);
    if (!is_nested_tensor(cur)) return;
    NType to = combine(ntype_of(cur), it->second,
                       [](const std::string& from, const std::string& required) {
                         return required == "float16" ? required : from;
                       });
    Expr cast = rewrite(cur, to);
    if (cast.get() != cur.get()) var_remap_[v] = builder_.emit(cast);
  }

  bool all_fp16_castable(const std::vector<Expr>& args) const {
    for (const Expr& a : args) {
      if (!is_nested_tensor(a)) continue;
      const auto* t = struct_info_of(a).as<TensorStructInfoNode>();
      if (t && t->dtype == kF16) continue;
      if (const auto* c = a.as<ConstantNode>(); c && in_fp16_range(c->data)) continue;
      if (const auto* tu = a.as<TupleNode>(); tu && all_fp16_castable(tu->fields)) continue;
      return false;
    }
    return true;
  }

  /// The call's attributes with out_dtype set to the accumulation dtype (where it has one).
  Attrs with_out_dtype(const CallNode& call) const {
    if (!call.attrs || !call.attrs->find("out_dtype")) return call.attrs;
    auto values = call.attrs->values;
    for (auto& [name, value] : values)
      if (name == "out_dtype") value = out_dtype_;
    return make<AttrsNode>(call.attrs->type_key, std::move(values));
  }

  bool is_param(const Var& v) const {
    for (const Var& p : params_)
      if (p.get() == v.get()) return true;
    return false;
  }

  const VarNTypes& decided_;
  DataType out_dtype_;
  std::unordered_set<std::string> fp16_inputs_;
  std::unordered_map<Var, Var, RefHash, RefEq> fp16_params_;
  std::vector<Var> params_;
};

}  // namespace

Pass ToMixedPrecision(DataType out_dtype, std::vector<std::string> fp16_input_names) {
  if (out_dtype != kF16 && out_dtype != kF32)
    throw_error("ValueError",
                "ToMixedPrecision: out_dtype must be float16 or float32, not " + out_dtype.str());
  return create_function_pass(
      [out_dtype, fp16_input_names](Function f, IRModule mod, const PassContext&) {
        DTypeCollector collector;
        collector.visit_expr(f);
        MixedPrecisionRewriter rewriter(collector.decided, out_dtype, fp16_input_names, mod);
        return rewriter.visit_expr(f).as_ref<FunctionNode>();
      },
      0, "ToMixedPrecision");
}

}  // namespace partita::transform
