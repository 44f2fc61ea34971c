// Reading a fused function, indices and values, outputs, and putting the kernel together.
#include "kernel_emitter.h"

#include <cctype>
#include <set>

#include "../cuda_codegen.h"
#include "call_attrs.h"
#include "cuda_types.h"
#include "op_support.h"
#include "partita/ir/analysis.h"
#include "partita/runtime/half.h"
#include "partita/transform/fuse_ops_by_kind.h"

namespace partita::backend::cuda {

// ---------------------------------------------------------------------------------------------
// CodeWriter
// ---------------------------------------------------------------------------------------------

void CodeWriter::line(const std::string& s) {
  for (int i = 0; i < indent_; ++i) out_ << "  ";
  out_ << s << "\n";
}

void CodeWriter::open(const std::string& head) {
  line(head + " {");
  ++indent_;
  memo_.emplace_back();
}

void CodeWriter::close(const std::string& tail) {
  memo_.pop_back();
  --indent_;
  line(tail);
}

void CodeWriter::reopen(const std::string& middle) {
  memo_.pop_back();
  --indent_;
  line(middle);
  ++indent_;
  memo_.emplace_back();
}

const std::string* CodeWriter::find(const std::string& key) const {
  for (auto it = memo_.rbegin(); it != memo_.rend(); ++it) {
    auto hit = it->find(key);
    if (hit != it->end()) return &hit->second;
  }
  return nullptr;
}

// ---------------------------------------------------------------------------------------------
// Reading the function
// ---------------------------------------------------------------------------------------------

namespace {

bool is_identifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

bool is_number(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

const std::set<std::string>& reduce_ops() {
  static const std::set<std::string> ops = {"relax.sum", "relax.mean", "relax.max", "relax.min", "relax.variance",
                                            "relax.prod"};
  return ops;
}

const std::set<std::string>& row_ops() {
  static const std::set<std::string> ops = {"relax.nn.softmax", "relax.nn.log_softmax", "relax.nn.layer_norm"};
  return ops;
}

}  // namespace

KernelEmitter::KernelEmitter(const codegen::CodegenFunction& f, codegen::ConstantNamer& namer,
                             std::vector<std::string>& const_names, int sm, GemmTuning tuning)
    : f_(f), namer_(namer), const_names_(const_names), w_(std::make_unique<CodeWriter>()), sm_(sm),
      tuning_(tuning) {}

void KernelEmitter::fail(const std::string& why) const { throw codegen::UnsupportedFunction(f_.symbol, why); }

int KernelEmitter::value_of(const Expr& e) {
  if (auto* v = e.as<VarNode>()) {
    auto it = var_value_.find(v);
    if (it == var_value_.end()) fail("variable '" + v->name_hint + "' is not a tensor computed here");
    return it->second;
  }
  auto it = leaf_value_.find(e.get());
  if (it != leaf_value_.end()) return it->second;
  KValue kv;
  if (auto* c = e.as<ConstantNode>()) {
    if (!dtype_supported(c->data.dtype())) fail("a constant has dtype " + c->data.dtype().str());
    kv.kind = KValue::Const;
    kv.constant = c;
    kv.dtype = c->data.dtype();
    for (int64_t d : c->data.shape()) kv.shape.push_back(int_imm(d));
    kv.name = "a constant";
  } else if (auto* p = e.as<PrimValueNode>()) {
    kv.kind = KValue::Prim;
    kv.prim = p->value;
    kv.dtype = p->value->dtype;
    kv.name = "a scalar";
    if (!dtype_supported(kv.dtype)) fail("a scalar operand has dtype " + kv.dtype.str());
  } else {
    fail(std::string("an operand is a ") + node_kind_name(e->kind()));
  }
  values_.push_back(std::move(kv));
  int id = int(values_.size() - 1);
  leaf_value_[e.get()] = id;
  return id;
}

namespace {

const TensorStructInfoNode* known_tensor(const StructInfo& s) {
  auto* t = s ? s.as<TensorStructInfoNode>() : nullptr;
  if (!t || !t->shape || t->dtype.is_void()) return nullptr;
  return t;
}

}  // namespace

void KernelEmitter::read_function() {
  const Function& fn = f_.func;
  // Parameters: a tensor is one kernel input; a tuple of tensors is one input per field (the VM
  // passes tuple arguments flattened).
  auto add_input = [&](const StructInfo& s, const std::string& name) {
    const TensorStructInfoNode* t = known_tensor(s);
    if (!t) fail(name + " is not a tensor of known shape and dtype");
    if (!dtype_supported(t->dtype)) fail(name + " has dtype " + t->dtype.str());
    KValue kv;
    kv.kind = KValue::Param;
    kv.param = int(inputs_.size());
    kv.dtype = t->dtype;
    kv.shape = *t->shape;
    kv.name = name;
    inputs_.push_back(t);
    values_.push_back(std::move(kv));
    return int(values_.size() - 1);
  };
  for (const Var& p : fn->params) {
    if (auto* tup = p->struct_info_ ? p->struct_info_.as<TupleStructInfoNode>() : nullptr) {
      std::vector<int> ids;
      for (size_t k = 0; k < tup->fields.size(); ++k)
        ids.push_back(add_input(tup->fields[k], "field " + std::to_string(k) + " of parameter '" + p->name_hint + "'"));
      tuple_value_[p.get()] = std::move(ids);
      continue;
    }
    var_value_[p.get()] = add_input(p->struct_info_, "parameter '" + p->name_hint + "'");
  }
  auto* seq = fn->body.as<SeqExprNode>();
  if (!seq) fail("its body is not normalized");
  // Tensor operands of a call in order, the fields of tuple arguments (concat) flattened.
  auto operands_of = [&](const CallNode& call) {
    std::vector<int> ops;
    for (const auto& a : call.args) {
      if (auto* t = a.as<TupleNode>()) {
        for (const auto& f : t->fields) ops.push_back(value_of(f));
      } else if (auto* v = a.as<VarNode>(); v && tuple_value_.count(v)) {
        for (int id : tuple_value_[v]) ops.push_back(id);
      } else if (a.as<VarNode>() || a.as<ConstantNode>()) {
        ops.push_back(value_of(a));
      } else if (a.as<PrimValueNode>() && op_takes_scalar_operands(call.op.as<OpNode>()->name)) {
        ops.push_back(value_of(a));
      }
    }
    return ops;
  };
  std::unordered_map<const VarNode*, int> tuple_ops;  // tuple-valued op bindings
  for (const auto& block : seq->blocks) {
    for (const auto& b : block->bindings) {
      auto* vb = b.as<VarBindingNode>();
      if (!vb) fail("match_cast is not supported");
      const VarNode* var = vb->var.get();
      const Expr& value = vb->value;
      if (value.as<VarNode>() || value.as<ConstantNode>()) {
        auto* src = value.as<VarNode>();
        if (src && tuple_value_.count(src)) {
          tuple_value_[var] = tuple_value_[src];
          continue;
        }
        var_value_[var] = value_of(value);
        continue;
      }
      if (auto* tup = value.as<TupleNode>()) {
        std::vector<int> ids;
        for (const auto& f : tup->fields) ids.push_back(value_of(f));
        tuple_value_[var] = std::move(ids);
        continue;
      }
      if (auto* get = value.as<TupleGetItemNode>()) {
        auto* tv = get->tuple.as<VarNode>();
        if (tv && tuple_value_.count(tv)) {
          const auto& ids = tuple_value_[tv];
          if (get->index < 0 || size_t(get->index) >= ids.size()) fail("a tuple index is out of range");
          var_value_[var] = ids[size_t(get->index)];
          continue;
        }
        auto it = tv ? tuple_ops.find(tv) : tuple_ops.end();
        if (it == tuple_ops.end()) fail("it indexes a tuple that is not the result of an operator here");
        const TensorStructInfoNode* t = known_tensor(vb->var->struct_info_);
        if (!t) fail("field " + std::to_string(get->index) + " of '" + tv->name_hint + "' has no known shape");
        const KValue& op = values_[size_t(it->second)];
        KValue kv;
        kv.kind = KValue::Field;
        kv.call = op.call;
        kv.op = op.op;
        kv.field = get->index;
        kv.dtype = t->dtype;
        kv.shape = *t->shape;
        kv.operands = op.operands;
        kv.name = "'" + vb->var->name_hint + "'";
        values_.push_back(std::move(kv));
        var_value_[var] = int(values_.size() - 1);
        continue;
      }
      auto* call = value.as<CallNode>();
      if (!call) fail(std::string("a binding of a ") + node_kind_name(value->kind()) + " is not supported");
      auto* op = call->op.as<OpNode>();
      if (!op) fail("it calls something other than an operator");
      if (auto why = unsupported_reason(*call)) fail(op->name + ": " + *why);
      KValue kv;
      kv.kind = KValue::Op;
      kv.call = call;
      kv.op = op->name;
      kv.operands = operands_of(*call);
      kv.name = "'" + vb->var->name_hint + "' (" + op->name + ")";
      if (vb->var->struct_info_ && vb->var->struct_info_.as<TupleStructInfoNode>()) {
        kv.is_tuple = true;
        values_.push_back(std::move(kv));
        tuple_ops[var] = int(values_.size() - 1);
        continue;
      }
      const TensorStructInfoNode* t = known_tensor(vb->var->struct_info_);
      if (!t) fail("the result of " + op->name + " has no known shape and dtype");
      kv.dtype = t->dtype;
      kv.shape = *t->shape;
      values_.push_back(std::move(kv));
      var_value_[var] = int(values_.size() - 1);
    }
  }
  std::vector<Expr> results;
  if (auto* tup = seq->body.as<TupleNode>()) results = tup->fields;
  else results.push_back(seq->body);
  for (const auto& r : results) {
    if (auto* v = r.as<VarNode>(); v && tuple_value_.count(v)) {
      for (int id : tuple_value_[v]) outputs_.push_back(id);
      continue;
    }
    if (!r.as<VarNode>() && !r.as<ConstantNode>()) fail("its result is not a tensor or a tuple of tensors");
    int id = value_of(r);
    if (values_[size_t(id)].kind == KValue::Prim) fail("its result is a scalar");
    outputs_.push_back(id);
  }
  if (outputs_.empty()) fail("it has no outputs");
}

AnchorKind anchor_kind_of(const std::string& op) {
  if (reduce_ops().count(op)) return AnchorKind::Reduce;
  if (row_ops().count(op)) return AnchorKind::RowOp;
  if (op == "relax.matmul") return AnchorKind::Matmul;
  if (op == "relax.nn.conv2d") return AnchorKind::Conv2d;
  if (op == "relax.nn.max_pool2d" || op == "relax.nn.avg_pool2d" || op == "relax.nn.adaptive_avg_pool2d")
    return AnchorKind::Pool;
  if (op == "relax.argmax" || op == "relax.argmin") return AnchorKind::ArgReduce;
  if (op == "relax.cumsum") return AnchorKind::Cumsum;
  if (op == "relax.topk") return AnchorKind::TopK;
  if (op == "relax.scatter_elements" || op == "relax.scatter_nd") return AnchorKind::Scatter;
  if (op == "relax.nn.conv2d_transpose") return AnchorKind::ConvTranspose;
  if (op == "relax.nn.attention" || op == "relax.nn.attention_bias") return AnchorKind::Attention;
  return AnchorKind::None;
}

void KernelEmitter::classify() {
  for (size_t i = 0; i < values_.size(); ++i) {
    const KValue& v = values_[i];
    if (v.kind != KValue::Op) continue;
    AnchorKind k = anchor_kind_of(v.op);
    if (k == AnchorKind::None) continue;
    if (k == AnchorKind::Pool && is_global_average_pool(v)) k = AnchorKind::Reduce;
    if (anchor_ >= 0)
      fail("it has two reductions / matmuls / pools (" + values_[size_t(anchor_)].name + " and " + v.name +
           "); one kernel computes one");
    anchor_ = int(i);
    anchor_kind_ = k;
  }
  down_.assign(values_.size(), 0);
  if (anchor_ < 0) return;
  down_[size_t(anchor_)] = 1;
  const KValue& a = values_[size_t(anchor_)];
  for (size_t i = size_t(anchor_) + 1; i < values_.size(); ++i) {
    const KValue& v = values_[i];
    if (v.is_tuple) continue;  // its fields carry its operands
    if (v.kind == KValue::Field && v.call == a.call) {  // a field of a tuple-valued anchor (topk)
      down_[i] = 1;
      continue;
    }
    bool down = false;
    for (int o : v.operands) down = down || down_[size_t(o)];
    if (!down) continue;
    down_[i] = 1;
    bool view = v.kind == KValue::Op && transform::is_view_op(v.op);
    if (view) continue;
    if (v.kind != KValue::Op && v.kind != KValue::Field) fail("internal: an unexpected value after the anchor");
    op::FusionKind kind = cuda_fusion_kind(*v.call);
    if (kind > op::FusionKind::Broadcast)
      fail(v.name + " follows " + a.name + " but is not elementwise: the anchor's epilogue may only hold "
           "elementwise and broadcast ops and reshapes");
    for (int o : v.operands)
      if (down_[size_t(o)] && !same_shape(values_[size_t(o)].shape, v.shape))
        fail(v.name + " broadcasts a value computed from " + a.name + "; the epilogue must keep its shape");
  }
  for (int o : outputs_)
    if (!down_[size_t(o)])
      fail("output " + values_[size_t(o)].name + " is not computed from " + a.name +
           " (an anchored kernel writes only the anchor and its epilogue)");
}

// ---------------------------------------------------------------------------------------------
// Shapes and indices
// ---------------------------------------------------------------------------------------------

std::string KernelEmitter::dim(const PrimExpr& d) {
  if (auto c = as_const_int(d)) return std::to_string(*c);
  if (auto* v = d.as<PrimVarNode>()) {
    auto it = sym_slot_.find(v);
    if (it == sym_slot_.end()) {
      it = sym_slot_.emplace(v, int(syms_.size())).first;
      syms_.push_back(v);
      all_static_ = false;
    }
    return "s" + std::to_string(it->second);
  }
  if (auto* b = d.as<PrimBinaryNode>()) {
    std::string x = dim(b->a), y = dim(b->b);
    switch (b->op) {
      case PrimOp::Add: return "(" + x + " + " + y + ")";
      case PrimOp::Sub: return "(" + x + " - " + y + ")";
      case PrimOp::Mul: return "(" + x + " * " + y + ")";
      case PrimOp::FloorDiv: return "pt_floordiv<pt_i64>(" + x + ", " + y + ")";
      case PrimOp::FloorMod: return "pt_floormod<pt_i64>(" + x + ", " + y + ")";
      case PrimOp::Min: return "pt_min<pt_i64>(" + x + ", " + y + ")";
      case PrimOp::Max: return "pt_max<pt_i64>(" + x + ", " + y + ")";
    }
  }
  fail("a shape holds an expression that is not an integer expression");
}

std::vector<std::string> KernelEmitter::dims_of(const std::vector<PrimExpr>& shape) {
  std::vector<std::string> out;
  for (const auto& d : shape) out.push_back(dim(d));
  return out;
}

std::string KernelEmitter::numel(const std::vector<PrimExpr>& shape) {
  PrimExpr n = int_imm(1);
  for (const auto& d : shape) n = n * d;
  if (auto c = as_const_int(n)) max_elements_ = std::max(max_elements_, *c);
  return dim(n);
}

bool KernelEmitter::same_shape(const std::vector<PrimExpr>& a, const std::vector<PrimExpr>& b) {
  if (a.size() != b.size()) return false;
  for (size_t k = 0; k < a.size(); ++k)
    if (!prove_equal(a[k], b[k])) return false;
  return true;
}

bool KernelEmitter::plain_read(int v) const {
  const KValue& x = values_[size_t(v)];
  if (x.kind != KValue::Op) return x.kind != KValue::Field;
  if (!transform::is_view_op(x.op) && cuda_fusion_kind(*x.call) != op::FusionKind::Injective) return false;
  for (int o : x.operands)
    if (!plain_read(o)) return false;
  return true;
}

std::string KernelEmitter::idx_var(const std::string& expr) {
  if (is_identifier(expr) || is_number(expr)) return expr;
  std::string key = "idx:" + expr;
  if (const std::string* hit = w_->find(key)) return *hit;
  std::string name = w_->fresh("i");
  w_->line("const pt_idx " + name + " = " + expr + ";");
  w_->put(key, name);
  return name;
}

std::vector<std::string> KernelEmitter::coords_of(const Index& idx) {
  if (!idx.coords.empty() || idx.dims.empty()) return idx.coords;
  size_t n = idx.dims.size();
  if (n == 1) return {idx.linear};
  std::string key = "dec:" + idx.linear;
  for (const auto& d : idx.dims) key += "," + d;
  std::vector<std::string> coords(n);
  if (const std::string* hit = w_->find(key)) {
    std::istringstream in(*hit);
    for (auto& c : coords) in >> c;
    return coords;
  }
  std::string rest = idx.linear;
  for (size_t k = n; k-- > 1;) {
    if (idx.dims[k] == "1") {
      coords[k] = "0";
      continue;
    }
    coords[k] = idx_var(rest + " % " + idx.dims[k]);
    rest = idx_var(rest + " / " + idx.dims[k]);
  }
  coords[0] = rest;
  std::string joined;
  for (const auto& c : coords) joined += c + " ";
  w_->put(key, joined);
  return coords;
}

std::string KernelEmitter::linear_of(const Index& idx) {
  if (!idx.linear.empty()) return idx.linear;
  if (idx.coords.empty()) return "0";
  std::string e = idx.coords[0];
  for (size_t k = 1; k < idx.coords.size(); ++k) {
    if (idx.dims[k] == "1") continue;  // the coordinate is 0
    e = "(" + e + ") * " + idx.dims[k] + " + " + idx.coords[k];
  }
  return idx_var(e);
}

Index KernelEmitter::broadcast_index(const Index& idx, const std::vector<PrimExpr>& out,
                                     const std::vector<PrimExpr>& in) {
  if (same_shape(in, out)) return idx;
  Index r;
  r.dims = dims_of(in);
  PrimExpr n = int_imm(1);
  for (const auto& d : in) n = n * d;
  if (auto c = as_const_int(n); c && *c == 1) {
    r.linear = "0";
    return r;
  }
  std::vector<std::string> oc = coords_of(idx);
  size_t off = out.size() - in.size();
  for (size_t k = 0; k < in.size(); ++k) {
    const PrimExpr& d = in[k];
    if (auto c = as_const_int(d); c && *c == 1) r.coords.push_back("0");
    else if (prove_equal(d, out[off + k])) r.coords.push_back(oc[off + k]);
    else r.coords.push_back(idx_var("(" + r.dims[k] + " == 1 ? (pt_idx)0 : " + oc[off + k] + ")"));
  }
  return r;
}

KernelEmitter::AxisRows KernelEmitter::axis_rows(const std::vector<PrimExpr>& shape, std::optional<int64_t> axis) {
  AxisRows r;
  r.shape = shape;
  r.rows = int_imm(1);
  r.len = int_imm(1);
  if (!axis) {
    for (const auto& d : shape) r.len = r.len * d;
    return r;
  }
  r.axis = normalize_axis(*axis, int(shape.size()));
  for (int k = 0; k < int(shape.size()); ++k)
    if (k == *r.axis) r.len = shape[size_t(k)];
    else r.rows = r.rows * shape[size_t(k)];
  return r;
}

std::string KernelEmitter::row_element(const AxisRows& r, const std::string& row, const std::string& k) {
  if (!r.axis) return k;
  PrimExpr inner = int_imm(1);
  for (size_t d = size_t(*r.axis) + 1; d < r.shape.size(); ++d) inner = inner * r.shape[d];
  std::string in = dim(inner), len = dim(r.len);
  if (in == "1") return idx_var("(" + row + ") * " + len + " + " + k);
  std::string o = idx_var(row + " / " + in), i = idx_var(row + " % " + in);
  return idx_var("((" + o + ") * " + len + " + " + k + ") * " + in + " + " + i);
}

// ---------------------------------------------------------------------------------------------
// Values
// ---------------------------------------------------------------------------------------------

namespace {
std::string index_key(const Index& idx) {
  if (!idx.linear.empty()) return idx.linear;
  std::string k = "c";
  for (const auto& c : idx.coords) k += ":" + c;
  return k;
}
}  // namespace

std::string KernelEmitter::eval(int v, const Index& idx) {
  std::string key = "v" + std::to_string(v) + "@" + index_key(idx);
  if (const std::string* hit = w_->find(key)) return *hit;
  const KValue& kv = values_[size_t(v)];
  if (v == anchor_) fail("internal: " + kv.name + " is needed at an element its kernel does not produce there");
  std::string e;
  switch (kv.kind) {
    case KValue::Param:
      e = load_expr(kv.dtype, "in" + std::to_string(kv.param) + "[" + linear_of(idx) + "]");
      break;
    case KValue::Const: {
      const Tensor& t = kv.constant->data;
      if (t.numel() == 1) {
        // One element: a literal, so that scalars cost no argument.
        double x = 0;
        int64_t i = 0;
        bool is_float = t.dtype().is_float();
        switch (t.dtype().code()) {
          case DataType::Code::Float:
            if (t.dtype().bits() == 32) x = *t.data_as<float>();
            else if (t.dtype().bits() == 64) x = *t.data_as<double>();
            else x = runtime::half_bits_to_float(*t.data_as<uint16_t>());
            break;
          case DataType::Code::BFloat: x = runtime::bfloat16_bits_to_float(*t.data_as<uint16_t>()); break;
          case DataType::Code::Int:
            if (t.dtype().bits() == 8) i = *t.data_as<int8_t>();
            else if (t.dtype().bits() == 16) i = *t.data_as<int16_t>();
            else if (t.dtype().bits() == 32) i = *t.data_as<int32_t>();
            else i = *t.data_as<int64_t>();
            break;
          default:  // unsigned and bool
            if (t.dtype().bits() <= 8) i = *t.data_as<uint8_t>();
            else if (t.dtype().bits() == 16) i = *t.data_as<uint16_t>();
            else if (t.dtype().bits() == 32) i = *t.data_as<uint32_t>();
            else i = int64_t(*t.data_as<uint64_t>());
            break;
        }
        e = is_float ? float_literal(kv.dtype, x) : int_literal(kv.dtype, i);
      } else {
        e = load_expr(kv.dtype, constant_pointer(kv.constant) + "[" + linear_of(idx) + "]");
      }
      break;
    }
    case KValue::Prim:
      if (auto* f = kv.prim.as<FloatImmNode>()) e = float_literal(kv.dtype, f->value);
      else e = "(" + compute_type(kv.dtype) + ")(" + dim(kv.prim) + ")";
      break;
    case KValue::Op: e = compute(v, idx); break;
    case KValue::Field: e = compute_field(v, idx); break;
  }
  std::string name = e;
  if (!is_identifier(e)) {
    name = w_->fresh("v");
    w_->line("const " + compute_type(kv.dtype) + " " + name + " = " + e + ";");
  }
  w_->put(key, name);
  return name;
}

void KernelEmitter::set_anchor_value(const Index& idx, const std::string& expr) {
  std::string name = expr;
  if (!is_identifier(expr)) {
    name = w_->fresh("a");
    w_->line("const " + compute_type(values_[size_t(anchor_)].dtype) + " " + name + " = " + expr + ";");
  }
  w_->put("v" + std::to_string(anchor_) + "@" + index_key(idx), name);
}

void KernelEmitter::store_outputs(const Index& idx) {
  const std::vector<PrimExpr>& ashape = values_[size_t(anchor_)].shape;
  for (size_t k = 0; k < outputs_.size(); ++k) {
    const KValue& v = values_[size_t(outputs_[k])];
    Index oi = idx;
    if (!same_shape(v.shape, ashape)) oi = Index{dims_of(v.shape), linear_of(idx), {}};
    std::string e = eval(outputs_[k], oi);
    w_->line("out" + std::to_string(k) + "[" + linear_of(oi) + "] = " + store_expr(v.dtype, e) + ";");
  }
}

std::string KernelEmitter::constant_pointer(const ConstantNode* c) {
  std::string name = namer_.name_for(c->data, f_.symbol);
  auto it = const_arg_.find(name);
  if (it == const_arg_.end()) {
    it = const_arg_.emplace(name, int(const_ptr_names_.size())).first;
    const_ptr_names_.push_back(name);
    const_ptr_dtypes_.push_back(c->data.dtype());
    if (std::find(const_names_.begin(), const_names_.end(), name) == const_names_.end()) const_names_.push_back(name);
  }
  return "c" + std::to_string(it->second);
}

// ---------------------------------------------------------------------------------------------
// Programs and the kernel
// ---------------------------------------------------------------------------------------------

runtime::DimProgram KernelEmitter::program(const PrimExpr& e) {
  using runtime::DimOp;
  runtime::DimProgram p;
  std::function<void(const PrimExpr&)> rec = [&](const PrimExpr& x) {
    if (auto c = as_const_int(x)) {
      p.insert(p.end(), {int64_t(DimOp::Const), *c});
    } else if (auto* v = x.as<PrimVarNode>()) {
      dim(x);  // gives it a slot
      p.insert(p.end(), {int64_t(DimOp::Var), sym_slot_.at(v)});
    } else if (auto* b = x.as<PrimBinaryNode>()) {
      rec(b->a);
      rec(b->b);
      static const DimOp ops[] = {DimOp::Add, DimOp::Sub, DimOp::Mul, DimOp::FloorDiv,
                                  DimOp::FloorMod, DimOp::Min, DimOp::Max};
      p.insert(p.end(), {int64_t(ops[size_t(b->op)]), 0});
    } else {
      fail("a shape holds an expression that is not an integer expression");
    }
  };
  rec(e);
  return p;
}

void KernelEmitter::set_grid(const PrimExpr& x, const PrimExpr& y, const PrimExpr& z, uint32_t bx, uint32_t by,
                             uint32_t bz) {
  launch_.grid = {program(x), program(y), program(z)};
  launch_.block = {bx, by, bz};
}

PrimExpr KernelEmitter::blocks_for(const PrimExpr& items) {
  return max(min(floordiv(items + int_imm(255), int_imm(256)), int_imm(1 << 16)), int_imm(1));
}

KernelFunction KernelEmitter::emit(std::string& source) {
  read_function();
  classify();
  std::string clean;
  for (char c : f_.symbol) clean += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  kernel_name_ = "pt_kernel_" + clean;
  launch_.symbol = f_.symbol;
  launch_.kernel = kernel_name_;
  switch (anchor_kind_) {
    case AnchorKind::None: emit_elementwise(); break;
    case AnchorKind::Reduce:
    case AnchorKind::RowOp: emit_reduction(); break;
    case AnchorKind::Pool: emit_pool(); break;
    case AnchorKind::Matmul: emit_matmul(); break;
    case AnchorKind::Conv2d: emit_conv2d(); break;
    case AnchorKind::ArgReduce: emit_arg_reduce(); break;
    case AnchorKind::Cumsum: emit_cumsum(); break;
    case AnchorKind::TopK: emit_topk(); break;
    case AnchorKind::Scatter: emit_scatter(); break;
    case AnchorKind::ConvTranspose: emit_conv2d_transpose(); break;
    case AnchorKind::Attention: emit_attention(); break;
  }
  // Signatures: every dimension of every input and output, checked (or bound) at run time.
  for (const TensorStructInfoNode* t : inputs_) {
    TensorSignature sig{t->dtype, {}};
    for (const auto& d : *t->shape) sig.shape.push_back(program(d));
    launch_.inputs.push_back(std::move(sig));
  }
  for (int o : outputs_) {
    const KValue& v = values_[size_t(o)];
    TensorSignature sig{v.dtype, {}};
    for (const auto& d : v.shape) {
      sig.shape.push_back(program(d));
      if (auto c = as_const_int(d); !c) all_static_ = false;
    }
    launch_.outputs.push_back(std::move(sig));
  }
  // Where each symbolic dimension comes from: a bare dimension of an input (else an output),
  // else one linear in it alone (a * n + b, as flattening gives), solved at run time.
  for (const PrimVarNode* s : syms_) {
    std::optional<DimSource> src;
    auto find_in = [&](const std::vector<std::vector<PrimExpr>>& shapes, bool output, bool linear) {
      for (size_t t = 0; t < shapes.size() && !src; ++t)
        for (size_t d = 0; d < shapes[t].size() && !src; ++d) {
          const PrimExpr& e = shapes[t][d];
          if (!linear) {
            if (e.get() == s) src = DimSource{output, int32_t(t), int32_t(d)};
            continue;
          }
          if (auto ab = linear_in(e, s)) src = DimSource{output, int32_t(t), int32_t(d), ab->first, ab->second};
        }
    };
    std::vector<std::vector<PrimExpr>> in_shapes, out_shapes;
    for (const TensorStructInfoNode* t : inputs_) in_shapes.push_back(*t->shape);
    for (int o : outputs_) out_shapes.push_back(values_[size_t(o)].shape);
    for (bool linear : {false, true}) {
      if (!src) find_in(in_shapes, false, linear);
      if (!src) find_in(out_shapes, true, linear);
    }
    if (!src)
      fail("symbolic dimension '" + s->name + "' cannot be read from the shape of any input or output");
    launch_.sym_sources.push_back(*src);
  }
  launch_.constants = const_ptr_names_;
  for (const auto& v : values_)
    if (v.kind != KValue::Prim)
      for (const auto& d : v.shape)
        if (!as_const_int(d)) all_static_ = false;
  for (const auto& v : values_) {
    PrimExpr n = int_imm(1);
    for (const auto& d : v.shape) n = n * d;
    if (auto c = as_const_int(n)) max_elements_ = std::max(max_elements_, *c);
  }
  // 32-bit indices when every size is static and small: integer division by constants is cheap.
  index_type_ = all_static_ && syms_.empty() && max_elements_ < (int64_t(1) << 30) ? "pt_i32" : "pt_i64";

  std::string sig = "extern \"C\" __global__ void __launch_bounds__(" +
                    std::to_string(launch_.block[0] * launch_.block[1] * launch_.block[2]) + ") " + kernel_name_ + "(";
  std::vector<std::string> params;
  for (size_t i = 0; i < inputs_.size(); ++i)
    params.push_back("const " + storage_type(launch_.inputs[i].dtype) + "* __restrict__ in" + std::to_string(i));
  for (size_t i = 0; i < const_ptr_names_.size(); ++i)
    params.push_back("const " + storage_type(const_ptr_dtypes_[i]) + "* __restrict__ c" + std::to_string(i));
  for (size_t i = 0; i < outputs_.size(); ++i)
    params.push_back(storage_type(values_[size_t(outputs_[i])].dtype) + "* __restrict__ out" + std::to_string(i));
  for (size_t i = 0; i < syms_.size(); ++i) params.push_back("const pt_i64 s" + std::to_string(i));
  for (size_t i = 0; i < params.size(); ++i) sig += (i ? ",\n    " : "") + params[i];
  sig += ") {\n  typedef " + index_type_ + " pt_idx;\n";
  source += "// " + f_.symbol + "\n" + sig + w_->str() + "}\n\n";
  if (!vector_body_.empty()) {
    std::string vsig = sig;
    vsig.replace(vsig.find(kernel_name_ + "("), kernel_name_.size(), launch_.vector_kernel);
    source += "// " + f_.symbol + ", 16-byte accesses\n" + vsig + vector_body_ + "}\n\n";
  }
  return launch_;
}

}  // namespace partita::backend::cuda
