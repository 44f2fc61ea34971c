// The dataflow pattern matcher: one memoized recursive match per call, following bindings.
#include "partita/dpl/matcher.h"

#include <functional>

#include "partita/ir/analysis.h"
#include "partita/ir/functor.h"
#include "partita/ir/structural_equal.h"
#include "partita/op/registry.h"
#include "partita/support/error.h"

namespace partita::dpl {
namespace {

bool attr_value_equal(const AttrValue& a, const AttrValue& b) {
  if (a == b) return true;
  // Numbers written by users (Python ints for float attributes, bools for ints) compare by value.
  auto as_number = [](const AttrValue& v) -> std::optional<double> {
    if (auto* i = std::get_if<int64_t>(&v)) return double(*i);
    if (auto* d = std::get_if<double>(&v)) return *d;
    if (auto* b = std::get_if<bool>(&v)) return *b ? 1.0 : 0.0;
    return std::nullopt;
  };
  auto x = as_number(a), y = as_number(b);
  if (x && y) return *x == *y;
  // None and the void dtype both mean "not set".
  auto is_none = [](const AttrValue& v) {
    auto* t = std::get_if<DataType>(&v);
    return std::holds_alternative<std::monostate>(v) || (t && t->is_void());
  };
  if (is_none(a) && is_none(b)) return true;
  // A dtype may be given as its name.
  if (auto* s = std::get_if<std::string>(&a))
    if (auto* t = std::get_if<DataType>(&b)) return DataType::is_valid(*s) && DataType::parse(*s) == *t;
  if (auto* s = std::get_if<std::string>(&b))
    if (auto* t = std::get_if<DataType>(&a)) return DataType::is_valid(*s) && DataType::parse(*s) == *t;
  return false;
}

const std::vector<PrimExpr>* tensor_shape(const Expr& e) {
  if (!e || !e->struct_info_) return nullptr;
  if (auto* t = e->struct_info_.as<TensorStructInfoNode>()) return t->shape ? &*t->shape : nullptr;
  if (auto* s = e->struct_info_.as<ShapeStructInfoNode>()) return s->values ? &*s->values : nullptr;
  return nullptr;
}

bool shape_equal(const std::vector<PrimExpr>& a, const std::vector<PrimExpr>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!prove_equal(a[i], b[i])) return false;
  return true;
}

// The memo is a vector of (pattern, expression) in the order the matches were made: patterns are
// small, so a linear search beats hashing, and undoing a failed branch is a truncation. (A hash
// map here allocated a node per matched sub-pattern on every attempt.)
class Matcher {
 public:
  Matcher(const VarBindings* bindings, MatchList& memo) : bindings_(bindings), memo_(memo) {}
  Matcher(const BindingLookup* lookup, MatchList& memo) : bindings_(nullptr), lookup_(lookup), memo_(memo) {}

  bool run(const Pattern& p, const Expr& e) {
    memo_.clear();
    bool ok = visit(p, e);
    if (!ok) memo_.clear();
    return ok;
  }

 private:
  const Expr* memo_find(const PatternNode* p) const {
    for (const auto& [q, e] : memo_)
      if (q->get() == p) return &e;
    return nullptr;
  }

  Expr jump(const Expr& e) const {
    if (lookup_) {
      if (auto* v = e.as<VarNode>())
        if (const Expr* value = (*lookup_)(v)) return *value;
      return e;
    }
    if (bindings_ && !bindings_->empty()) {
      if (auto* v = e.as<VarNode>()) {
        auto it = bindings_->find(Var(v));
        if (it != bindings_->end()) return it->second;
      }
    }
    return e;
  }

  void rollback(size_t mark) { memo_.resize(mark); }

  bool visit(const Pattern& p, const Expr& e0) {
    if (!p) throw_error("ValueError", "dpl: undefined pattern in match");
    if (!e0) return false;
    // Variable patterns look at the variable itself; everything else at its bound value.
    bool var_kind = p->kind == PatternKind::Var || p->kind == PatternKind::DataflowVar;
    Expr e = var_kind ? e0 : jump(e0);
    if (const Expr* seen = memo_find(p.get())) return *seen == e;
    size_t mark = memo_.size();
    bool ok = dispatch(*p, e);
    if (ok) memo_.emplace_back(&p, std::move(e));
    else rollback(mark);
    return ok;
  }

  bool match_args(const std::vector<Pattern>& ps, const std::vector<Expr>& es, bool reversed) {
    size_t mark = memo_.size();
    size_t n = ps.size();
    for (size_t i = 0; i < n; ++i) {
      const Expr& e = reversed ? es[es.size() - 1 - i] : es[i];
      if (!visit(ps[i], e)) {
        rollback(mark);
        return false;
      }
    }
    return true;
  }

