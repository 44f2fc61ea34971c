// The TVMScript printer. It follows the structure of TVM's IRDocsifier (frames that define
// names and release them on exit, a per-function header collecting `n = T.int64()` and
// `cls = Module`) but writes text directly instead of building a Doc tree, so that printing is
// linear in the size of the module.
#include "partita/script/printer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "metadata.h"
#include "partita/op/registry.h"
#include "partita/support/error.h"

namespace partita::script {
namespace {

// ---------------------------------------------------------------------------------------------
// Literals

std::string escape_string(const std::string& s) {
  std::string out;
  out.reserve(s.size() + 2);
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '"': out += "\\\""; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char buf[8];
          snprintf(buf, sizeof(buf), "\\x%02x", c);
          out += buf;
        } else {
          out += char(c);
        }
    }
  }
  out += '"';
  return out;
}

/// A float as TVM's Python printer writes it: integral values as `1.0`, others with 17
/// significant digits (`1.0000000000000001e-05`), inf/nan quoted.
std::string format_float_literal(double v) {
  std::ostringstream os;
  if (std::isinf(v) || std::isnan(v)) {
    os << '"' << v << '"';
  } else if (std::nearbyint(v) == v) {
    os << std::showpoint << std::fixed;
    os.precision(1);
    os << v;
  } else {
    os.precision(17);
    os << v;
  }
  return os.str();
}

std::string dtype_literal(DataType t) { return t.is_void() ? "None" : "\"" + t.str() + "\""; }

const std::vector<GlobalInfo> kNoVDevices;

/// `vdevices`: the module's vdevice list, against which a VDevice value is named ("cuda:0:global").
void append_attr_value(const AttrValue& v, std::string& out, const std::vector<GlobalInfo>* vdevices = nullptr) {
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::monostate>) {
          out += "None";
        } else if constexpr (std::is_same_v<T, bool>) {
          out += x ? "True" : "False";
        } else if constexpr (std::is_same_v<T, int64_t>) {
          out += std::to_string(x);
        } else if constexpr (std::is_same_v<T, double>) {
          out += format_float_literal(x);
        } else if constexpr (std::is_same_v<T, std::string>) {
          out += escape_string(x);
        } else if constexpr (std::is_same_v<T, DataType>) {
          out += dtype_literal(x);
        } else if constexpr (std::is_same_v<T, VDevice>) {
          out += x ? escape_string(vdevice_script_name(x, vdevices ? *vdevices : kNoVDevices)) : "None";
        } else {
          out += '[';
          for (size_t i = 0; i < x.size(); ++i) {
            if (i) out += ", ";
            out += std::to_string(x[i]);
          }
          out += ']';
        }
      },
      v);
}

double half_to_double(uint16_t bits) {
  int sign = bits >> 15, exponent = (bits >> 10) & 0x1f, fraction = bits & 0x3ff;
  double value;
  if (exponent == 0x1f) value = fraction ? NAN : INFINITY;
  else if (exponent == 0) value = std::ldexp(double(fraction), -24);
  else value = std::ldexp(double(fraction | 0x400), exponent - 25);
  return sign ? -value : value;
}

/// `R.const(v, "dtype")` payload for scalars TVM prints inline; empty when it goes to metadata.
std::optional<std::string> special_scalar(const Tensor& t) {
  if (t.ndim() != 0 || !t.defined()) return std::nullopt;
  DataType d = t.dtype();
  const void* p = t.data();
  if (d == DataType::Int(8)) return std::to_string(*static_cast<const int8_t*>(p));
  if (d == DataType::Int(16)) return std::to_string(*static_cast<const int16_t*>(p));
  if (d == DataType::Int(32)) return std::to_string(*static_cast<const int32_t*>(p));
  if (d == DataType::Int(64)) return std::to_string(*static_cast<const int64_t*>(p));
  if (d == DataType::Float(16)) return format_float_literal(half_to_double(*static_cast<const uint16_t*>(p)));
  if (d == DataType::Float(32)) return format_float_literal(*static_cast<const float*>(p));
  if (d == DataType::Float(64)) return format_float_literal(*static_cast<const double*>(p));
  if (d == DataType::Bool()) return std::string(*static_cast<const uint8_t*>(p) ? "True" : "False");
  return std::nullopt;
}

/// A target as TVM prints Target.ToConfig(): a dictionary sorted by key, "host" nested.
void append_target_config(const TargetDescNode& target, std::string& out) {
  TargetConfig config = target_to_config(target);
  std::vector<std::string> keys;
  for (const auto& [k, v] : config) keys.push_back(k);
  if (target.host) keys.push_back("host");
  std::sort(keys.begin(), keys.end());
  out += '{';
  for (size_t i = 0; i < keys.size(); ++i) {
    if (i) out += ", ";
    out += escape_string(keys[i]) + ": ";
    if (keys[i] == "host" && target.host) {
      append_target_config(*target.host, out);
      continue;
    }
    std::visit(
        [&](const auto& x) {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, bool>) {
            out += x ? "True" : "False";
          } else if constexpr (std::is_same_v<T, int64_t>) {
            out += std::to_string(x);
          } else if constexpr (std::is_same_v<T, std::string>) {
            out += escape_string(x);
          } else {
            out += '[';
            for (size_t j = 0; j < x.size(); ++j) {
              if (j) out += ", ";
              out += escape_string(x[j]);
            }
            out += ']';
          }
        },
        config.at(keys[i]));
  }
  out += '}';
}

