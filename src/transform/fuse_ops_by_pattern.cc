// FuseOpsByPattern: pattern-based partitioning (TVM's PatternBasedPartitioner), grouping into
// composite functions, and the optional codegen annotation (CompositeFunctionAnnotator).
//
// Patterns are applied one after the other, each to the entry functions as the earlier ones left
// them, kept as FunctionSlots (grouping.h) between patterns. Check functions see each dataflow
// block as the earlier patterns left it, through tables filled on demand (BlockTable).
#include "partita/transform/fuse_ops_by_pattern.h"

#include "grouping.h"
#include "pass_util.h"
#include "partita/dpl/matcher.h"
#include "partita/ir/analysis.h"
#include "partita/support/error.h"

namespace partita::transform {

std::string codegen_name_of(const std::string& composite_name) {
  auto pos = composite_name.find('.');
  if (pos == std::string::npos || pos == 0)
    throw_error("ValueError",
                "composite name '" + composite_name +
                    "' must start with a codegen name followed by '.' ('<codegen>.<pattern>')");
  return composite_name.substr(0, pos);
}

bool has_leaking_intermediate_variables(const PatternCheckContext& ctx) {
  Var output;
  if (auto it = ctx.value_to_bound_var->find(ctx.matched_expr); it != ctx.value_to_bound_var->end())
    output = it->second;
  for (const auto& [var, value] : ctx.matched_bindings) {
    if (var == output) continue;
    if (!var.as<DataflowVarNode>()) return true;
    auto uses = ctx.var_usages->find(var);
    if (uses == ctx.var_usages->end()) continue;
    for (const auto& user : uses->second)
      if (!ctx.matched_bindings.count(user)) return true;
  }
  return false;
}

namespace {

using namespace detail;

bool is_group_pattern(const dpl::PatternNode& p) {
  return p.kind == dpl::PatternKind::Call || p.kind == dpl::PatternKind::TupleGetItem;
}

// One pattern over dataflow blocks: the matches that become groups. One object serves every
// pattern, so its working arrays (several per binding) are allocated once.
class PatternPass {
 public:
  ~PatternPass() { release_tables(); }  // a check may have kept a table (and thrown)

  void begin(const FusionPattern& pat) {
    pat_ = &pat;
    root_op_ = nullptr;
    const dpl::Pattern& p = pat.pattern;
    if (p->kind == dpl::PatternKind::Call && p->op && p->op->kind == dpl::PatternKind::Expr)
      root_op_ = p->op->expr.as<OpNode>();
    // The groups' attributes, unless an attrs_getter adds to them.
    attrs_ = DictAttrs{{"Composite", pat.name}};
  }

  /// The groups of each dataflow block of `fn` (as it stands) for the pattern, into `groups[b]`
  /// where there are any (a function listed twice keeps the last partitioning's that found any).
  void run(FunctionSlots& fn, std::vector<BlockGroups>& groups) {
    fn_ = &fn;
    for (size_t b = 0; b < groups.size(); ++b) {
      order_ = &fn.blocks[b].order;
      if (!fn.blocks[b].is_dataflow ||
          !std::any_of(order_->begin(), order_->end(), [&](int s) { return candidate(slot(s)); }))
        continue;
      if (int count = partition(); count > 0) {
        groups[b].count = count;
        groups[b].group_of.swap(group_of_);
        groups[b].attrs.swap(group_attrs_);
      }
    }
  }

 private:
  // A call of the pattern's root operator (or any call, for other roots).
  bool candidate(const Slot& s) const {
    if (!s.is_var_binding || s.value->kind() != NodeKind::Call) return false;
    auto* op = static_cast<const CallNode*>(s.value)->op.as<OpNode>();
    return !root_op_ || (op && (op == root_op_ || op->name == root_op_->name));
  }

  const Slot& slot(int s) const { return fn_->slots[size_t(s)]; }

