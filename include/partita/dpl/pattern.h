// The dataflow pattern language (TVM Relax's relax.dpl): patterns describe expressions to find
// in a dataflow block; the matcher (dpl/matcher.h) finds them, following variable bindings.
//
// A `Pattern` is a cheap, shared, immutable handle; its identity (not its structure) is what the
// matcher reports matches for, so two calls of `wildcard()` are two different patterns.
//
//   Pattern p = is_op("relax.nn.relu")(is_op("relax.nn.conv2d")(wildcard(), wildcard()));
//   Pattern q = p | is_op("relax.nn.gelu")(wildcard());
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "partita/ir/expr.h"

namespace partita::dpl {

enum class PatternKind : uint8_t {
  Wildcard,        // anything
  Expr,            // an expression structurally equal to `expr` (an Op compares by name)
  Var,             // a (non-bound-through) Var, optionally with a given name
  DataflowVar,     // a DataflowVar, optionally with a given name
  GlobalVar,       // a GlobalVar whose name contains `name`
  ExternFunc,      // an ExternFunc with `name` (any when empty)
  Constant,        // a Constant
  Call,            // op(args...); `varg_default_wildcard` lets extra arguments match anything
  Function,        // a function whose params / body match
  Tuple,           // a tuple with fields matching in order
  UnorderedTuple,  // a tuple whose fields match the patterns in some order
  TupleGetItem,    // tuple[index]; index -1 = any index
  Or,              // left | right
  And,             // left & right
  Not,             // does not match `reject`
  Attr,            // `inner` with call attributes / function attributes equal to `attrs`
  DataType,        // `inner` whose tensor dtype is `dtype`
  Shape,           // `inner` whose tensor shape equals `shape`
  StructInfo,      // `inner` whose struct info fits `sinfo`
  PrimArr,         // a ShapeExpr with values `shape` (is_shape)
  SameShapeAs,     // `inner` with the same tensor shape as what `args` matched
};

struct PatternNode;

class Pattern {
 public:
  Pattern() = default;
  explicit Pattern(std::shared_ptr<const PatternNode> node) : node_(std::move(node)) {}

  const PatternNode* get() const { return node_.get(); }
  const PatternNode* operator->() const { return node_.get(); }
  const PatternNode& operator*() const { return *node_; }
  bool defined() const { return node_ != nullptr; }
  explicit operator bool() const { return defined(); }
  friend bool operator==(const Pattern& a, const Pattern& b) { return a.node_ == b.node_; }

  /// A call of this pattern with `args` (TVM's `pattern(*args)`).
  Pattern operator()(std::vector<Pattern> args, bool varg_default_wildcard = false) const;
  Pattern operator|(const Pattern& other) const;
  Pattern operator&(const Pattern& other) const;
  Pattern operator~() const;
  Pattern has_attr(std::map<std::string, AttrValue> attrs) const;
  Pattern has_dtype(DataType dtype) const;
  Pattern has_dtype(const std::string& dtype) const { return has_dtype(DataType::parse(dtype)); }
  Pattern has_shape(std::vector<PrimExpr> shape) const;
  Pattern has_struct_info(StructInfo sinfo) const;
  /// Matches only what also has the tensor shape of what each of `others` matched.
  Pattern same_shape_as(std::vector<Pattern> others) const;
  /// A copy with a new identity (and copies of every sub-pattern).
  Pattern dup() const;
  /// True when this pattern matches `expr` (no bindings followed).
  bool match(const partita::Expr& expr) const;
  /// A readable rendering, e.g. `relax.nn.relu(*)`.
  std::string str() const;

