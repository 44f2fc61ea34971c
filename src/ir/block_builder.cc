// BlockBuilder: scope/block management, naming, and the normalizer (see block_builder.h).
#include "partita/ir/block_builder.h"

#include <unordered_set>

#include "partita/ir/analysis.h"
#include "partita/ir/structural_equal.h"
#include "partita/ir/op_interface.h"
#include "partita/support/error.h"

namespace partita {

namespace {

[[noreturn]] void misuse(const std::string& message) {
  throw_error("ValueError", "BlockBuilder: " + message);
}

}  // namespace

// The normalizer is a function object over the builder's state (a friend of BlockBuilder).
class BlockBuilderNormalizer {
 public:
  explicit BlockBuilderNormalizer(BlockBuilder& bb) : bb_(bb) {}

  Expr visit(const Expr& expr) {
    if (!bb_.block_stack_.empty()) {
      auto& m = bb_.block_stack_.back().normalize_binding_map;
      auto it = m.find(expr);
      if (it != m.end()) return it->second;
    }
    return visit_node(expr);
  }

  Expr normalize_argument(const Expr& arg) {
    if (!bb_.block_stack_.empty()) {
      auto& m = bb_.block_stack_.back().normalize_binding_map;
      auto it = m.find(arg);
      if (it != m.end()) return it->second;
    }
    Expr post = visit_node(arg);
    if (is_leaf_or_tuple(arg)) return post;
    if (bb_.block_stack_.empty())
      misuse("cannot normalize a nested " + std::string(node_kind_name(arg->kind())) +
             " argument outside a binding block");
    Var var = bb_.emit_impl(post, bb_.block_stack_.back().is_dataflow, "");
    bb_.block_stack_.back().normalize_binding_map[arg] = var;
    return var;
  }

  // What normalization would give `expr` when its operands have struct info: nothing emitted,
  // `expr` itself unchanged (its leaves get theirs, as normalization gives them).
  StructInfo derive(const Expr& expr) {
    if (expr->struct_info_) return expr->struct_info_;
    switch (expr->kind()) {
      case NodeKind::Call: {
        auto* call = expr.as<CallNode>();
        if (!call->op.as<OpNode>()) derive(call->op);
        return call_struct_info(*call);
      }
      case NodeKind::Tuple: return tuple_struct_info(*expr.as<TupleNode>());
      case NodeKind::TupleGetItem: return item_struct_info(*expr.as<TupleGetItemNode>());
      case NodeKind::Function:
      case NodeKind::SeqExpr:
      case NodeKind::If: misuse(std::string("derive_struct_info of a ") + node_kind_name(expr->kind()));
      default: return visit_node(expr)->struct_info_;
    }
  }
  Binding visit_binding(const Binding& binding) {
    if (auto* vb = binding.as<VarBindingNode>()) {
      Expr new_value = visit(vb->value);
      Binding out = binding;
      if (new_value.get() != vb->value.get()) out = make<VarBindingNode>(vb->var, new_value);
      if (!vb->var->struct_info_) vb->var->struct_info_ = struct_info_of(new_value);
      return out;
    }
    auto* mc = binding.as<MatchCastNode>();
    Expr new_value = visit(mc->value);
    Binding out = binding;
    if (new_value.get() != mc->value.get()) out = make<MatchCastNode>(mc->var, new_value, mc->struct_info);
    if (!mc->var->struct_info_) mc->var->struct_info_ = mc->struct_info;
    return out;
  }

  BindingBlock visit_binding_block(const BindingBlock& block) {
    if (block->is_dataflow) bb_.begin_dataflow_block();
    else bb_.begin_binding_block();
    bool unchanged = true;
    for (auto& b : block->bindings) {
      Binding nb = visit_binding(b);
      unchanged &= nb.get() == b.get();
      bb_.emit_normalized(nb);
    }
    BindingBlock out = bb_.end_block();
    unchanged &= out->bindings.size() == block->bindings.size();
    return unchanged ? block : out;
  }

