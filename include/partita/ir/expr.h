// Relax-shaped expressions, bindings and blocks.
//
// Every expression carries `struct_info_` (filled in by the BlockBuilder's normalizer; null until
// then). Nodes are immutable once shared: passes build new nodes instead of editing old ones.
#pragma once

#include <string>
#include <vector>

#include "partita/ir/attrs.h"
#include "partita/ir/struct_info.h"
#include "partita/runtime/tensor.h"

namespace partita {

class ExprNode : public Object {
 public:
  using Object::Object;
  ExprNode(const ExprNode&) = default;
  /// What is known about the value; set once by normalization (hence mutable, as in TVM).
  mutable StructInfo struct_info_;
  static bool classof(NodeKind k) { return k >= NodeKind::Var && k <= NodeKind::If; }
};
using Expr = Ref<ExprNode>;

class VarNode : public ExprNode {
 public:
  static constexpr NodeKind kKind = NodeKind::Var;
  static bool classof(NodeKind k) { return k == NodeKind::Var || k == NodeKind::DataflowVar; }
  VarNode(std::string name_hint, StructInfo sinfo) : VarNode(kKind, std::move(name_hint), std::move(sinfo)) {}
  std::string name_hint;
  static constexpr auto declared_fields() {
    return std::make_tuple(field("struct_info", &VarNode::struct_info_));
  }