  // Fills group_of_ (per position: the group, -1 for none) and group_attrs_ (per group, or one
  // for all without an attrs_getter); returns the number of groups.
  int partition() {
    int n = int(order_->size());
    fn_->block_graph(*order_, pos_, offsets_, edges_);
    if (pat_->check) graph_users(offsets_, edges_, users_off_, users_);
    // The values the matcher reaches through variables (bound in this block), with their slots
    // (jumped_): every call or get-item a match covers besides its root is one of them, so this
    // stands for a value -> binding table.
    dpl::BindingLookup lookup = [&](const VarNode* v) -> const Expr* {
      const int* s = fn_->var_slot.find(v);
      if (!s || pos_[*s] < 0 || !slot(*s).is_var_binding) return nullptr;
      jumped_.emplace_back(slot(*s).value, *s);
      return &static_cast<const VarBindingNode*>(slot(*s).binding)->value;
    };
    graph_.reset(offsets_, edges_);
    composite_.assign(n, 0);
    extra_attrs_.assign(pat_->attrs_getter ? n : 0, std::nullopt);
    for (int i = 0; i < n; ++i) {
      const Slot& s = slot((*order_)[i]);
      if (!candidate(s)) continue;
      jumped_.clear();
      if (!dpl::match_with_lookup(
              pat_->pattern, static_cast<const VarBindingNode*>(s.binding)->value, lookup, match_))
        continue;
      matched_.assign(1, i);
      for (const auto& [p, e] : match_) {
        if (!is_group_pattern(**p) || e.get() == s.value) continue;
        int js = jumped_slot(e.get());
        matched_.push_back(js < 0 ? -1 : pos_[js]);
      }
      // A value not bound in this block before the root cannot be grouped.
      if (std::any_of(matched_.begin(), matched_.end(), [i](int j) { return j < 0 || j > i; }))
        continue;
      if (pat_->check && !pat_->check(check_context(i))) continue;
      if (!graph_.group_match(matched_, composite_)) continue;
      if (pat_->attrs_getter) extra_attrs_[i] = pat_->attrs_getter(annotated_exprs());
    }
    release_tables();
    graph_.number_groups([&](int r) { return composite_[r]; }, group_of_, tmp_);
    group_attrs_.assign(pat_->attrs_getter ? tmp_.size() : 1, attrs_);  // one: for every group
    // A group takes the attributes of the last match whose root ended up in it (as the
    // reference's table keyed by root).
    for (int i = 0; i < int(extra_attrs_.size()); ++i) {
      if (!extra_attrs_[i]) continue;
      DictAttrs& attrs = group_attrs_[size_t(group_of_[i])] = attrs_;
      for (const auto& [k, v] : *extra_attrs_[i]) attrs[k] = v;
    }
    return int(tmp_.size());
  }

  // The slot of the value `e` the matcher reached through a variable, else -1.
  int jumped_slot(const Object* e) const {
    for (const auto& [value, s] : jumped_)
      if (value == e) return s;
    return -1;
  }

  // ---- what a check function sees ----

  std::map<std::string, Expr> annotated_exprs() const {
    std::map<std::string, Expr> out;
    for (const auto& [name, p] : pat_->annotation_patterns)
      for (const auto& [q, e] : match_)
        if (q->get() == p.get()) out[name] = e;
    return out;
  }

  // The context of the match rooted at position i (match_ and jumped_ hold it).
  PatternCheckContext check_context(int i) {
    int root = (*order_)[i];
    PatternCheckContext ctx;
    ctx.matched_expr = Expr(slot(root).value);
    ctx.annotated_expr = annotated_exprs();
    for (const auto& [p, e] : match_) {
      if (!is_group_pattern(**p)) continue;
      int s = e.get() == slot(root).value ? root : jumped_slot(e.get());
      if (s >= 0) ctx.matched_bindings[Var(slot(s).var)] = e;
    }
    root_slot_ = root;
    if (!usages_) make_tables();
    ctx.var_usages = usages_;
    ctx.value_to_bound_var = bound_;
    return ctx;
  }

  // The variables of the bindings that use position j.
  std::vector<Var> users_of(int j) const {
    std::vector<Var> out;
    for (int k = users_off_[j]; k < users_off_[j + 1]; ++k)
      out.emplace_back(slot((*order_)[users_[k]]).var);
    return out;
  }

  // The VarBinding slot of the block whose value is `e`, else -1; for a value bound more than
  // once (a variable or constant can be), the last one. The current match's slots first (what
  // checks look up: calls and get-items, which are bound once), then a table of every value,
  // made on the first miss.
  int slot_of_value(const Object* e) {
    if (e->kind() == NodeKind::Call || e->kind() == NodeKind::TupleGetItem) {
      if (root_slot_ >= 0 && slot(root_slot_).value == e) return root_slot_;
      if (int s = jumped_slot(e); s >= 0) return s;
    }
    if (!value_slot_) {
      value_slot_.emplace(order_->size());
      for (int s : *order_)
        if (slot(s).is_var_binding) (*value_slot_)[slot(s).value] = s;
    }
    const int* s = value_slot_->find(e);
    return s ? *s : -1;
  }