  bool unordered(const std::vector<Pattern>& ps, const std::vector<Expr>& es, size_t idx,
                 std::vector<bool>& used) {
    if (idx == ps.size()) return true;
    for (size_t i = 0; i < es.size(); ++i) {
      if (used[i]) continue;
      size_t mark = memo_.size();
      if (visit(ps[idx], es[i])) {
        used[i] = true;
        if (unordered(ps, es, idx + 1, used)) return true;
        used[i] = false;
      }
      rollback(mark);
    }
    return false;
  }

  bool dispatch(const PatternNode& p, const Expr& e) {
    switch (p.kind) {
      case PatternKind::Wildcard: return true;
      case PatternKind::Expr: {
        if (p.expr == e) return true;
        auto* a = p.expr.as<OpNode>();
        auto* b = e.as<OpNode>();
        if (a || b) return a && b && a->name == b->name;
        return structural_equal(p.expr, e, /*map_free_vars=*/false);
      }
      case PatternKind::Var: {
        auto* v = e.as<VarNode>();
        return v && (p.name.empty() || p.name == v->name_hint);
      }
      case PatternKind::DataflowVar: {
        auto* v = e.as<DataflowVarNode>();
        return v && (p.name.empty() || p.name == v->name_hint);
      }
      case PatternKind::GlobalVar: {
        auto* g = e.as<GlobalVarNode>();
        return g && (p.name.empty() || g->name_hint.find(p.name) != std::string::npos);
      }
      case PatternKind::ExternFunc: {
        auto* f = e.as<ExternFuncNode>();
        return f && (p.name.empty() || p.name == f->global_symbol);
      }
      case PatternKind::Constant: return e.as<ConstantNode>() != nullptr;
      case PatternKind::Call: {
        auto* call = e.as<CallNode>();
        if (!call || !visit(p.op, call->op)) return false;
        size_t np = p.args.size(), ne = call->args.size();
        if (p.varg_default_wildcard ? ne < np : ne != np) return false;
        if (match_args(p.args, call->args, false)) return true;
        // A commutative operator (OpDef::commutative) also matches with its operands swapped.
        if (ne == 2 && np == 2) {
          const op::OpDef* def = op::callee_op_def(*call);
          if (def && def->commutative) return match_args(p.args, call->args, true);
        }
        return false;
      }
      case PatternKind::Function: {
        auto* f = e.as<FunctionNode>();
        if (!f || f->params.size() != p.args.size()) return false;
        for (size_t i = 0; i < p.args.size(); ++i)
          if (!visit(p.args[i], f->params[i])) return false;
        return visit(p.inner, f->body);
      }
      case PatternKind::Tuple: {
        auto* t = e.as<TupleNode>();
        if (!t || t->fields.size() != p.args.size()) return false;
        return match_args(p.args, t->fields, false);
      }
      case PatternKind::UnorderedTuple: {
        auto* t = e.as<TupleNode>();
        if (!t || t->fields.size() != p.args.size()) return false;
        std::vector<bool> used(t->fields.size(), false);
        return unordered(p.args, t->fields, 0, used);
      }
      case PatternKind::TupleGetItem: {
        auto* t = e.as<TupleGetItemNode>();
        return t && (p.index == -1 || p.index == t->index) && visit(p.inner, t->tuple);
      }
      case PatternKind::Or: return visit(p.inner, e) || visit(p.other, e);
      case PatternKind::And: return visit(p.inner, e) && visit(p.other, e);
      case PatternKind::Not: {
        size_t mark = memo_.size();
        bool matched = visit(p.inner, e);
        rollback(mark);
        return !matched;
      }
      case PatternKind::Attr: {
        if (!visit(p.inner, e)) return false;
        if (auto* call = e.as<CallNode>()) {
          for (const auto& [k, v] : p.attrs) {
            const AttrValue* got = call->attrs ? call->attrs->find(k) : nullptr;
            if (!got || !attr_value_equal(v, *got)) return false;
          }
          return true;
        }
        if (auto* f = e.as<FunctionNode>()) {
          for (const auto& [k, v] : p.attrs) {
            auto it = f->attrs.find(k);
            if (it == f->attrs.end() || !attr_value_equal(v, it->second)) return false;
          }
          return true;
        }
        return false;
      }
      case PatternKind::DataType: {
        if (!e->struct_info_) return false;
        auto* t = e->struct_info_.as<TensorStructInfoNode>();
        return t && t->dtype == p.dtype && visit(p.inner, e);
      }
      case PatternKind::Shape: {
        auto* t = e->struct_info_ ? e->struct_info_.as<TensorStructInfoNode>() : nullptr;
        return t && t->shape && shape_equal(*t->shape, p.shape) && visit(p.inner, e);
      }
      case PatternKind::StructInfo: {
        if (!visit(p.inner, e) || !e->struct_info_) return false;
        return struct_info_base_check(p.sinfo, e->struct_info_) == BaseCheckResult::Pass;
      }
      case PatternKind::PrimArr: {
        auto* s = e.as<ShapeExprNode>();
        return s && shape_equal(s->values, p.shape);
      }
      case PatternKind::SameShapeAs: {
        if (!visit(p.inner, e)) return false;
        const auto* mine = tensor_shape(e);
        if (!mine) return false;
        for (const auto& q : p.args) {
          const Expr* other = memo_find(q.get());
          if (!other) return false;  // the other pattern must be matched first
          const auto* theirs = tensor_shape(*other);
          if (!theirs || !shape_equal(*mine, *theirs)) return false;
        }
        return true;
      }
    }
    return false;
  }

