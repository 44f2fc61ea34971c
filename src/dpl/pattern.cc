// Pattern construction, duplication and printing.
#include "partita/dpl/pattern.h"

#include <sstream>
#include <unordered_map>

#include "partita/dpl/matcher.h"
#include "partita/op/registry.h"
#include "partita/support/error.h"

namespace partita::dpl {
namespace {

Pattern make_node(PatternNode node) {
  return Pattern(std::make_shared<const PatternNode>(std::move(node)));
}

PatternNode of_kind(PatternKind kind) {
  PatternNode n;
  n.kind = kind;
  return n;
}

Pattern wrap(PatternKind kind, Pattern inner) {
  PatternNode n = of_kind(kind);
  n.inner = inner ? std::move(inner) : wildcard();
  return make_node(std::move(n));
}

void check_defined(const Pattern& p, const char* what) {
  if (!p) throw_error("ValueError", std::string("dpl: ") + what + " got an undefined pattern");
}

}  // namespace

Pattern wildcard() { return make_node(of_kind(PatternKind::Wildcard)); }

Pattern is_expr(const Expr& expr) {
  if (!expr) throw_error("ValueError", "dpl: is_expr got a null expression");
  PatternNode n = of_kind(PatternKind::Expr);
  n.expr = expr;
  return make_node(std::move(n));
}

Pattern is_op(const std::string& op_name) { return is_expr(op::get_op(op_name)); }

Pattern is_const() { return make_node(of_kind(PatternKind::Constant)); }

static Pattern named(PatternKind kind, const std::string& name) {
  PatternNode n = of_kind(kind);
  n.name = name;
  return make_node(std::move(n));
}

Pattern is_var(const std::string& name) { return named(PatternKind::Var, name); }
Pattern is_dfv(const std::string& name) { return named(PatternKind::DataflowVar, name); }
Pattern is_gv(const std::string& name) { return named(PatternKind::GlobalVar, name); }
Pattern is_extern(const std::string& symbol) { return named(PatternKind::ExternFunc, symbol); }

Pattern is_tuple(std::vector<Pattern> fields, bool unordered) {
  for (const auto& f : fields) check_defined(f, "is_tuple");
  PatternNode n = of_kind(unordered ? PatternKind::UnorderedTuple : PatternKind::Tuple);
  n.args = std::move(fields);
  return make_node(std::move(n));
}

Pattern is_tuple_get_item(Pattern tuple, std::optional<int> index) {
  check_defined(tuple, "is_tuple_get_item");
  PatternNode n = of_kind(PatternKind::TupleGetItem);
  n.inner = std::move(tuple);
  n.index = index.value_or(-1);
  if (n.index < -1) throw_error("ValueError", "dpl: is_tuple_get_item index must be >= 0");
  return make_node(std::move(n));
}

Pattern is_shape(std::vector<PrimExpr> shape) {
  PatternNode n = of_kind(PatternKind::PrimArr);
  n.shape = std::move(shape);
  return make_node(std::move(n));
}

Pattern is_function(std::vector<Pattern> params, Pattern body) {
  check_defined(body, "is_function");
  PatternNode n = of_kind(PatternKind::Function);
  n.args = std::move(params);
  n.inner = std::move(body);
  return make_node(std::move(n));
}

Pattern has_dtype(DataType dtype, Pattern pattern) { return (pattern ? pattern : wildcard()).has_dtype(dtype); }
Pattern has_shape(std::vector<PrimExpr> shape, Pattern pattern) {
  return (pattern ? pattern : wildcard()).has_shape(std::move(shape));
}
Pattern has_attr(std::map<std::string, AttrValue> attrs, Pattern pattern) {
  return (pattern ? pattern : wildcard()).has_attr(std::move(attrs));
}
Pattern reject(Pattern pattern) {
  check_defined(pattern, "reject");
  return ~pattern;
}

Pattern make_call(Pattern op, std::vector<Pattern> args, bool varg_default_wildcard) {
  check_defined(op, "call pattern op");
  for (const auto& a : args) check_defined(a, "call pattern argument");
  PatternNode n = of_kind(PatternKind::Call);
  n.op = std::move(op);
  n.args = std::move(args);
  n.varg_default_wildcard = varg_default_wildcard;
  return make_node(std::move(n));
}

Pattern make_fused_bias_activation_pattern(const std::string& op_name, bool with_bias,
                                           const std::optional<std::string>& activation) {
  Pattern out = is_op(op_name)({wildcard(), wildcard()});
  if (with_bias) out = is_op("relax.add")({out, wildcard()});
  if (activation && !activation->empty()) return is_op(*activation)({out});
  return out;
}

Pattern with_bias_and_residual(Pattern p, bool with_bias, bool with_residual, std::string& name) {
  if (with_bias) {
    p = is_op("relax.add")({p, wildcard()});
    name += "_bias";
  }
  if (with_residual) {
    p = is_op("relax.add")({p, wildcard()});
    name += "_add";
  }
  return p;
}

// ---- member builders ----

Pattern Pattern::operator()(std::vector<Pattern> args, bool varg_default_wildcard) const {
  return make_call(*this, std::move(args), varg_default_wildcard);
}

Pattern Pattern::operator|(const Pattern& other) const {
  check_defined(*this, "|");
  check_defined(other, "|");
  PatternNode n = of_kind(PatternKind::Or);
  n.inner = *this;
  n.other = other;
  return make_node(std::move(n));
}

Pattern Pattern::operator&(const Pattern& other) const {
  check_defined(*this, "&");
  check_defined(other, "&");
  PatternNode n = of_kind(PatternKind::And);
  n.inner = *this;
  n.other = other;
  return make_node(std::move(n));
}

Pattern Pattern::operator~() const {
  check_defined(*this, "reject");
  return wrap(PatternKind::Not, *this);
}

Pattern Pattern::has_attr(std::map<std::string, AttrValue> attrs) const {
  PatternNode n = of_kind(PatternKind::Attr);
  n.inner = *this;
  n.attrs = std::move(attrs);
  return make_node(std::move(n));
}

Pattern Pattern::has_dtype(DataType dtype) const {
  PatternNode n = of_kind(PatternKind::DataType);
  n.inner = *this;
  n.dtype = dtype;
  return make_node(std::move(n));
}

Pattern Pattern::has_shape(std::vector<PrimExpr> shape) const {
  PatternNode n = of_kind(PatternKind::Shape);
  n.inner = *this;
  n.shape = std::move(shape);
  return make_node(std::move(n));
}

Pattern Pattern::has_struct_info(StructInfo sinfo) const {
  if (!sinfo) throw_error("ValueError", "dpl: has_struct_info got null struct info");
  PatternNode n = of_kind(PatternKind::StructInfo);
  n.inner = *this;
  n.sinfo = std::move(sinfo);
  return make_node(std::move(n));
}

Pattern Pattern::same_shape_as(std::vector<Pattern> others) const {
  for (const auto& o : others) check_defined(o, "same_shape_as");
  PatternNode n = of_kind(PatternKind::SameShapeAs);
  n.inner = *this;
  n.args = std::move(others);
  return make_node(std::move(n));
}

namespace {
// Deep copy preserving sharing inside the pattern (a sub-pattern used twice stays one node).
Pattern dup_rec(const Pattern& p, std::unordered_map<const PatternNode*, Pattern>& memo) {
  if (!p) return p;
  if (auto it = memo.find(p.get()); it != memo.end()) return it->second;
  PatternNode n = *p;
  n.op = dup_rec(n.op, memo);
  for (auto& a : n.args) a = dup_rec(a, memo);
  n.inner = dup_rec(n.inner, memo);
  n.other = dup_rec(n.other, memo);
  Pattern out = make_node(std::move(n));
  memo.emplace(p.get(), out);
  return out;
}
}  // namespace

Pattern Pattern::dup() const {
  std::unordered_map<const PatternNode*, Pattern> memo;
  return dup_rec(*this, memo);
}

bool Pattern::match(const Expr& expr) const { return match_expr(*this, expr); }

namespace {
void print_list(std::ostream& os, const std::vector<Pattern>& ps) {
  for (size_t i = 0; i < ps.size(); ++i) os << (i ? ", " : "") << ps[i].str();
}
void print_shape(std::ostream& os, const std::vector<PrimExpr>& shape) {
  os << "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    os << (i ? ", " : "") << prim_expr_str(shape[i]);
  }
  os << "]";
}
}  // namespace