  // The pattern's tables for this block, filled as checks ask (positions and slots do not change
  // until the partitioning ends; release_tables then cuts them loose).
  void make_tables() {
    usages_ = std::make_shared<PatternCheckContext::VarUsages>(
        order_->size(),
        [this](const Var& v, std::vector<Var>& users) {
          const int* s = fn_->var_slot.find(v.get());
          if (!s || pos_[*s] < 0) return false;
          users = users_of(pos_[*s]);
          return true;
        },
        [this](const auto& visit) {
          for (int s : *order_) visit(Var(slot(s).var));
        });
    bound_ = std::make_shared<PatternCheckContext::BoundVars>(
        order_->size(),
        [this](const Expr& e, Var& var) {
          int s = slot_of_value(e.get());
          if (s >= 0) var = Var(slot(s).var);
          return s >= 0;
        },
        [this](const auto& visit) {
          for (int s : *order_)
            if (slot(s).is_var_binding) visit(Expr(slot(s).value));
        });
  }

  // After a block's partitioning: a table a check kept is completed (it must not change with the
  // block), and the others dropped.
  void release_tables() {
    if (usages_ && usages_.use_count() > 1) usages_->complete();
    if (bound_ && bound_.use_count() > 1) bound_->complete();
    usages_.reset();
    bound_.reset();
    root_slot_ = -1;
    value_slot_.reset();
  }