  Expr visit_with_new_scope(const Expr& expr, std::optional<std::vector<Var>> params) {
    if (expr.as<SeqExprNode>()) {
      bb_.begin_scope(std::move(params));
      Expr ret = visit(expr);
      bb_.end_scope();
      return ret;
    }
    bb_.begin_scope(std::move(params));
    bb_.begin_binding_block();
    Expr post = normalize_argument(expr);
    BindingBlock prologue = bb_.end_block();
    if (post.as<SeqExprNode>() && prologue->bindings.empty()) {
      bb_.end_scope();
      return post;
    }
    std::vector<BindingBlock> blocks;
    if (!prologue->bindings.empty()) blocks.push_back(prologue);
    auto seq = make<SeqExprNode>(std::move(blocks), post);
    seq->struct_info_ = bb_.erase_to_well_defined_in_scope(struct_info_of(post));
    bb_.end_scope();
    return seq;
  }

 private:
  Expr visit_node(const Expr& expr) {
    if (!expr) misuse("cannot normalize a null expression");
    switch (expr->kind()) {
      case NodeKind::Var:
      case NodeKind::DataflowVar: {
        auto* v = expr.as<VarNode>();
        if (!v->struct_info_)
          throw_error("ValueError", "BlockBuilder: variable '" + v->name_hint +
                                        "' has no struct info (parameters and free variables "
                                        "need one)");
        return expr;
      }
      case NodeKind::Constant: {
        if (!expr->struct_info_) {
          auto* c = expr.as<ConstantNode>();
          expr->struct_info_ = tensor_sinfo(c->data.shape(), c->data.dtype());
        }
        return expr;
      }
      case NodeKind::PrimValue: {
        if (!expr->struct_info_) {
          auto* p = expr.as<PrimValueNode>();
          expr->struct_info_ = prim_sinfo(p->value->dtype, p->value);
        }
        return expr;
      }
      case NodeKind::StringImm:
      case NodeKind::DataTypeImm:
        if (!expr->struct_info_) expr->struct_info_ = object_sinfo();
        return expr;
      case NodeKind::ShapeExpr:
        if (!expr->struct_info_) expr->struct_info_ = shape_sinfo(expr.as<ShapeExprNode>()->values);
        return expr;
      case NodeKind::ExternFunc:
        if (!expr->struct_info_)
          expr->struct_info_ = make<FuncStructInfoNode>(std::nullopt, object_sinfo(), false);
        return expr;
      case NodeKind::GlobalVar:
        if (!expr->struct_info_) fill_global_var(expr.as<GlobalVarNode>());
        return expr;
      case NodeKind::Op:
        return expr;
      case NodeKind::Tuple: return visit_tuple(expr.as<TupleNode>(), expr);
      case NodeKind::TupleGetItem: return visit_tuple_get_item(expr.as<TupleGetItemNode>(), expr);
      case NodeKind::Call: return visit_call(expr.as<CallNode>(), expr);
      case NodeKind::Function: return visit_function(expr.as<FunctionNode>(), expr);
      case NodeKind::SeqExpr: return visit_seq(expr.as<SeqExprNode>(), expr);
      case NodeKind::If: return visit_if(expr.as<IfNode>(), expr);
      default:
        misuse(std::string("cannot normalize a ") + node_kind_name(expr->kind()));
    }
  }

  void fill_global_var(const GlobalVarNode* gv) {
    IRModule mod = bb_.context_mod_;
    if (mod && mod.contains(gv->name_hint)) {
      Expr f = mod.lookup(gv->name_hint);
      if (f->struct_info_) gv->struct_info_ = f->struct_info_;
      else if (auto* fn = f.as<FunctionNode>()) {
        bool ok = true;
        for (auto& p : fn->params) ok &= bool(p->struct_info_);
        if (ok) gv->struct_info_ = func_struct_info_of(*fn);
      }
      if (!gv->struct_info_ && f.as<ExternFuncNode>())
        gv->struct_info_ = make<FuncStructInfoNode>(std::nullopt, object_sinfo(), false);
    }
    if (!gv->struct_info_) gv->struct_info_ = make<FuncStructInfoNode>(std::nullopt, object_sinfo(), false);
  }

  Expr visit_tuple(const TupleNode* op, const Expr& self) {
    bool unchanged = true;
    std::vector<Expr> fields;
    for (auto& f : op->fields) {
      fields.push_back(normalize_argument(f));
      unchanged &= fields.back().get() == f.get();
    }
    Expr out = unchanged ? self : Expr(make<TupleNode>(std::move(fields)));
    if (!out->struct_info_) out->struct_info_ = tuple_struct_info(*out.as<TupleNode>());
    return out;
  }