  const VarBindings* bindings_;
  const BindingLookup* lookup_ = nullptr;
  MatchList& memo_;
};

MatchMap to_map(const MatchList& list) {
  MatchMap out(list.size());
  for (const auto& [p, e] : list) out.emplace(*p, e);
  return out;
}

void collect_used_vars(const Expr& e, std::vector<Var>& out) {
  if (!e) return;
  if (auto* v = e.as<VarNode>()) {
    out.push_back(Var(v));
    return;
  }
  post_order_visit(e, [&](const Expr& x) {
    if (auto* v = x.as<VarNode>()) out.push_back(Var(v));
  });
}

}  // namespace

std::optional<MatchMap> extract_matched_expr(const Pattern& pattern, const Expr& expr,
                                             const VarBindings* bindings) {
  MatchList memo;
  if (!Matcher(bindings, memo).run(pattern, expr)) return std::nullopt;
  return to_map(memo);
}

std::optional<MatchMap> extract_matched_expr_with_lookup(const Pattern& pattern, const Expr& expr,
                                                         const BindingLookup& lookup) {
  MatchList memo;
  if (!Matcher(&lookup, memo).run(pattern, expr)) return std::nullopt;
  return to_map(memo);
}

bool match_with_lookup(const Pattern& pattern, const Expr& expr, const BindingLookup& lookup, MatchList& out) {
  return Matcher(&lookup, out).run(pattern, expr);
}

bool match_expr(const Pattern& pattern, const Expr& expr, const VarBindings* bindings) {
  MatchList memo;
  return Matcher(bindings, memo).run(pattern, expr);
}

VarBindings collect_bindings(const BindingBlock& block) {
  VarBindings out;
  for (const auto& b : block->bindings)
    if (auto* vb = b.as<VarBindingNode>()) out[vb->var] = vb->value;
  return out;
}

VarBindings collect_bindings(const Function& func) {
  VarBindings out;
  if (auto* seq = func->body.as<SeqExprNode>())
    for (const auto& block : seq->blocks)
      for (const auto& b : block->bindings)
        if (auto* vb = b.as<VarBindingNode>()) out[vb->var] = vb->value;
  return out;
}

std::optional<std::unordered_map<Pattern, Var, PatternHash>> match_graph(const PatternContext& ctx,
                                                                         const BindingBlock& block) {
  const auto& pats = ctx.patterns();
  std::unordered_map<Pattern, Var, PatternHash> result;
  if (pats.empty()) return result;
  VarBindings bindings = collect_bindings(block);
  std::vector<Var> vars;
  std::unordered_map<Var, std::vector<Var>, RefHash, RefEq> uses;  // producer -> consumers
  std::unordered_map<Var, std::vector<Var>, RefHash, RefEq> operands;
  for (const auto& b : block->bindings) {
    vars.push_back(b->var);
    std::vector<Var> used;
    collect_used_vars(binding_value(*b), used);
    for (const auto& u : used) {
      auto& list = uses[u];
      if (list.empty() || !(list.back() == b->var)) list.push_back(b->var);
    }
  }
  auto edge_holds = [&](const PatternEdge& e, const Var& prod, const Var& cons) {
    const auto& list = uses[prod];
    bool used = false;
    for (const auto& c : list) used = used || c == cons;
    if (!used) return false;
    if (e.only && list.size() != 1) return false;
    if (e.index >= 0) {
      auto* call = bindings[cons].as<CallNode>();
      if (!call || size_t(e.index) >= call->args.size() || !(call->args[e.index] == prod)) return false;
    }
    return true;
  };
  std::unordered_map<Var, bool, RefHash, RefEq> taken;
  std::function<bool(size_t)> assign = [&](size_t i) -> bool {
    if (i == pats.size()) return true;
    for (const auto& v : vars) {
      if (taken[v] || !match_expr(pats[i], v, &bindings)) continue;
      result[pats[i]] = v;
      bool ok = true;
      for (const auto& e : ctx.edges()) {
        auto p = result.find(e.producer), c = result.find(e.consumer);
        if (p != result.end() && c != result.end() && !edge_holds(e, p->second, c->second)) {
          ok = false;
          break;
        }
      }
      if (ok) {
        taken[v] = true;
        if (assign(i + 1)) return true;
        taken[v] = false;
      }
      result.erase(pats[i]);
    }
    return false;
  };
  if (!assign(0)) return std::nullopt;
  return result;
}

}  // namespace partita::dpl