 protected:
  VarNode(NodeKind kind, std::string name_hint, StructInfo sinfo) : ExprNode(kind), name_hint(std::move(name_hint)) {
    struct_info_ = std::move(sinfo);
  }
};
using Var = Ref<VarNode>;

/// A variable local to a dataflow block; it may not be used outside it.
class DataflowVarNode : public VarNode {
 public:
  PARTITA_NODE(DataflowVar)
  DataflowVarNode(std::string name_hint, StructInfo sinfo) : VarNode(kKind, std::move(name_hint), std::move(sinfo)) {}
};
using DataflowVar = Ref<DataflowVarNode>;

class ConstantNode : public ExprNode {
 public:
  PARTITA_NODE(Constant)
  explicit ConstantNode(Tensor data) : ExprNode(kKind), data(std::move(data)) {}
  Tensor data;
  static constexpr auto declared_fields() { return std::make_tuple(field("data", &ConstantNode::data)); }
};
using Constant = Ref<ConstantNode>;

class PrimValueNode : public ExprNode {
 public:
  PARTITA_NODE(PrimValue)
  explicit PrimValueNode(PrimExpr value) : ExprNode(kKind), value(std::move(value)) {}
  PrimExpr value;
  static constexpr auto declared_fields() { return std::make_tuple(field("value", &PrimValueNode::value)); }
};
using PrimValue = Ref<PrimValueNode>;

class StringImmNode : public ExprNode {
 public:
  PARTITA_NODE(StringImm)
  explicit StringImmNode(std::string value) : ExprNode(kKind), value(std::move(value)) {}
  std::string value;
  static constexpr auto declared_fields() { return std::make_tuple(field("value", &StringImmNode::value)); }
};
using StringImm = Ref<StringImmNode>;

class DataTypeImmNode : public ExprNode {
 public:
  PARTITA_NODE(DataTypeImm)
  explicit DataTypeImmNode(DataType value) : ExprNode(kKind), value(value) {}
  DataType value;
  static constexpr auto declared_fields() { return std::make_tuple(field("value", &DataTypeImmNode::value)); }
};
using DataTypeImm = Ref<DataTypeImmNode>;

/// A shape value, printed R.shape([1, n]).
class ShapeExprNode : public ExprNode {
 public:
  PARTITA_NODE(ShapeExpr)
  explicit ShapeExprNode(std::vector<PrimExpr> values) : ExprNode(kKind), values(std::move(values)) {}
  std::vector<PrimExpr> values;
  static constexpr auto declared_fields() { return std::make_tuple(field("values", &ShapeExprNode::values)); }
};
using ShapeExpr = Ref<ShapeExprNode>;

class TupleNode : public ExprNode {
 public:
  PARTITA_NODE(Tuple)
  explicit TupleNode(std::vector<Expr> fields) : ExprNode(kKind), fields(std::move(fields)) {}
  std::vector<Expr> fields;
  static constexpr auto declared_fields() { return std::make_tuple(field("fields", &TupleNode::fields)); }
};
using Tuple = Ref<TupleNode>;

class TupleGetItemNode : public ExprNode {
 public:
  PARTITA_NODE(TupleGetItem)
  TupleGetItemNode(Expr tuple, int index) : ExprNode(kKind), tuple(std::move(tuple)), index(index) {}
  Expr tuple;
  int index;
  static constexpr auto declared_fields() {
    return std::make_tuple(field("tuple", &TupleGetItemNode::tuple), field("index", &TupleGetItemNode::index));
  }
};
using TupleGetItem = Ref<TupleGetItemNode>;

/// A call of an operator (Op), a function (GlobalVar, Var, ExternFunc).
class CallNode : public ExprNode {
 public:
  PARTITA_NODE(Call)
  CallNode(Expr op, std::vector<Expr> args, Attrs attrs = {}, std::vector<StructInfo> sinfo_args = {})
      : ExprNode(kKind), op(std::move(op)), args(std::move(args)), attrs(std::move(attrs)),
        sinfo_args(std::move(sinfo_args)) {}
  Expr op;
  std::vector<Expr> args;
  Attrs attrs;  // may be null
  std::vector<StructInfo> sinfo_args;
  static constexpr auto declared_fields() {
    return std::make_tuple(field("op", &CallNode::op), field("args", &CallNode::args),
                           field("attrs", &CallNode::attrs), field("sinfo_args", &CallNode::sinfo_args));
  }
};
using Call = Ref<CallNode>;

/// The attribute `name` of `call` when it has one of type V, else nullptr (no attributes, no such
/// attribute, or another type): the optional read of attribute values that pass checks use.
template <class V>
const V* call_attr(const CallNode& call, const std::string& name) {
  const AttrValue* v = call.attrs ? call.attrs->find(name) : nullptr;
  return v ? std::get_if<V>(v) : nullptr;
}

class BindingBlockNode;
using BindingBlock = Ref<BindingBlockNode>;

/// A sequence of binding blocks followed by a result expression.
class SeqExprNode : public ExprNode {
 public:
  PARTITA_NODE(SeqExpr)
  SeqExprNode(std::vector<BindingBlock> blocks, Expr body);
  std::vector<BindingBlock> blocks;
  Expr body;
  static constexpr auto declared_fields();
};
using SeqExpr = Ref<SeqExprNode>;

class FunctionNode : public ExprNode {
 public:
  PARTITA_NODE(Function)
  FunctionNode(std::vector<Var> params, Expr body, StructInfo ret_struct_info, bool is_pure = true,
               DictAttrs attrs = {})
      : ExprNode(kKind), params(std::move(params)), body(std::move(body)),
        ret_struct_info(std::move(ret_struct_info)), is_pure(is_pure), attrs(std::move(attrs)) {}
  std::vector<Var> params;
  Expr body;  // a SeqExpr after normalization
  StructInfo ret_struct_info;
  bool is_pure;
  DictAttrs attrs;

  /// The string attribute `key`, if present.
  std::optional<std::string> attr_string(const std::string& key) const;

