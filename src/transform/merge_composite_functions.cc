// MergeCompositeFunctions: group composite calls per backend (TVM's CompositeGroupsBuilder),
// make one function per group (grouping.h's GroupFuser), then inline the composites into them
// and name them after their backend (TVM's CompositeInliner / CompositeFunctionAnnotator).
#include "partita/transform/merge_composite_functions.h"

#include <algorithm>
#include <unordered_set>

#include "grouping.h"
#include "pass_util.h"
#include "partita/ir/analysis.h"
#include "partita/ir/ptr_map.h"
#include "partita/ir/substitute.h"
#include "partita/transform/fuse_ops_by_pattern.h"

namespace partita::transform {
namespace {

using namespace detail;

bool is_flat_tensor_tuple(const Expr& e) {
  auto* t = e->struct_info_ ? e->struct_info_.as<TupleStructInfoNode>() : nullptr;
  auto is_tensor = [](const StructInfo& f) { return f.as<TensorStructInfoNode>() != nullptr; };
  return t && !t->fields.empty() && std::all_of(t->fields.begin(), t->fields.end(), is_tensor);
}

class GroupsBuilder {
 public:
  explicit GroupsBuilder(const IRModule& mod) : mod_(mod) {}

  // Groups of block `b` of `fn`; `escaping` are variables used outside the block's bindings
  // (later blocks, the function result).
  BlockGroups run(FunctionSlots& fn, size_t b, const std::unordered_set<const VarNode*>& escaping) {
    const std::vector<int>& order = fn.blocks[b].order;
    int n = int(order.size());
    std::vector<Binding> bindings;
    bindings.reserve(n);
    for (int s : order) bindings.emplace_back(fn.slots[s].binding);
    std::vector<int> pos, offsets, edges, user_off, user_list;
    fn.block_graph(order, pos, offsets, edges);
    graph_users(offsets, edges, user_off, user_list);
    GroupGraph graph;
    graph.reset(offsets, edges);
    std::vector<int> codegen(n, -1);  // per root: index into codegens_; -1 = host

    // True when the tuple bound at `t` is only read through get-items inside this block.
    auto only_get_item_users = [&](int t) {
      if (escaping.count(bindings[t]->var.get()) || user_off[t] == user_off[t + 1]) return false;
      for (int k = user_off[t]; k < user_off[t + 1]; ++k) {
        auto* vb = bindings[user_list[k]].as<VarBindingNode>();
        auto* g = vb ? vb->value.as<TupleGetItemNode>() : nullptr;
        if (!g || !(g->tuple == bindings[t]->var)) return false;
      }
      return true;
    };
    auto index_of = [&](const Expr& e) -> int {
      const int* at = e.as<VarNode>() ? fn.var_slot.find(e.get()) : nullptr;
      return at ? pos[*at] : -1;
    };
    // The group of the binding `e` names (-1: bound outside the block).
    auto group_of = [&](const Expr& e) {
      int j = index_of(e);
      return j < 0 ? -1 : graph.find(j);
    };
    // A call's arguments with the fields of a tuple argument in its place (concat's tensors),
    // so a composite taking a tuple merges with the producers of its fields.
    std::vector<Expr> args;
    auto flat_args = [&](const CallNode& call) -> const std::vector<Expr>& {
      args.clear();
      for (const auto& a : call.args) {
        if (auto* t = a.as<TupleNode>()) args.insert(args.end(), t->fields.begin(), t->fields.end());
        else args.push_back(a);
      }
      return args;
    };

    // Binding i joins group r when that is offloaded.
    auto join = [&](int r, int i) {
      if (r >= 0 && codegen[r] >= 0) codegen[graph.unite(r, i)] = codegen[r];
    };
    std::vector<int> parents;
    for (int i = 0; i < n; ++i) {
      auto* vb = bindings[i].as<VarBindingNode>();
      if (!vb) continue;
      const Expr& value = vb->value;
      if (auto* call = value.as<CallNode>()) {
        int cg = composite_codegen(call->op);
        if (cg < 0) continue;
        // Parents: argument groups of the same backend that no other argument depends on.
        parents.clear();
        const std::vector<Expr>& call_args = flat_args(*call);
        for (const auto& a : call_args) {
          int p = group_of(a);
          auto depends = [&](const Expr& b) {
            int k = index_of(b);
            return k >= 0 && graph.find(k) != p && graph.is_ancestor(p, k);
          };
          if (p >= 0 && codegen[p] == cg && std::none_of(call_args.begin(), call_args.end(), depends))
            parents.push_back(p);
        }
        int root = i;
        for (int p : parents) root = graph.unite(root, p);
        codegen[graph.find(root)] = cg;
      } else if (auto* g = value.as<TupleGetItemNode>()) {
        int t = index_of(g->tuple);
        if (t >= 0 && is_flat_tensor_tuple(g->tuple) && only_get_item_users(t))
          join(graph.find(t), i);
      } else if (value.as<VarNode>()) {
        // An alias (`gv = lv`) is in its value's group, as TVM's memo gives it that group.
        join(group_of(value), i);
      } else if (auto* tup = value.as<TupleNode>()) {
        if (!is_flat_tensor_tuple(value) || !only_get_item_users(i)) continue;
        // The tuple joins when all its fields are of one group (a flat tuple has fields).
        int r = group_of(tup->fields[0]);
        auto in_r = [&](const Expr& f) { return group_of(f) == r; };
        if (std::all_of(tup->fields.begin(), tup->fields.end(), in_r)) join(r, i);
      }
    }
    BlockGroups bg;
    std::vector<int> roots;
    graph.number_groups([&](int r) { return codegen[r] >= 0; }, bg.group_of, roots);
    for (int r : roots) bg.attrs.push_back(DictAttrs{{"Codegen", codegens_[codegen[r]]}});
    bg.count = int(roots.size());
    return bg;
  }