/// `I.vdevice({...}, 0, "global")`, as TVM prints a VDevice.
std::string vdevice_decl(const VDeviceNode& v) {
  std::string out = "I.vdevice(";
  if (v.target) append_target_config(*v.target, out);
  else out += "None";
  out += ", " + std::to_string(v.vdevice_id) + ", " + escape_string(v.memory_scope) + ")";
  return out;
}

// ---------------------------------------------------------------------------------------------
// Names: unique among the names alive, `hint`, `hint_1`, `hint_2`, ... (TVM's rule). For speed
// each hint remembers a lower bound of its first free suffix, lowered again when a name is
// released, so naming n variables with one hint costs O(n), not O(n^2).

class NameTable {
 public:
  bool defined(const std::string& name) const { return names_.count(name) != 0; }
  void reserve(const std::string& name) { names_.insert(name); }

  std::string define(std::string hint) {
    if (hint.empty()) hint = "v";
    for (char& c : hint)
      if (c != '_' && !std::isalnum(static_cast<unsigned char>(c))) c = '_';
    if (!names_.count(hint)) {
      names_.insert(hint);
      return hint;
    }
    int64_t& next = low_[hint];
    if (next < 1) next = 1;
    std::string name;
    for (;; ++next) {
      name = hint + "_" + std::to_string(next);
      if (!names_.count(name)) break;
    }
    ++next;
    names_.insert(name);
    return name;
  }

  void release(const std::string& name) {
    names_.erase(name);
    size_t us = name.rfind('_');
    if (us == std::string::npos || us + 1 >= name.size() || name[us + 1] == '0') return;
    int64_t k = 0;
    for (size_t i = us + 1; i < name.size(); ++i) {
      if (!std::isdigit(static_cast<unsigned char>(name[i])) || k > (int64_t(1) << 40)) return;
      k = k * 10 + (name[i] - '0');
    }
    auto it = low_.find(name.substr(0, us));
    if (it != low_.end() && k < it->second) it->second = k;
  }

 private:
  std::unordered_set<std::string> names_;
  std::unordered_map<std::string, int64_t> low_;
};

// ---------------------------------------------------------------------------------------------

class Printer {
 public:
  explicit Printer(const PrintOptions& opts) : opts_(opts) {
    for (const char* k : {"I", "T", "R", "cls"}) names_.reserve(k);
  }

  std::string print_module(const IRModule& mod);
  std::string print_global_infos(const IRModuleNode& mod);
  std::string print_module_attrs(const IRModuleNode& mod);
  std::string print_standalone(const ObjectRef& node);

 private:
  // ---- frames ----
  struct Frame {
    std::vector<const Object*> defined;
  };
  /// The outermost function being printed: where `n = T.int64()` and `cls = Module` go.
  struct FuncHeader {
    std::string lines;  // already indented, each ending in '\n'
    int indent = 0;
    bool cls_printed = false;
  };

  void push_frame() { frames_.emplace_back(); }
  void pop_frame() {
    for (const Object* o : frames_.back().defined) {
      auto it = obj_names_.find(o);
      names_.release(it->second);
      obj_names_.erase(it);
    }
    frames_.pop_back();
  }
  const std::string& define(const Object* obj, const std::string& hint, Frame& frame) {
    auto it = obj_names_.find(obj);
    if (it != obj_names_.end()) return it->second;  // ill-formed input: defined twice
    frame.defined.push_back(obj);
    return obj_names_.emplace(obj, names_.define(hint)).first->second;
  }

  static void indent_to(std::string& out, int indent) { out.append(size_t(indent), ' '); }

  // ---- prim exprs ----
  void print_prim(const PrimExpr& e, std::string& out);
  void print_shape_dim(const PrimExpr& e, std::string& out);
  bool uses_func_var(const PrimExpr& e) const;
  const std::string& tir_var_name(const PrimVarNode* v);

  // ---- struct info ----
  void print_sinfo(const StructInfo& s, std::string& out);

  // ---- expressions ----
  void print_expr(const Expr& e, std::string& out);
  void print_call(const CallNode& c, std::string& out);
  void print_extern_func(const ExternFuncNode& ext, std::string& out);
  bool print_device_call(const CallNode& c, const OpNode& op, std::string& out);
  void print_var_ref(const VarNode* v, std::string& out);
  void print_global(const std::string& name, std::string& out);
  void print_rhs(const Expr& e, std::string& out);  // tuples without parentheses

  // ---- statements ----
  void print_function(const FunctionNode& f, const std::string& name, bool top_level, int indent,
                      std::string& out);
  void print_seq_body(const SeqExprNode& seq, int indent, std::string& out, const std::string* assign_to,
                      const std::string* assign_ann);
  void print_binding(const BindingNode& b, int indent, std::string& out, std::vector<const VarNode*>* outputs);
  std::string header_comment(int indent) const;