 private:
  std::shared_ptr<const PatternNode> node_;
};

struct PatternHash {
  size_t operator()(const Pattern& p) const { return std::hash<const void*>()(p.get()); }
};

struct PatternNode {
  PatternKind kind = PatternKind::Wildcard;
  partita::Expr expr;               // Expr
  std::string name;                 // Var, DataflowVar, GlobalVar, ExternFunc
  Pattern op;                       // Call
  std::vector<Pattern> args;        // Call args, Tuple fields, Function params, SameShapeAs
  bool varg_default_wildcard = false;
  Pattern inner;                    // Attr, DataType, Shape, StructInfo, SameShapeAs, Function body,
                                    // TupleGetItem tuple, Not reject, Or/And left
  Pattern other;                    // Or/And right
  int index = -1;                   // TupleGetItem
  std::map<std::string, AttrValue> attrs;  // Attr
  DataType dtype;                   // DataType
  std::vector<PrimExpr> shape;      // Shape, PrimArr
  partita::StructInfo sinfo;        // StructInfo
};

// ---- constructors (TVM's relax.dpl.pattern functions) ----
Pattern wildcard();
Pattern is_op(const std::string& op_name);
Pattern is_expr(const partita::Expr& expr);
Pattern is_const();
Pattern is_var(const std::string& name = "");
Pattern is_dfv(const std::string& name = "");
Pattern is_gv(const std::string& name = "");
Pattern is_extern(const std::string& symbol = "");
Pattern is_tuple(std::vector<Pattern> fields, bool unordered = false);
Pattern is_tuple_get_item(Pattern tuple, std::optional<int> index = std::nullopt);
Pattern is_shape(std::vector<PrimExpr> shape);
Pattern is_function(std::vector<Pattern> params, Pattern body);
Pattern has_dtype(DataType dtype, Pattern pattern = {});
Pattern has_shape(std::vector<PrimExpr> shape, Pattern pattern = {});
Pattern has_attr(std::map<std::string, AttrValue> attrs, Pattern pattern = {});
Pattern reject(Pattern pattern);
Pattern make_call(Pattern op, std::vector<Pattern> args, bool varg_default_wildcard = false);
/// `op_name(lhs, rhs)`, then `relax.add(_, bias)` when `with_bias`, then `activation(_)` when an
/// activation is named (TVM's make_fused_bias_activation_pattern).
Pattern make_fused_bias_activation_pattern(const std::string& op_name, bool with_bias = false,
                                           const std::optional<std::string>& activation = {});
/// `p`, then `relax.add(_, bias)` when `with_bias`, then `relax.add(_, residual)` when
/// `with_residual` (any other operand each); appends "_bias" and "_add" to `name` for them: the
/// epilogue chains of the BYOC tables' conv2d and matmul patterns.
Pattern with_bias_and_residual(Pattern p, bool with_bias, bool with_residual, std::string& name);

// ---- graph-level constraints (used_by / only_used_by, PatternSeq) ----

/// An edge between two patterns: `consumer` uses what `producer` matched (as argument `index`
/// when index >= 0); with `only`, that use is the producer's only use.
struct PatternEdge {
  Pattern producer;
  Pattern consumer;
  bool only = false;
  int index = -1;
};

/// A chain of patterns joined by used_by (`>>` in TVM) / only_used_by (`^`) edges.
class PatternSeq {
 public:
  PatternSeq() = default;
  explicit PatternSeq(std::vector<Pattern> patterns, bool only_used_by = false);
  const std::vector<Pattern>& patterns() const { return patterns_; }
  const std::vector<PatternEdge>& edges() const { return edges_; }
  PatternSeq used_by(const Pattern& other, int index = -1) const;
  PatternSeq used_by(const PatternSeq& other, int index = -1) const;
  PatternSeq only_used_by(const Pattern& other, int index = -1) const;
  PatternSeq only_used_by(const PatternSeq& other, int index = -1) const;
  PatternSeq dup() const;

 private:
  PatternSeq join(const PatternSeq& other, bool only, int index) const;
  std::vector<Pattern> patterns_;
  std::vector<PatternEdge> edges_;
};

PatternSeq used_by(const Pattern& producer, const Pattern& consumer, int index = -1);
PatternSeq only_used_by(const Pattern& producer, const Pattern& consumer, int index = -1);

/// A set of patterns and edges to match together against one dataflow block (TVM's
/// PatternContext): add sequences, then call match_graph (dpl/matcher.h).
class PatternContext {
 public:
  void add(const PatternSeq& seq);
  void add(const Pattern& pattern);
  const std::vector<Pattern>& patterns() const { return patterns_; }
  const std::vector<PatternEdge>& edges() const { return edges_; }

 private:
  std::vector<Pattern> patterns_;
  std::vector<PatternEdge> edges_;
};

}  // namespace partita::dpl