std::string Pattern::str() const {
  if (!node_) return "<undefined>";
  std::ostringstream os;
  const PatternNode& n = *node_;
  switch (n.kind) {
    case PatternKind::Wildcard: os << "*"; break;
    case PatternKind::Expr:
      if (auto* op = n.expr.as<OpNode>()) os << op->name;
      else os << "Expr(" << node_kind_name(n.expr->kind()) << ")";
      break;
    case PatternKind::Var: os << "Var(" << n.name << ")"; break;
    case PatternKind::DataflowVar: os << "DataflowVar(" << n.name << ")"; break;
    case PatternKind::GlobalVar: os << "GlobalVar(" << n.name << ")"; break;
    case PatternKind::ExternFunc: os << "ExternFunc(" << n.name << ")"; break;
    case PatternKind::Constant: os << "Constant()"; break;
    case PatternKind::Call:
      os << n.op.str() << "(";
      print_list(os, n.args);
      if (n.varg_default_wildcard) os << (n.args.empty() ? "..." : ", ...");
      os << ")";
      break;
    case PatternKind::Function: os << "Function(["; print_list(os, n.args); os << "], " << n.inner.str() << ")"; break;
    case PatternKind::Tuple: os << "("; print_list(os, n.args); os << ")"; break;
    case PatternKind::UnorderedTuple: os << "Unordered("; print_list(os, n.args); os << ")"; break;
    case PatternKind::TupleGetItem:
      os << n.inner.str() << "[";
      if (n.index >= 0) os << n.index; else os << "*";
      os << "]";
      break;
    case PatternKind::Or: os << "(" << n.inner.str() << " | " << n.other.str() << ")"; break;
    case PatternKind::And: os << "(" << n.inner.str() << " & " << n.other.str() << ")"; break;
    case PatternKind::Not: os << "~" << n.inner.str(); break;
    case PatternKind::Attr: os << n.inner.str() << ".has_attr(" << n.attrs.size() << " attrs)"; break;
    case PatternKind::DataType: os << n.inner.str() << ".has_dtype(" << n.dtype.str() << ")"; break;
    case PatternKind::Shape: os << n.inner.str() << ".has_shape("; print_shape(os, n.shape); os << ")"; break;
    case PatternKind::StructInfo: os << n.inner.str() << ".has_struct_info(...)"; break;
    case PatternKind::PrimArr: os << "Shape"; print_shape(os, n.shape); break;
    case PatternKind::SameShapeAs: os << n.inner.str() << ".same_shape_as("; print_list(os, n.args); os << ")"; break;
  }
  return os.str();
}