  const PrintOptions& opts_;
  NameTable names_;
  std::unordered_map<const Object*, std::string> obj_names_;
  std::vector<Frame> frames_;
  FuncHeader* func_header_ = nullptr;
  /// Symbolic vars first defined while printing the signature of the outermost function; shape
  /// expressions using them print as strings there (`R.Tensor(("n", 4))`), as TVM does.
  std::unordered_set<const Object*>* func_vars_ = nullptr;
  bool collecting_func_vars_ = false;
  /// Index in frames_ of the outermost function's frame, which owns the symbolic variables.
  size_t tir_frame_ = 0;
  bool uses_tir_ = false;
  const IRModuleNode* mod_ = nullptr;
  /// The module's vdevices ("vdevice" global infos), which struct info and R.to_vdevice name by
  /// kind and index ("cuda:0:global"); empty when printing outside a module, as in TVM.
  const std::vector<GlobalInfo>* vdevices_ = &kNoVDevices;
  std::vector<Tensor> metadata_;
  std::unordered_map<const Object*, size_t> metadata_index_;
};

// ---- prim exprs ---------------------------------------------------------------------------------

const std::string& Printer::tir_var_name(const PrimVarNode* v) {
  auto it = obj_names_.find(v);
  if (it != obj_names_.end()) return it->second;
  // Defined in the outermost function (or the outermost frame when printing a fragment).
  uses_tir_ = true;
  const std::string& name = define(v, v->name, frames_[tir_frame_]);
  if (collecting_func_vars_ && func_vars_) func_vars_->insert(v);
  if (func_header_) {
    indent_to(func_header_->lines, func_header_->indent);
    func_header_->lines += name + " = T." + (v->dtype.is_void() ? std::string("void") : v->dtype.str()) + "()\n";
  }
  return name;
}

// The one PrimExpr printer, with TVMScript's spelling of what it prints: variables by their
// names in scope (defined on first use), typed immediates as T.<dtype>(...).
void Printer::print_prim(const PrimExpr& e, std::string& out) {
  print_prim_expr(e, out, [this](const PrimExpr& x, std::string& o) {
    if (!x.defined()) {
      o += "None";
      return true;
    }
    if (const auto* i = x.as<IntImmNode>()) {
      if (i->dtype == DataType::Int(64)) return false;
      if (i->dtype.is_bool()) {
        o += i->value ? "True" : "False";
        return true;
      }
      uses_tir_ = true;
      o += "T." + i->dtype.str() + "(" + std::to_string(i->value) + ")";
      return true;
    }
    if (const auto* f = x.as<FloatImmNode>()) {
      uses_tir_ = true;
      o += "T." + f->dtype.str() + "(" + format_float_literal(f->value) + ")";
      return true;
    }
    if (const auto* v = x.as<PrimVarNode>()) {
      o += tir_var_name(v);
      return true;
    }
    if (const auto* b = x.as<PrimBinaryNode>(); b && (b->op == PrimOp::Min || b->op == PrimOp::Max))
      uses_tir_ = true;  // T.min / T.max, printed by print_prim_expr
    return false;
  });
}

bool Printer::uses_func_var(const PrimExpr& e) const {
  if (!func_vars_ || func_vars_->empty() || !e.defined()) return false;
  if (const auto* v = e.as<PrimVarNode>()) return func_vars_->count(v) != 0;
  if (const auto* b = e.as<PrimBinaryNode>()) return uses_func_var(b->a) || uses_func_var(b->b);
  return false;
}

void Printer::print_shape_dim(const PrimExpr& e, std::string& out) {
  std::string text;
  print_prim(e, text);  // defines new symbolic vars first, as TVM does
  if (collecting_func_vars_ && uses_func_var(e)) {
    out += escape_string(text);
  } else {
    out += text;
  }
}

// ---- struct info --------------------------------------------------------------------------------