  const FusionPattern* pat_ = nullptr;
  const OpNode* root_op_ = nullptr;
  DictAttrs attrs_;
  // The block being partitioned: its function and its order of slots.
  FunctionSlots* fn_ = nullptr;
  const std::vector<int>* order_ = nullptr;
  // Working arrays, reused from pattern to pattern.
  std::vector<int> pos_, offsets_, edges_, group_of_, matched_, tmp_;  // tmp_: group roots
  std::vector<char> composite_;  // per root: formed by a match
  std::vector<std::pair<const Object*, int>> jumped_;
  GroupGraph graph_;
  dpl::MatchList match_;
  // attrs_getter results per root position of an accepted match; per group.
  std::vector<std::optional<std::map<std::string, AttrValue>>> extra_attrs_;
  std::vector<DictAttrs> group_attrs_;
  // Check functions' tables for the block being partitioned.
  std::vector<int> users_off_, users_;
  std::shared_ptr<PatternCheckContext::VarUsages> usages_;
  std::shared_ptr<PatternCheckContext::BoundVars> bound_;
  int root_slot_ = -1;
  std::optional<PtrMap<int>> value_slot_;  // made on the first miss of slot_of_value
};

// Wraps each composite in a public function carrying "Codegen" (TVM's
// CompositeFunctionAnnotator): the composite becomes the local function `local_func`.
IRModule annotate_composites(IRModule mod) {
  NameSupply names;
  std::unordered_map<std::string, GlobalVar> wrapped;  // composite name -> wrapper
  // A call of a composite -> its wrapper, made on first use.
  std::function<GlobalVar(const GlobalVarNode*)> wrapper = [&](const GlobalVarNode* gv) {
    if (auto it = wrapped.find(gv->name_hint); it != wrapped.end()) return it->second;
    if (!composite_callee(mod, GlobalVar(gv))) return GlobalVar();
    // A composite calling another (a pattern matched a call of one) calls its wrapper too.
    Function func = redirect_calls(mod.lookup(GlobalVar(gv)).as_ref<FunctionNode>(), wrapper);
    std::string codegen = codegen_name_of(*func->attr_string("Composite"));
    auto* inner_node = copy_node(func);
    inner_node->attrs.erase("Primitive");
    Function inner(inner_node);
    std::vector<Var> params;
    for (const auto& p : func->params)
      params.push_back(make<VarNode>(p->name_hint, p->struct_info_));
    Var local = make<VarNode>("local_func", inner->struct_info_);
    Call call = make<CallNode>(local, std::vector<Expr>(params.begin(), params.end()));
    call->struct_info_ = func->ret_struct_info;
    Var output = make<VarNode>("output", func->ret_struct_info);
    Expr body = single_block_seq(
        {make<VarBindingNode>(local, inner), make<VarBindingNode>(output, call)}, false, output);
    mod.remove(gv->name_hint);
    GlobalVar ngv = add_fresh_function(mod, names, gv->name_hint + "_" + codegen, [&](auto& name) {
      Function outer = make<FunctionNode>(params, body, func->ret_struct_info, inner->is_pure,
                                          DictAttrs{{"Codegen", codegen}, {"global_symbol", name}});
      outer->struct_info_ = func_struct_info_of(*outer);
      return outer;
    });
    return wrapped.emplace(gv->name_hint, ngv).first->second;
  };
  std::vector<std::string> names_before;
  for (const auto& [name, entry] : mod->functions) names_before.push_back(name);
  for (const auto& name : names_before) {
    if (!mod.contains(name)) continue;
    auto* f = mod.lookup(name).as<FunctionNode>();
    if (!f || f->attrs.count("Composite") || f->attrs.count("Codegen")) continue;
    Function out = redirect_calls(Function(f), wrapper);
    if (out.get() != f) mod.update(mod.get_global_var(name), out);
  }
  return mod;
}

}  // namespace

IRModule fuse_ops_by_pattern(const std::vector<FusionPattern>& patterns, IRModule mod,
                             bool bind_constants, bool annotate_codegen,
                             const std::vector<std::string>& entry_functions) {
  for (const auto& pat : patterns) {
    if (!pat.pattern)
      throw_error("ValueError", "FuseOpsByPattern: pattern '" + pat.name + "' is undefined");
    if (pat.name.empty())
      throw_error("ValueError", "FuseOpsByPattern: a fusion pattern has an empty name");
    if (annotate_codegen) codegen_name_of(pat.name);
  }
  for (const auto& name : entry_functions)
    if (!mod.lookup(name).as<FunctionNode>())
      throw_error("ValueError",
                  "FuseOpsByPattern: entry function '" + name + "' is not a Relax function");
  // The functions are partitioned in the order listed (a name listed twice, twice), by default
  // every Relax function that is neither Primitive, Composite nor Codegen in name order; the
  // patterns add only Primitive functions, so that list stays the same. Groups become functions
  // function by function in name order.
  std::vector<std::string> listed = entry_functions;
  if (listed.empty())
    for (const auto& [name, entry] : mod->functions)
      if (auto* f = entry.second.as<FunctionNode>(); f && is_plain_function(*f))
        listed.push_back(name);
  struct Entry {
    explicit Entry(const Function& f) : slots(f), groups(slots.blocks.size()) {}
    FunctionSlots slots;
    std::vector<BlockGroups> groups;  // per block, for the pattern being applied
  };
  std::map<std::string, Entry> entries;
  for (const auto& name : listed)
    if (Function f = mod.lookup(name).as_ref<FunctionNode>(); f->body.as<SeqExprNode>())
      entries.try_emplace(name, f);
  PatternPass pass;
  for (const auto& pat : patterns) {
    pass.begin(pat);
    for (const auto& name : listed)
      if (auto it = entries.find(name); it != entries.end())
        pass.run(it->second.slots, it->second.groups);
    GroupFuser fuser(std::move(mod), !bind_constants);
    for (auto& [name, e] : entries) {
      for (size_t b = 0; b < e.groups.size(); ++b) {
        fuser.fuse_block(e.slots, b, e.groups[b]);
        e.groups[b].count = 0;
      }
      // A Primitive entry takes part in sharing functions with the next pattern's groups as
      // this pattern left it.
      if (e.slots.changed && e.slots.func()->attrs.count("Primitive"))
        fuser.mod().update(fuser.mod().get_global_var(name), e.slots.rebuild());
    }
    mod = std::move(fuser.mod());
  }
  for (auto& [name, e] : entries)
    if (e.slots.changed) mod.update(mod.get_global_var(name), e.slots.rebuild());
  return annotate_codegen ? annotate_composites(mod) : mod;
}

Pass FuseOpsByPattern(std::vector<FusionPattern> patterns, bool bind_constants,
                      bool annotate_codegen, std::vector<std::string> entry_functions) {
  return create_module_pass(
      [=](IRModule mod, const PassContext&) {
        return fuse_ops_by_pattern(patterns, std::move(mod), bind_constants, annotate_codegen,
                                   entry_functions);
      },
      0, "FuseOpsByPattern");
}

}  // namespace partita::transform