// ---- PatternSeq / PatternContext ----

PatternSeq::PatternSeq(std::vector<Pattern> patterns, bool only_used_by) : patterns_(std::move(patterns)) {
  for (const auto& p : patterns_) check_defined(p, "PatternSeq");
  for (size_t i = 0; i + 1 < patterns_.size(); ++i)
    edges_.push_back({patterns_[i], patterns_[i + 1], only_used_by, -1});
}

PatternSeq PatternSeq::join(const PatternSeq& other, bool only, int index) const {
  if (patterns_.empty() || other.patterns_.empty())
    throw_error("ValueError", "dpl: used_by/only_used_by needs non-empty pattern sequences");
  PatternSeq out = *this;
  out.edges_.push_back({patterns_.back(), other.patterns_.front(), only, index});
  out.patterns_.insert(out.patterns_.end(), other.patterns_.begin(), other.patterns_.end());
  out.edges_.insert(out.edges_.end(), other.edges_.begin(), other.edges_.end());
  return out;
}

PatternSeq PatternSeq::used_by(const Pattern& other, int index) const { return join(PatternSeq({other}), false, index); }
PatternSeq PatternSeq::used_by(const PatternSeq& other, int index) const { return join(other, false, index); }
PatternSeq PatternSeq::only_used_by(const Pattern& other, int index) const { return join(PatternSeq({other}), true, index); }
PatternSeq PatternSeq::only_used_by(const PatternSeq& other, int index) const { return join(other, true, index); }

PatternSeq PatternSeq::dup() const {
  std::unordered_map<const PatternNode*, Pattern> memo;
  PatternSeq out;
  for (const auto& p : patterns_) out.patterns_.push_back(dup_rec(p, memo));
  for (const auto& e : edges_)
    out.edges_.push_back({dup_rec(e.producer, memo), dup_rec(e.consumer, memo), e.only, e.index});
  return out;
}

PatternSeq used_by(const Pattern& producer, const Pattern& consumer, int index) {
  return PatternSeq({producer}).used_by(consumer, index);
}
PatternSeq only_used_by(const Pattern& producer, const Pattern& consumer, int index) {
  return PatternSeq({producer}).only_used_by(consumer, index);
}

void PatternContext::add(const Pattern& pattern) {
  check_defined(pattern, "PatternContext::add");
  for (const auto& p : patterns_)
    if (p == pattern) return;
  patterns_.push_back(pattern);
}

void PatternContext::add(const PatternSeq& seq) {
  for (const auto& p : seq.patterns()) add(p);
  edges_.insert(edges_.end(), seq.edges().begin(), seq.edges().end());
}

}  // namespace partita::dpl