void Printer::print_sinfo(const StructInfo& s, std::string& out) {
  // TVM v0.26's spellings (its struct info became types): R.Any, T.<dtype>, and a callable's
  // purity always said; the parser also reads the older R.Object, R.Prim("<dtype>").
  if (!s.defined()) {
    out += "R.Any";
    return;
  }
  switch (s->kind()) {
    case NodeKind::ObjectStructInfo: out += "R.Any"; return;
    case NodeKind::PrimStructInfo: {
      const auto* p = static_cast<const PrimStructInfoNode*>(s.get());
      if (p->value.defined()) {  // a known value: Partita's, v0.26 has no way to say it
        out += "R.Prim(value=";
        print_shape_dim(p->value, out);
        out += ')';
      } else {
        out += "T." + p->dtype.str();
        uses_tir_ = true;
      }
      return;
    }
    case NodeKind::ShapeStructInfo: {
      const auto* p = static_cast<const ShapeStructInfoNode*>(s.get());
      if (p->values) {
        out += "R.Shape([";
        for (size_t i = 0; i < p->values->size(); ++i) {
          if (i) out += ", ";
          print_shape_dim((*p->values)[i], out);
        }
        out += "])";
      } else {
        out += "R.Shape(ndim=" + std::to_string(p->ndim) + ")";
      }
      return;
    }
    case NodeKind::TensorStructInfo: {
      const auto* t = static_cast<const TensorStructInfoNode*>(s.get());
      bool any = false;
      std::string args;
      if (t->shape) {
        args += '(';
        for (size_t i = 0; i < t->shape->size(); ++i) {
          if (i) args += ", ";
          print_shape_dim((*t->shape)[i], args);
        }
        if (t->shape->size() == 1) args += ',';
        args += ')';
        any = true;
      }
      if (!t->dtype.is_void()) {
        if (any) args += ", ";
        args += "dtype=\"" + t->dtype.str() + "\"";
        any = true;
      }
      if (!t->shape && t->ndim >= 0) {
        if (any) args += ", ";
        args += "ndim=" + std::to_string(t->ndim);
        any = true;
      }
      if (t->vdevice && t->vdevice->target) {
        if (any) args += ", ";
        args += "vdevice=" + escape_string(vdevice_script_name(t->vdevice, *vdevices_));
        any = true;
      }
      out += "R.Tensor";
      if (any) out += "(" + args + ")";
      return;
    }
    case NodeKind::TupleStructInfo: {
      const auto* t = static_cast<const TupleStructInfoNode*>(s.get());
      out += "R.Tuple";
      if (t->fields.empty()) return;
      out += '(';
      for (size_t i = 0; i < t->fields.size(); ++i) {
        if (i) out += ", ";
        print_sinfo(t->fields[i], out);
      }
      out += ')';
      return;
    }
    case NodeKind::FuncStructInfo: {
      const auto* f = static_cast<const FuncStructInfoNode*>(s.get());
      out += "R.Callable";
      if (!f->params) {  // opaque: its result and its purity by keyword; impure says nothing
        std::string kw;
        if (f->ret.defined() && f->ret->kind() != NodeKind::ObjectStructInfo) {
          kw += "ret=";
          print_sinfo(f->ret, kw);
        }
        if (f->purity) kw += std::string(kw.empty() ? "" : ", ") + "purity=True";
        if (!kw.empty()) out += "(" + kw + ")";
        return;
      }
      out += "((";
      for (size_t i = 0; i < f->params->size(); ++i) {
        if (i) out += ", ";
        print_sinfo((*f->params)[i], out);
      }
      if (f->params->size() == 1) out += ',';
      out += "), ";
      print_sinfo(f->ret, out);
      out += f->purity ? ", True)" : ", False)";
      return;
    }
    default: out += "R.Any";
  }
}

// ---- expressions ---------------------------------------------------------------------------------

void Printer::print_var_ref(const VarNode* v, std::string& out) {
  auto it = obj_names_.find(v);
  if (it != obj_names_.end()) {
    out += it->second;
    return;
  }
  // A free variable (ill-formed input): define it in the current frame so the text stays readable.
  out += define(v, v->name_hint, frames_.back());
}

void Printer::print_global(const std::string& name, std::string& out) {
  if (mod_ && mod_->functions.count(name)) {
    if (func_header_ && !func_header_->cls_printed) {
      indent_to(func_header_->lines, func_header_->indent);
      func_header_->lines += "cls = Module\n";
      func_header_->cls_printed = true;
    }
    out += "cls.";
  }
  out += name;
}

void Printer::print_rhs(const Expr& e, std::string& out) {
  if (const auto* t = e.as<TupleNode>(); t && t->fields.size() > 1) {
    for (size_t i = 0; i < t->fields.size(); ++i) {
      if (i) out += ", ";
      print_expr(t->fields[i], out);
    }
    return;
  }
  print_expr(e, out);
}

void Printer::print_expr(const Expr& e, std::string& out) {
  if (!e.defined()) {
    out += "None";
    return;
  }
  switch (e->kind()) {
    case NodeKind::Var:
    case NodeKind::DataflowVar: print_var_ref(static_cast<const VarNode*>(e.get()), out); return;
    case NodeKind::GlobalVar: print_global(static_cast<const GlobalVarNode*>(e.get())->name_hint, out); return;
    case NodeKind::Constant: {
      const auto* c = static_cast<const ConstantNode*>(e.get());
      if (auto s = special_scalar(c->data)) {
        out += "R.const(" + *s + ", \"" + c->data.dtype().str() + "\")";
        return;
      }
      auto [it, inserted] = metadata_index_.emplace(c, metadata_.size());
      if (inserted) metadata_.push_back(c->data);
      out += "metadata[\"relax.expr.Constant\"][" + std::to_string(it->second) + "]";
      return;
    }
    case NodeKind::PrimValue: {
      // Bare, as TVM prints a primitive value: 3, T.float64(-1.0), True, n * 2.
      print_prim(static_cast<const PrimValueNode*>(e.get())->value, out);
      return;
    }
    case NodeKind::StringImm:
      out += "R.str(" + escape_string(static_cast<const StringImmNode*>(e.get())->value) + ")";
      return;
    case NodeKind::DataTypeImm:
      out += "R.dtype(" + dtype_literal(static_cast<const DataTypeImmNode*>(e.get())->value) + ")";
      return;
    case NodeKind::ShapeExpr: {
      const auto* s = static_cast<const ShapeExprNode*>(e.get());
      out += "R.shape([";
      for (size_t i = 0; i < s->values.size(); ++i) {
        if (i) out += ", ";
        print_shape_dim(s->values[i], out);
      }
      out += "])";
      return;
    }
    case NodeKind::Tuple: {
      const auto* t = static_cast<const TupleNode*>(e.get());
      if (t->fields.empty()) {
        out += "R.tuple()";
        return;
      }
      out += '(';
      for (size_t i = 0; i < t->fields.size(); ++i) {
        if (i) out += ", ";
        print_expr(t->fields[i], out);
      }
      if (t->fields.size() == 1) out += ',';
      out += ')';
      return;
    }
    case NodeKind::TupleGetItem: {
      const auto* t = static_cast<const TupleGetItemNode*>(e.get());
      print_expr(t->tuple, out);
      out += "[" + std::to_string(t->index) + "]";
      return;
    }
    case NodeKind::Call: print_call(*static_cast<const CallNode*>(e.get()), out); return;
    case NodeKind::ExternFunc:
      print_extern_func(*static_cast<const ExternFuncNode*>(e.get()), out);
      return;
    case NodeKind::Op: {
      const auto* op = static_cast<const OpNode*>(e.get());
      out += "R.Op(" + escape_string(op->name) + ")";
      return;
    }
    default:
      // Functions, SeqExprs and Ifs are statements; as a value they only appear in ill-formed IR.
      out += "R.Object";
  }
}