  Expr visit_tuple_get_item(const TupleGetItemNode* op, const Expr& self) {
    Expr t = normalize_argument(op->tuple);
    Expr out = t.get() == op->tuple.get() ? self : Expr(make<TupleGetItemNode>(t, op->index));
    if (!out->struct_info_) out->struct_info_ = item_struct_info(*out.as<TupleGetItemNode>());
    return out;
  }

  // The struct info of a node from its operands' (normalization's rules).
  static StructInfo item_struct_info(const TupleGetItemNode& item) {
    auto* ts = struct_info_of(item.tuple).as<TupleStructInfoNode>();
    if (!ts)
      throw_error("TypeError", "TupleGetItem: the indexed value is not a tuple (its struct info is " +
                                   std::string(node_kind_name(struct_info_of(item.tuple)->kind())) + ")");
    if (item.index < 0 || size_t(item.index) >= ts->fields.size())
      throw_error("IndexError", "TupleGetItem: index " + std::to_string(item.index) +
                                    " is out of range for a tuple of " + std::to_string(ts->fields.size()) +
                                    " fields");
    return ts->fields[item.index];
  }
  static StructInfo call_struct_info(const CallNode& call) {
    if (auto* o = call.op.as<OpNode>()) {
      const OpInterface* iface = find_op_interface(o->name);
      if (!iface) throw_error("KeyError", "call of unknown operator '" + o->name + "'");
      return iface->infer_struct_info(call);
    }
    auto finfo = struct_info_of(call.op).as_ref<FuncStructInfoNode>();
    if (!finfo)
      throw_error("TypeError", "call of a " + std::string(node_kind_name(call.op->kind())) +
                                   " whose struct info is not a function signature");
    return derive_call_ret_struct_info(finfo, call);
  }
  static StructInfo tuple_struct_info(const TupleNode& tuple) {
    std::vector<StructInfo> infos;
    for (auto& f : tuple.fields) infos.push_back(struct_info_of(f));
    return tuple_sinfo(std::move(infos));
  }



  Expr visit_call(const CallNode* op, const Expr& self) {
    Expr new_op = normalize_argument(op->op);
    bool unchanged = new_op.get() == op->op.get();
    std::vector<Expr> args;
    for (auto& a : op->args) {
      args.push_back(normalize_argument(a));
      unchanged &= args.back().get() == a.get();
    }
    Expr out = unchanged ? self
                         : Expr(make<CallNode>(new_op, std::move(args), op->attrs, op->sinfo_args));
    if (!out->struct_info_) out->struct_info_ = call_struct_info(*out.as<CallNode>());
    return out;
  }

  Expr visit_function(const FunctionNode* op, const Expr& self) {
    for (auto& p : op->params)
      if (!p->struct_info_)
        throw_error("ValueError", "BlockBuilder: function parameter '" + p->name_hint +
                                      "' has no struct info");
    Expr body = visit_with_new_scope(op->body, op->params);
    Expr out = self;
    if (body.get() != op->body.get() || !op->ret_struct_info) {
      StructInfo ret = op->ret_struct_info ? op->ret_struct_info : struct_info_of(body);
      out = make<FunctionNode>(op->params, body, ret, op->is_pure, op->attrs);
    }
    if (!out->struct_info_) out->struct_info_ = func_struct_info_of(*out.as<FunctionNode>());
    return out;
  }

  Expr visit_seq(const SeqExprNode* op, const Expr& self) {
    bool unchanged = true;
    std::vector<BindingBlock> blocks;
    for (auto& b : op->blocks) {
      blocks.push_back(visit_binding_block(b));
      unchanged &= blocks.back().get() == b.get();
    }
    if (!bb_.block_stack_.empty() && bb_.current_block_is_dataflow()) bb_.begin_dataflow_block();
    else bb_.begin_binding_block();
    Expr body = normalize_argument(op->body);
    unchanged &= body.get() == op->body.get();
    BindingBlock prologue = bb_.end_block();
    if (!prologue->bindings.empty()) {
      blocks.push_back(prologue);
      unchanged = false;
    }
    bool blocks_changed = false;
    auto normalized = normalize_blocks(blocks, &blocks_changed);
    unchanged &= !blocks_changed;
    Expr out = unchanged ? self : Expr(make<SeqExprNode>(std::move(normalized), body));
    if (!out->struct_info_) out->struct_info_ = bb_.erase_to_well_defined_in_scope(struct_info_of(body));
    return out;
  }