  static constexpr auto declared_fields() {
    return std::make_tuple(field("params", &FunctionNode::params), field("body", &FunctionNode::body),
                           field("ret_struct_info", &FunctionNode::ret_struct_info),
                           field("is_pure", &FunctionNode::is_pure), field("attrs", &FunctionNode::attrs));
  }
};
using Function = Ref<FunctionNode>;

/// A function provided outside the module (by a runtime module or the host), by symbol.
class ExternFuncNode : public ExprNode {
 public:
  PARTITA_NODE(ExternFunc)
  explicit ExternFuncNode(std::string global_symbol) : ExprNode(kKind), global_symbol(std::move(global_symbol)) {}
  std::string global_symbol;
  static constexpr auto declared_fields() { return std::make_tuple(field("global_symbol", &ExternFuncNode::global_symbol)); }
};
using ExternFunc = Ref<ExternFuncNode>;

/// The name of a function in an IRModule. Compared by name.
class GlobalVarNode : public ExprNode {
 public:
  PARTITA_NODE(GlobalVar)
  explicit GlobalVarNode(std::string name_hint) : ExprNode(kKind), name_hint(std::move(name_hint)) {}
  std::string name_hint;
  static constexpr auto declared_fields() { return std::make_tuple(field("name_hint", &GlobalVarNode::name_hint)); }
};
using GlobalVar = Ref<GlobalVarNode>;

/// A registered operator, e.g. "relax.nn.conv2d". Obtain with `get_op(name)` (op/registry.h).
class OpNode : public ExprNode {
 public:
  PARTITA_NODE(Op)
  explicit OpNode(std::string name) : ExprNode(kKind), name(std::move(name)) {}
  std::string name;
  static constexpr auto declared_fields() { return std::make_tuple(field("name", &OpNode::name)); }
};
using Op = Ref<OpNode>;

class IfNode : public ExprNode {
 public:
  PARTITA_NODE(If)
  IfNode(Expr cond, Expr true_branch, Expr false_branch)
      : ExprNode(kKind), cond(std::move(cond)), true_branch(std::move(true_branch)),
        false_branch(std::move(false_branch)) {}
  Expr cond, true_branch, false_branch;  // branches are SeqExprs after normalization
  static constexpr auto declared_fields() {
    return std::make_tuple(field("cond", &IfNode::cond), field("true_branch", &IfNode::true_branch),
                           field("false_branch", &IfNode::false_branch));
  }
};
using If = Ref<IfNode>;

// ---- bindings and blocks ----

class BindingNode : public Object {
 public:
  BindingNode(NodeKind kind, Var var) : Object(kind), var(std::move(var)) {}
  Var var;
  static bool classof(NodeKind k) { return k == NodeKind::VarBinding || k == NodeKind::MatchCast; }
};
using Binding = Ref<BindingNode>;

/// `var = value`
class VarBindingNode : public BindingNode {
 public:
  PARTITA_NODE(VarBinding)
  VarBindingNode(Var var, Expr value) : BindingNode(kKind, std::move(var)), value(std::move(value)) {}
  Expr value;
  static constexpr auto declared_fields() {
    return std::make_tuple(field("value", &VarBindingNode::value), field("var", &VarBindingNode::var));
  }
};
using VarBinding = Ref<VarBindingNode>;

/// `var = R.match_cast(value, struct_info)`: checks at run time and refines what is known.
class MatchCastNode : public BindingNode {
 public:
  PARTITA_NODE(MatchCast)
  MatchCastNode(Var var, Expr value, StructInfo struct_info)
      : BindingNode(kKind, std::move(var)), value(std::move(value)), struct_info(std::move(struct_info)) {}
  Expr value;
  StructInfo struct_info;
  static constexpr auto declared_fields() {
    return std::make_tuple(field("value", &MatchCastNode::value), field("struct_info", &MatchCastNode::struct_info),
                           field("var", &MatchCastNode::var));
  }
};
using MatchCast = Ref<MatchCastNode>;

/// A block of bindings; a dataflow block (`with R.dataflow():`) when `is_dataflow`.
class BindingBlockNode : public Object {
 public:
  PARTITA_NODE(BindingBlock)
  BindingBlockNode(std::vector<Binding> bindings, bool is_dataflow)
      : Object(kKind), bindings(std::move(bindings)), is_dataflow(is_dataflow) {}
  std::vector<Binding> bindings;
  bool is_dataflow;
  static constexpr auto declared_fields() {
    return std::make_tuple(field("is_dataflow", &BindingBlockNode::is_dataflow),
                           field("bindings", &BindingBlockNode::bindings));
  }
};

inline SeqExprNode::SeqExprNode(std::vector<BindingBlock> blocks, Expr body)
    : ExprNode(kKind), blocks(std::move(blocks)), body(std::move(body)) {}
constexpr auto SeqExprNode::declared_fields() {
  return std::make_tuple(field("blocks", &SeqExprNode::blocks), field("body", &SeqExprNode::body));
}

/// The value bound by a binding (VarBinding::value or MatchCast::value).
const Expr& binding_value(const BindingNode& b);

}  // namespace partita