/// `R.ExternFunc("sym")`, with its struct info when it is not the default (opaque, impure,
/// R.Object result), as TVM prints it.
void Printer::print_extern_func(const ExternFuncNode& ext, std::string& out) {
  out += "R.ExternFunc(" + escape_string(ext.global_symbol);
  const auto* f = ext.struct_info_.as<FuncStructInfoNode>();
  bool object_ret = f && (!f->ret.defined() || f->ret->kind() == NodeKind::ObjectStructInfo);
  if (f && (f->params || f->purity || !object_ret)) {
    out += ", ";
    print_sinfo(ext.struct_info_, out);
  }
  out += ')';
}

void Printer::print_call(const CallNode& c, std::string& out) {
  bool first = true;
  auto sep = [&]() {
    if (!first) out += ", ";
    first = false;
  };
  if (const auto* ext = c.op.as<ExternFuncNode>()) {
    out += "R.call_packed(" + escape_string(ext->global_symbol);
    first = false;
  } else if (const auto* op = c.op.as<OpNode>()) {
    if (print_device_call(c, *op, out)) return;
    const op::OpDef* def = op::find_op_def(op->name);
    if (def) out += def->script_name;
    else if (op->name.rfind("relax.", 0) == 0) out += "R." + op->name.substr(6);
    else out += op->name;
    out += '(';
  } else {
    print_expr(c.op, out);
    out += '(';
  }
  for (size_t i = 0; i < c.args.size(); ++i) {
    sep();
    if (const auto* ext = c.args[i].as<ExternFuncNode>(); ext && i == 0) out += escape_string(ext->global_symbol);
    else print_expr(c.args[i], out);
  }
  if (c.attrs.defined()) {
    if (c.op.as<ExternFuncNode>()) {
      sep();
      out += "attrs_type_key=" + escape_string(c.attrs->type_key);
    }
    const op::OpDef* def = nullptr;
    if (const auto* op = c.op.as<OpNode>()) def = op::find_op_def(op->name);
    std::vector<bool> printed(c.attrs->values.size(), false);
    auto emit = [&](size_t k, const op::AttrSpec* spec = nullptr) {
      sep();
      out += c.attrs->values[k].first;
      out += '=';
      const AttrValue& v = c.attrs->values[k].second;
      // TVM's Optional<FloatImm> attributes (attention's scale) print as a typed immediate.
      if (spec && spec->kind == op::AttrKind::OptionalFloat && std::holds_alternative<double>(v))
        out += "T.float32(" + format_float_literal(std::get<double>(v)) + ")", uses_tir_ = true;
      else
        append_attr_value(v, out, vdevices_);
      printed[k] = true;
    };
    if (def) {
      for (const auto& spec : def->attrs)
        for (size_t k = 0; k < c.attrs->values.size(); ++k)
          if (!printed[k] && c.attrs->values[k].first == spec.name) {
            emit(k, &spec);
            break;
          }
    }
    for (size_t k = 0; k < c.attrs->values.size(); ++k)
      if (!printed[k]) emit(k);
  }
  if (!c.sinfo_args.empty()) {
    sep();
    out += "ty_args=(";  // v0.26's name of sinfo_args
    for (size_t i = 0; i < c.sinfo_args.size(); ++i) {
      if (i) out += ", ";
      print_sinfo(c.sinfo_args[i], out);
    }
    if (c.sinfo_args.size() == 1) out += ',';
    out += ')';
  }
  out += ')';
}