  Expr visit_if(const IfNode* op, const Expr& self) {
    Expr cond = normalize_argument(op->cond);
    Expr t = visit_with_new_scope(op->true_branch, std::nullopt);
    Expr f = visit_with_new_scope(op->false_branch, std::nullopt);
    Expr out = self;
    if (cond.get() != op->cond.get() || t.get() != op->true_branch.get() ||
        f.get() != op->false_branch.get())
      out = make<IfNode>(cond, t, f);
    if (!out->struct_info_) {
      out->struct_info_ = struct_info_lca(bb_.erase_to_well_defined_in_scope(struct_info_of(t)),
                                          bb_.erase_to_well_defined_in_scope(struct_info_of(f)));
    }
    return out;
  }

  // Splits blocks at bindings whose value is a SeqExpr, hoisting the SeqExpr's blocks before
  // the binding and binding the variable to the SeqExpr's body.
  std::vector<BindingBlock> flatten_blocks(const std::vector<BindingBlock>& blocks, bool* changed) {
    std::vector<BindingBlock> ret;
    for (auto& block : blocks) {
      std::vector<Binding> current;
      for (auto& b : block->bindings) {
        const Expr& value = binding_value(*b);
        auto* seq = value.as<SeqExprNode>();
        if (!seq) {
          current.push_back(b);
          continue;
        }
        *changed = true;
        ret.push_back(make<BindingBlockNode>(std::move(current), block->is_dataflow));
        current = {};
        for (auto& inner : seq->blocks) ret.push_back(inner);
        if (auto* vb = b.as<VarBindingNode>()) current.push_back(make<VarBindingNode>(vb->var, seq->body));
        else {
          auto* mc = b.as<MatchCastNode>();
          current.push_back(make<MatchCastNode>(mc->var, seq->body, mc->struct_info));
        }
      }
      ret.push_back(make<BindingBlockNode>(std::move(current), block->is_dataflow));
    }
    return *changed ? ret : blocks;
  }

  std::vector<BindingBlock> normalize_blocks(const std::vector<BindingBlock>& blocks, bool* changed) {
    auto flat = flatten_blocks(blocks, changed);
    std::vector<BindingBlock> ret;
    for (auto& block : flat) {
      if (block->bindings.empty()) {
        *changed = true;
      } else if (!ret.empty() && ret.back()->is_dataflow == block->is_dataflow) {
        std::vector<Binding> merged = ret.back()->bindings;
        merged.insert(merged.end(), block->bindings.begin(), block->bindings.end());
        ret.back() = make<BindingBlockNode>(std::move(merged), block->is_dataflow);
        *changed = true;
      } else {
        ret.push_back(block);
      }
    }
    return *changed ? ret : blocks;
  }