 private:
  // The codegen (index into codegens_) of a call's callee when it is a composite, else -1.
  int composite_codegen(const Expr& op) {
    const FunctionNode* f = composite_callee(mod_, op);
    if (!f) return -1;
    std::string cg = codegen_name_of(*f->attr_string("Composite"));
    auto it = std::find(codegens_.begin(), codegens_.end(), cg);
    int id = int(it - codegens_.begin());
    if (it == codegens_.end()) codegens_.push_back(std::move(cg));
    return id;
  }
  const IRModule& mod_;
  std::vector<std::string> codegens_;
};

// Inlines composite functions into a merged function as local functions bound to `gv`, `gv1`,
// ... (one name supply for the whole pass), and makes every dataflow block and variable plain,
// the functions nested in it included (TVM's CompositeInliner and ToNonDataflow).
class CompositeInliner : public ExprMutator {
 public:
  explicit CompositeInliner(const IRModule& original) : original_(original) {}

  // `func` (a new group function) as the public function `global_symbol`, "Primitive" dropped.
  Function run(const Function& func, const std::string& global_symbol) {
    local_.clear();
    auto* nf = copy_node(visit_expr(func).as_ref<FunctionNode>());
    nf->attrs.erase("Primitive");
    nf->attrs["global_symbol"] = global_symbol;
    return Function(nf);
  }

  using ExprMutator::visit_;
  BindingBlock visit_dataflow_block_(const BindingBlockNode* block) override {
    return visit_binding_block_(block);
  }
  Var visit_var_def_(const DataflowVarNode* v) override {
    Var plain = make<VarNode>(v->name_hint, v->struct_info_);
    var_remap_[Var(v)] = plain;
    return plain;
  }
  Expr visit_(const CallNode* call) override {
    const FunctionNode* f = composite_callee(original_, call->op);
    if (!f) return ExprMutator::visit_(call);
    Var* lv = local_.find(f);
    if (!lv) {
      // A copy with fresh parameters, binding and symbolic variables, without "Primitive".
      auto* inner = copy_node(renew_symbolic_vars(copy_with_new_vars(Function(f))));
      inner->attrs.erase("Primitive");
      Var v = make<VarNode>(numbered("gv", n_gv_), inner->struct_info_);
      builder_.emit_normalized(make<VarBindingNode>(v, Expr(Function(inner))));
      lv = local_.emplace(f, v).first;
    }
    auto* nc = copy_node(Ref<CallNode>(call));
    nc->op = *lv;
    for (auto& a : nc->args) a = visit_expr(a);
    return Call(nc);
  }