/// R.to_vdevice and R.hint_on_device print as TVM's printer special-cases them:
/// `R.to_vdevice(x, dst_vdevice="cuda:0:global")` and
/// `R.hint_on_device(x, R.device(device_type=2, index=0), "global")`.
bool Printer::print_device_call(const CallNode& c, const OpNode& op, std::string& out) {
  const bool to_vdevice = op.name == "relax.to_vdevice";
  if ((!to_vdevice && op.name != "relax.hint_on_device") || c.args.size() != 1 || !c.attrs.defined())
    return false;
  if (to_vdevice) {
    const AttrValue* dst = c.attrs->find("dst_vdevice");
    const VDevice* v = dst ? std::get_if<VDevice>(dst) : nullptr;
    if (!v || !*v) return false;
    out += "R.to_vdevice(";
    print_expr(c.args[0], out);
    out += ", dst_vdevice=" + escape_string(vdevice_script_name(*v, *vdevices_)) + ")";
    return true;
  }
  const AttrValue* type = c.attrs->find("device_type");
  const AttrValue* index = c.attrs->find("index");
  const AttrValue* scope = c.attrs->find("memory_scope");
  if (!type || !index || !scope || !std::holds_alternative<int64_t>(*type) ||
      !std::holds_alternative<int64_t>(*index) || !std::holds_alternative<std::string>(*scope))
    return false;
  out += "R.hint_on_device(";
  print_expr(c.args[0], out);
  out += ", R.device(device_type=" + std::to_string(std::get<int64_t>(*type)) +
         ", index=" + std::to_string(std::get<int64_t>(*index)) + "), " +
         escape_string(std::get<std::string>(*scope)) + ")";
  return true;
}

// ---- statements ----------------------------------------------------------------------------------

std::string Printer::header_comment(int indent) const {
  std::string s;
  if (uses_tir_) {
    s.append(size_t(indent), ' ');
    s += "# from partita.script import tir as T\n";
  }
  s.append(size_t(indent), ' ');
  s += "# from partita.script import relax as R\n";
  s.append(size_t(indent), ' ');
  s += '\n';
  return s;
}

void Printer::print_binding(const BindingNode& b, int indent, std::string& out,
                            std::vector<const VarNode*>* outputs) {
  const VarNode* var = b.var.get();
  if (outputs && var->kind() == NodeKind::Var) outputs->push_back(var);
  if (const auto* mc = b.kind() == NodeKind::MatchCast ? static_cast<const MatchCastNode*>(&b) : nullptr) {
    std::string ann, rhs;
    print_sinfo(var->struct_info_, ann);
    rhs += "R.match_cast(";
    print_expr(mc->value, rhs);
    rhs += ", ";
    print_sinfo(mc->struct_info, rhs);
    rhs += ')';
    const std::string& name = define(var, var->name_hint, frames_.back());
    indent_to(out, indent);
    out += name + ": " + ann + " = " + rhs + "\n";
    return;
  }
  const Expr& value = static_cast<const VarBindingNode&>(b).value;
  if (const auto* iff = value.as<IfNode>()) {
    std::string ann;
    print_sinfo(var->struct_info_, ann);
    const std::string name = define(var, var->name_hint, frames_.back());
    std::string cond;
    print_expr(iff->cond, cond);
    indent_to(out, indent);
    out += "if " + cond + ":\n";
    for (int br = 0; br < 2; ++br) {
      if (br == 1) {
        indent_to(out, indent);
        out += "else:\n";
      }
      const Expr& branch = br == 0 ? iff->true_branch : iff->false_branch;
      if (const auto* seq = branch.as<SeqExprNode>()) {
        print_seq_body(*seq, indent + 4, out, &name, &ann);
      } else {
        push_frame();
        indent_to(out, indent + 4);
        out += name + ": " + ann + " = ";
        print_rhs(branch, out);
        out += '\n';
        pop_frame();
      }
    }
    return;
  }
  if (const auto* fn = value.as<FunctionNode>()) {
    const std::string name = define(var, var->name_hint, frames_.back());
    std::string text;
    print_function(*fn, name, false, indent, text);
    out += header_comment(indent);  // after the function, as TVM decides its imports then
    out += text;
    return;
  }
  std::string rhs, ann;
  print_rhs(value, rhs);
  if (var->struct_info_.defined()) print_sinfo(var->struct_info_, ann);
  const std::string& name = define(var, var->name_hint, frames_.back());
  indent_to(out, indent);
  out += name;
  if (!ann.empty()) out += ": " + ann;
  out += " = ";
  out += rhs;
  out += '\n';
}

void Printer::print_seq_body(const SeqExprNode& seq, int indent, std::string& out, const std::string* assign_to,
                             const std::string* assign_ann) {
  push_frame();
  for (const BindingBlock& block : seq.blocks) {
    if (block->is_dataflow) {
      indent_to(out, indent);
      out += "with R.dataflow():\n";
      std::vector<const VarNode*> outputs;
      for (const Binding& b : block->bindings) print_binding(*b, indent + 4, out, &outputs);
      indent_to(out, indent + 4);
      out += "R.output(";
      for (size_t i = 0; i < outputs.size(); ++i) {
        if (i) out += ", ";
        print_var_ref(outputs[i], out);
      }
      out += ")\n";
    } else {
      for (const Binding& b : block->bindings) print_binding(*b, indent, out, nullptr);
    }
  }
  std::string ret;
  if (assign_to) {
    print_rhs(seq.body, ret);
    indent_to(out, indent);
    out += *assign_to + ": " + *assign_ann + " = " + ret + "\n";
  } else {
    print_expr(seq.body, ret);
    indent_to(out, indent);
    out += "return " + ret + "\n";
  }
  pop_frame();
}