  BlockBuilder& bb_;
};

// ---------------------------------------------------------------------------------------------

BlockBuilder::BlockBuilder(std::optional<IRModule> mod)
    : context_mod_(mod && *mod ? *mod : IRModule::create()) {}

BlockBuilder::~BlockBuilder() = default;

std::string BlockBuilder::get_unique_name(const std::string& hint) { return names_.fresh(hint); }

BlockBuilder::BlockFrame& BlockBuilder::current_block(const char* what) {
  if (block_stack_.empty())
    misuse(std::string(what) + " called outside a binding block (begin a function or block first)");
  return block_stack_.back();
}

bool BlockBuilder::current_block_is_dataflow() const {
  if (block_stack_.empty()) misuse("current_block_is_dataflow called outside a binding block");
  return block_stack_.back().is_dataflow;
}

void BlockBuilder::begin_binding_block() { block_stack_.push_back(BlockFrame{{}, false, {}}); }
void BlockBuilder::begin_dataflow_block() { block_stack_.push_back(BlockFrame{{}, true, {}}); }

BindingBlock BlockBuilder::end_block() {
  BlockFrame& frame = current_block("end_block");
  auto block = make<BindingBlockNode>(std::move(frame.bindings), frame.is_dataflow);
  block_stack_.pop_back();
  return block;
}

void BlockBuilder::begin_scope(std::optional<std::vector<Var>> params) {
  ScopeFrame frame;
  // Symbolic variables stay in scope in nested scopes (function bodies see their params').
  if (!scope_stack_.empty()) frame.shape_var_map = scope_stack_.back().shape_var_map;
  if (params) {
    for (auto& p : *params) {
      if (!p->struct_info_) continue;
      for (auto& v : definable_symbolic_vars_of(p->struct_info_)) frame.shape_var_map.emplace(v, v);
    }
  }
  scope_stack_.push_back(std::move(frame));
}

void BlockBuilder::end_scope() {
  if (scope_stack_.empty()) misuse("end_scope without a matching begin_scope");
  scope_stack_.pop_back();
}

StructInfo BlockBuilder::erase_to_well_defined_in_scope(const StructInfo& sinfo) const {
  if (scope_stack_.empty()) return erase_to_well_defined(sinfo);
  return erase_to_well_defined(sinfo, scope_stack_.back().shape_var_map);
}

Var BlockBuilder::create_var(bool is_dataflow, const std::string& name_hint) {
  std::string hint = name_hint.empty() ? (is_dataflow ? "lv" : "gv") : name_hint;
  std::string name = get_unique_name(hint);
  if (is_dataflow) return make<DataflowVarNode>(name, StructInfo());
  return make<VarNode>(name, StructInfo());
}

Var BlockBuilder::emit_impl(const Expr& expr, bool is_dataflow, const std::string& name_hint) {
  Expr value = normalize(expr);
  Var var = create_var(is_dataflow, name_hint);
  var->struct_info_ = struct_info_of(value);
  current_block("emit").bindings.push_back(make<VarBindingNode>(var, value));
  binding_table_[var] = value;
  return var;
}

Var BlockBuilder::emit(const Expr& expr, const std::string& name_hint) {
  bool df = current_block("emit").is_dataflow;
  return emit_impl(expr, df, name_hint);
}

Var BlockBuilder::emit_output(const Expr& expr, const std::string& name_hint) {
  if (!current_block("emit_output").is_dataflow)
    misuse("emit_output must be called inside a dataflow block");
  return emit_impl(expr, false, name_hint);
}

Var BlockBuilder::emit_match_cast(const Expr& value, const StructInfo& sinfo,
                                  const std::string& name_hint) {
  current_block("emit_match_cast");
  if (!sinfo) misuse("emit_match_cast needs a target struct info");
  Expr v = normalize(value);
  if (struct_info_base_check(struct_info_of(v), sinfo) == BaseCheckResult::FailL0)
    throw_error("TypeError", "BlockBuilder: emit_match_cast can never succeed: the value's struct "
                             "info is of another kind than the target struct info");
  Var var = create_var(block_stack_.back().is_dataflow, name_hint);
  var->struct_info_ = sinfo;
  block_stack_.back().bindings.push_back(make<MatchCastNode>(var, v, sinfo));
  return var;
}

void BlockBuilder::emit_normalized(const Binding& binding) {
  BlockFrame& frame = current_block("emit_normalized");
  if (!binding) misuse("emit_normalized got a null binding");
  const Var& var = binding->var;
  if (!frame.is_dataflow && var.as<DataflowVarNode>())
    misuse("cannot emit DataflowVar '" + var->name_hint + "' in a non-dataflow block");
  if (!var->struct_info_ || !binding_value(*binding)->struct_info_)
    misuse("emit_normalized got a binding of '" + var->name_hint + "' that is not normalized");
  frame.bindings.push_back(binding);
  if (auto* vb = binding.as<VarBindingNode>()) binding_table_[var] = vb->value;
}

Expr BlockBuilder::normalize(const Expr& expr) {
  BlockBuilderNormalizer n(*this);
  Expr out = n.visit(expr);
  PARTITA_ICHECK(out.as<OpNode>() || out->struct_info_);
  return out;
}

StructInfo BlockBuilder::derive_struct_info(const Expr& expr) { return BlockBuilderNormalizer(*this).derive(expr); }

Expr BlockBuilder::normalize_argument(const Expr& expr) {
  BlockBuilderNormalizer n(*this);
  return n.normalize_argument(expr);
}

Expr BlockBuilder::lookup_binding(const Var& var) const {
  auto it = binding_table_.find(var);
  return it == binding_table_.end() ? Expr() : it->second;
}

GlobalVar BlockBuilder::add_function(const Expr& func, const std::string& name_hint) {
  if (!func || (!func.as<FunctionNode>() && !func.as<ExternFuncNode>()))
    misuse("add_function expects a Function or an ExternFunc");
  // Functions are kept sorted by name, so the first match is the first by name.
  for (auto& [name, entry] : context_mod_->functions)
    if (entry.second.get() == func.get() || structural_equal(entry.second, func)) return entry.first;
  std::string name = get_unique_name(name_hint);
  while (context_mod_.contains(name)) name = get_unique_name(name_hint);
  auto gv = make<GlobalVarNode>(name);
  if (func->struct_info_) gv->struct_info_ = func->struct_info_;
  else if (auto* fn = func.as<FunctionNode>()) {
    bool ok = true;
    for (auto& p : fn->params) ok &= bool(p->struct_info_);
    if (ok) gv->struct_info_ = func_struct_info_of(*fn);
  } else {
    gv->struct_info_ = make<FuncStructInfoNode>(std::nullopt, object_sinfo(), false);
  }
  context_mod_.add(gv, func);
  return gv;
}

void BlockBuilder::update_function(const GlobalVar& gv, const Expr& func) {
  context_mod_.update(gv, func);
}

// ---- high-level function construction ----

void BlockBuilder::begin_function(const std::string& name, std::vector<Var> params, DictAttrs attrs,
                                  bool is_pure, bool is_private) {
  if (func_) misuse("begin_function('" + name + "') while function '" + func_->name + "' is open");
  for (auto& p : params) {
    if (!p) misuse("begin_function('" + name + "'): a parameter is null");
    if (!p->struct_info_)
      misuse("begin_function('" + name + "'): parameter '" + p->name_hint + "' has no struct info");
  }
  if (!is_private) attrs["global_symbol"] = name;
  func_ = FunctionFrame{name, params, std::move(attrs), is_pure, {}, false};
  begin_scope(std::move(params));
  begin_binding_block();
}

void BlockBuilder::close_function_block() {
  BindingBlock block = end_block();
  if (!block->bindings.empty()) func_->blocks.push_back(block);
}

void BlockBuilder::begin_dataflow() {
  if (!func_) misuse("begin_dataflow called outside a function (call begin_function first)");
  if (func_->in_dataflow) misuse("begin_dataflow called inside a dataflow block");
  close_function_block();
  begin_dataflow_block();
  func_->in_dataflow = true;
}

void BlockBuilder::end_dataflow() {
  if (!func_ || !func_->in_dataflow) misuse("end_dataflow called without begin_dataflow");
  close_function_block();
  func_->in_dataflow = false;
  begin_binding_block();
}

GlobalVar BlockBuilder::emit_func_output(const Expr& output) {
  if (!func_) misuse("emit_func_output called outside a function");
  if (!output) misuse("emit_func_output got a null output");
  if (func_->in_dataflow) {
    // A dataflow var cannot leave its block: the output must already be an output var.
    if (output.as<DataflowVarNode>())
      misuse("emit_func_output: the output '" + output.as<DataflowVarNode>()->name_hint +
             "' is a DataflowVar; emit it with emit_output first");
    close_function_block();
    func_->in_dataflow = false;
    begin_binding_block();
  }
  try {
    Expr out = normalize_argument(output);
    close_function_block();
    Expr seq = normalize(make<SeqExprNode>(std::move(func_->blocks), out));
    auto func = make<FunctionNode>(func_->params, seq, struct_info_of(seq), func_->is_pure, func_->attrs);
    end_scope();
    std::string name = func_->name;
    func_.reset();
    Expr normalized = normalize(func);
    return add_function(normalized, name);
  } catch (...) {
    // Drop the half-built function so the builder stays usable (e.g. interactively).
    func_.reset();
    block_stack_.clear();
    scope_stack_.clear();
    throw;
  }
}

}  // namespace partita