 private:
  const IRModule& original_;
  PtrMap<Var> local_;  // composite function -> its local function var in the function made now
  int n_gv_ = 0;       // local functions are "gv", "gv1", ... across all merged functions
};

std::unordered_set<const VarNode*> escaping_vars(const SeqExprNode& seq, size_t block_index) {
  std::vector<const VarNode*> used;
  for (size_t b = block_index + 1; b < seq.blocks.size(); ++b)
    for (const auto& bind : seq.blocks[b]->bindings) used_vars(binding_value(*bind), used);
  used_vars(seq.body, used);
  return {used.begin(), used.end()};
}

}  // namespace

IRModule merge_composite_functions(IRModule mod) {
  const IRModule original = mod;
  GroupsBuilder builder(original);
  GroupFuser fuser(mod, /*lift_constants=*/true);
  std::vector<std::string> targets;
  for (const auto& [name, entry] : original->functions) {
    auto* f = entry.second.as<FunctionNode>();
    auto* seq = f && is_plain_function(*f) ? f->body.as<SeqExprNode>() : nullptr;
    if (!seq) continue;
    targets.push_back(name);
    FunctionSlots fn{Function(f)};
    std::vector<BlockGroups> groups(fn.blocks.size());
    for (size_t b = 0; b < groups.size(); ++b)
      if (fn.blocks[b].is_dataflow) groups[b] = builder.run(fn, b, escaping_vars(*seq, b));
    for (size_t b = 0; b < groups.size(); ++b) fuser.fuse_block(fn, b, groups[b]);
    if (fn.changed) fuser.mod().update(fuser.mod().get_global_var(name), fn.rebuild());
  }
  IRModule grouped = fuser.mod();

  // Rename each Codegen function called (the new group functions and any the module had) to
  // <name>_<codegen>, public, with composites inlined.
  CompositeInliner inliner(original);
  NameSupply names;
  std::unordered_map<std::string, GlobalVar> renamed;
  IRModule result = grouped;
  for (const auto& target : targets) {
    Function func = result.lookup(target).as_ref<FunctionNode>();
    Function out = redirect_calls(func, [&](const GlobalVarNode* gv) {
      if (auto it = renamed.find(gv->name_hint); it != renamed.end()) return it->second;
      // A new group function, or one the module already had (FuseOpsByPattern with
      // annotate_codegen=True): TVM renames and inlines every Codegen function main calls.
      auto* gf = grouped.contains(gv->name_hint)
                     ? grouped.lookup(gv->name_hint).as<FunctionNode>()
                     : nullptr;
      auto codegen = gf ? gf->attr_string("Codegen") : std::nullopt;
      if (!codegen) return GlobalVar();
      result.remove(gv->name_hint);
      GlobalVar ngv = add_fresh_function(
          result, names, gv->name_hint + "_" + *codegen,
          [&](const std::string& name) { return inliner.run(Function(gf), name); });
      return renamed.emplace(gv->name_hint, ngv).first->second;
    });
    if (!(out == func)) result.update(result.get_global_var(target), out);
  }
  // TVM ends with DeadCodeElimination(mod, {"main"}): unreachable functions and, in every
  // function, the bindings nothing uses (a dead chain left on the host).
  return dead_code_elimination(std::move(result));
}

Pass MergeCompositeFunctions() {
  return module_pass(merge_composite_functions, 0, "MergeCompositeFunctions");
}

}  // namespace partita::transform