void Printer::print_function(const FunctionNode& f, const std::string& name, bool top_level, int indent,
                             std::string& out) {
  // Every function, nested or not, is a frame of its own that defines the symbolic variables
  // first printed inside it (`n_1 = T.int64()` in a composite function) and `cls = Module`, as
  // TVM's printer does (the innermost function frame).
  push_frame();
  size_t saved_tir_frame = tir_frame_;
  tir_frame_ = frames_.size() - 1;
  FuncHeader header;
  header.indent = indent + 4;
  std::unordered_set<const Object*> func_vars;
  FuncHeader* saved_header = func_header_;
  func_header_ = &header;
  auto* saved_vars = func_vars_;
  func_vars_ = &func_vars;
  bool saved_collecting = collecting_func_vars_;
  collecting_func_vars_ = true;
  // Step 1: the return type; step 2: the parameters (both may define symbolic variables).
  std::string ret;
  if (f.ret_struct_info.defined()) print_sinfo(f.ret_struct_info, ret);
  std::string params;
  for (size_t i = 0; i < f.params.size(); ++i) {
    const VarNode* p = f.params[i].get();
    if (i) params += ", ";
    params += define(p, p->name_hint, frames_.back());
    if (p->struct_info_.defined()) {
      params += ": ";
      print_sinfo(p->struct_info_, params);
    }
  }
  collecting_func_vars_ = false;
  // Step 3: attributes; "global_symbol" is implied by a public top-level function.
  std::string attrs_line;
  bool has_symbol = f.attrs.count("global_symbol") != 0;
  {
    std::string dict;
    bool any = false;
    for (const auto& [k, v] : f.attrs) {
      if (top_level && k == "global_symbol") {
        if (const auto* s = std::get_if<std::string>(&v); s && *s == name) continue;
      }
      if (any) dict += ", ";
      any = true;
      dict += escape_string(k) + ": ";
      append_attr_value(v, dict);
    }
    if (any) {
      indent_to(attrs_line, indent + 4);
      attrs_line += "R.func_attr({" + dict + "})\n";
    }
  }
  std::string decorator = "@R.function";
  {
    std::string kw;
    if (!f.is_pure) kw += "pure=False";
    if (top_level && !has_symbol) kw += std::string(kw.empty() ? "" : ", ") + "private=True";
    if (!kw.empty()) decorator += "(" + kw + ")";
  }
  // The signature-time header lines come before the attributes; body-time ones after them.
  std::string sig_header = std::move(header.lines);
  header.lines.clear();
  std::string body;
  if (const auto* seq = f.body.as<SeqExprNode>()) {
    print_seq_body(*seq, indent + 4, body, nullptr, nullptr);
  } else {
    push_frame();
    std::string r;
    print_expr(f.body, r);
    indent_to(body, indent + 4);
    body += "return " + r + "\n";
    pop_frame();
  }
  indent_to(out, indent);
  out += decorator + "\n";
  indent_to(out, indent);
  out += "def " + name + "(" + params + ")";
  if (!ret.empty()) out += " -> " + ret;
  out += ":\n";
  out += sig_header;
  out += attrs_line;
  out += header.lines;
  out += body;
  out += '\n';  // a blank line after every function, as TVM's printer does
  func_header_ = saved_header;
  func_vars_ = saved_vars;
  collecting_func_vars_ = saved_collecting;
  tir_frame_ = saved_tir_frame;
  pop_frame();
}

std::string rstrip(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  return s;
}

std::string Printer::print_module(const IRModule& mod) {
  mod_ = mod.get();
  push_frame();  // module frame
  names_.reserve("Module");
  std::string infos = print_module_attrs(*mod) + print_global_infos(*mod);
  // TVM's order: ExternFuncs, then Relax functions by name, `main` last.
  std::vector<std::pair<int, std::string>> order;
  for (const auto& [name, entry] : mod->functions) {
    int prio = name == "main" ? 1000 : entry.second.as<ExternFuncNode>() ? 2 : 3;
    order.emplace_back(prio, name);
  }
  std::sort(order.begin(), order.end());
  std::string body;
  for (const auto& [prio, name] : order) {
    const Expr& fn = mod->functions.at(name).second;
    if (const auto* f = fn.as<FunctionNode>()) {
      print_function(*f, name, true, 4, body);
    } else if (const auto* ext = fn.as<ExternFuncNode>()) {
      body += "    " + name + " = ";
      print_extern_func(*ext, body);
      body += '\n';
    }
  }
  pop_frame();
  std::string out = "# from partita.script import ir as I\n";
  if (uses_tir_) out += "# from partita.script import tir as T\n";
  out += "# from partita.script import relax as R\n\n@I.ir_module\nclass Module:\n";
  if (body.empty() && infos.empty()) body = "    pass\n";
  out += infos;
  out += body;
  out = rstrip(std::move(out));
  if (opts_.show_metadata) detail::append_metadata(metadata_, &out);
  return out;
}

/// `I.module_attrs({"name": value})`, first in the class body as in TVM: the attributes holding
/// a scalar (IntImm, FloatImm, StringImm); others (external modules) are compiler state.
std::string Printer::print_module_attrs(const IRModuleNode& mod) {
  std::string dict;
  for (const auto& [name, value] : mod.attrs) {
    std::string v;
    if (const auto* i = value.as<IntImmNode>())
      v = i->dtype.is_bool() ? (i->value ? "True" : "False") : std::to_string(i->value);
    else if (const auto* f = value.as<FloatImmNode>()) v = format_float_literal(f->value);
    else if (const auto* s = value.as<StringImmNode>()) v = escape_string(s->value);
    else continue;
    if (!dict.empty()) dict += ", ";
    dict += escape_string(name) + ": " + v;
  }
  return dict.empty() ? "" : "    I.module_attrs({" + dict + "})\n";
}

/// `I.module_global_infos({"vdevice": [I.vdevice(...), ...]})`, the first statement of the
/// class body as in TVM (no blank line before the functions). Only vdevices are global infos
/// Partita knows; the vdevice list also becomes what struct info names devices against.
std::string Printer::print_global_infos(const IRModuleNode& mod) {
  if (mod.global_infos.empty()) return "";
  std::string out = "    I.module_global_infos({";
  bool first = true;
  for (const auto& [name, infos] : mod.global_infos) {
    if (!first) out += ", ";
    first = false;
    out += escape_string(name) + ": [";
    for (size_t i = 0; i < infos.size(); ++i) {
      if (i) out += ", ";
      if (const auto* v = infos[i].as<VDeviceNode>()) out += vdevice_decl(*v);
      else out += "None";
    }
    out += ']';
  }
  out += "})\n";
  if (auto it = mod.global_infos.find("vdevice"); it != mod.global_infos.end()) vdevices_ = &it->second;
  return out;
}

std::string Printer::print_standalone(const ObjectRef& node) {
  push_frame();
  std::string out;
  if (const auto* f = node.as<FunctionNode>()) {
    std::string name = "main";
    if (auto it = f->attrs.find("global_symbol"); it != f->attrs.end())
      if (const auto* s = std::get_if<std::string>(&it->second)) name = *s;
    std::string text;
    print_function(*f, name, true, 0, text);
    out = header_comment(0) + text;
  } else if (node.as<StructInfoNode>()) {
    print_sinfo(Ref<StructInfoNode>(node.as<StructInfoNode>()), out);
  } else if (node.as<SeqExprNode>() || node.as<BindingBlockNode>() || node.as<IfNode>()) {
    // As TVM prints them alone: the blocks' statements (a dataflow block inside
    // `with R.dataflow():`), then a SeqExpr's body as an expression statement; an If as an
    // if/else statement of its branches.
    auto print_block = [&](const BindingBlockNode& block, int indent) {
      if (!block.is_dataflow) {
        for (const Binding& b : block.bindings) print_binding(*b, indent, out, nullptr);
        return;
      }
      indent_to(out, indent);
      out += "with R.dataflow():\n";
      std::vector<const VarNode*> outputs;
      for (const Binding& b : block.bindings) print_binding(*b, indent + 4, out, &outputs);
      indent_to(out, indent + 4);
      out += "R.output(";
      for (size_t i = 0; i < outputs.size(); ++i) {
        if (i) out += ", ";
        print_var_ref(outputs[i], out);
      }
      out += ")\n";
    };
    auto print_seq = [&](const Expr& e, int indent) {
      if (const auto* seq = e.as<SeqExprNode>()) {
        for (const BindingBlock& block : seq->blocks) print_block(*block, indent);
        indent_to(out, indent);
        print_expr(seq->body, out);
      } else {
        indent_to(out, indent);
        print_expr(e, out);
      }
      out += "\n";
    };
    if (const auto* i = node.as<IfNode>()) {
      out += "if ";
      print_expr(i->cond, out);
      out += ":\n";
      print_seq(i->true_branch, 4);
      out += "else:\n";
      print_seq(i->false_branch, 4);
    } else if (node.as<SeqExprNode>()) {
      print_seq(Expr(node.as<SeqExprNode>()), 0);
    } else {
      print_block(*node.as<BindingBlockNode>(), 0);
    }
  } else if (node.as<ExprNode>()) {
    print_expr(Expr(node.as<ExprNode>()), out);
  } else if (node.as<BindingNode>()) {
    print_binding(*node.as<BindingNode>(), 0, out, nullptr);
  } else if (node.as<PrimExprNode>()) {
    print_prim(PrimExpr(node.as<PrimExprNode>()), out);
  } else if (const auto* v = node.as<VDeviceNode>()) {
    out = vdevice_decl(*v);
  } else if (const auto* t = node.as<TargetDescNode>()) {
    append_target_config(*t, out);
  } else if (const auto* m = node.as<IRModuleNode>()) {
    pop_frame();
    return Printer(opts_).print_module(IRModule(Ref<IRModuleNode>(m)));
  } else {
    out = std::string("<") + node_kind_name(node->kind()) + ">";
  }
  pop_frame();
  out = rstrip(std::move(out));
  if (opts_.show_metadata) detail::append_metadata(metadata_, &out);
  return out;
}

}  // namespace

std::string print_module(const IRModule& mod, const PrintOptions& options) {
  return Printer(options).print_module(mod);
}

std::string print_expr(const ObjectRef& node, const PrintOptions& options) {
  if (!node.defined()) return "None";
  return Printer(options).print_standalone(node);
}

}  // namespace partita::script
