// The cutlass codegen: every function of a module offloaded to "cutlass" becomes one C++
// function of ONE generated translation unit (the module's glue: shape checks, im2col,
// normalization and element-wise kernels, and the GEMM calls); each GEMM runs a CUTLASS 3 sm90a
// kernel from a unit of its class and configuration (gemm_kernel.h), chosen by the profiler
// (profiler.h). nvcc compiles the glue and the units it does not have cached, in parallel, and
// links them into the shared object that travels in the artifact (module_format.h).
//
// Shapes are read from the arguments at run time, so one generated source serves every shape
// its checks allow (symbolic M included) and a model rebuilt with other static shapes but the
// same structure reuses its compiled glue.
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>

#include "attention_kernel.h"
#include "cutlass_codegen.h"
#include "device_code.h"
#include "fused_op.h"
#include "gemm_kernel.h"
#include "module_format.h"
#include "nvcc.h"
#include "partita/codegen/partition_walker.h"
#include "profiler.h"

namespace partita::backend::cutlass {

using codegen::CodegenFunction;
using codegen::UnsupportedFunction;

namespace {

struct Value {
  std::string data;   // C++ expression of the device pointer
  std::string shape;  // C++ expression of the int64_t shape array
  int ndim = 0;
  DataType dtype;
};

std::string c_type(DataType t) {
  if (t == DataType::Float(16)) return "__half";
  if (t == DataType::BFloat16()) return "__nv_bfloat16";
  if (t == DataType::Float(32)) return "float";
  if (t == DataType::Float(64)) return "double";
  if (t == DataType::Int(8)) return "int8_t";
  if (t == DataType::Int(32)) return "int32_t";
  if (t == DataType::Int(64)) return "int64_t";
  return "";
}

int dl_code(DataType t) {
  switch (t.code()) {
    case DataType::Code::Int:
      return 0;
    case DataType::Code::UInt:
      return 1;
    case DataType::Code::Float:
      return 2;
    case DataType::Code::BFloat:
      return 4;
    default:
      return 255;
  }
}

std::string str(int64_t v) { return std::to_string(v); }

bool is_c_identifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

// A row-major (R, C) constant as (C, R): what a K-major weight needs of a (K, N) constant.
Tensor transpose_2d(const Tensor& t) {
  int64_t r = t.shape()[0], c = t.shape()[1];
  Tensor out = Tensor::empty({c, r}, t.dtype());
  size_t e = size_t(t.dtype().bits() / 8);
  auto* src = static_cast<const uint8_t*>(t.data());
  auto* dst = static_cast<uint8_t*>(out.data());
  for (int64_t i = 0; i < r; ++i)
    for (int64_t j = 0; j < c; ++j) std::memcpy(dst + size_t(j * r + i) * e, src + size_t(i * c + j) * e, e);
  return out;
}

std::vector<int64_t> attr_ints(const CallNode& call, const std::string& name, std::vector<int64_t> dflt) {
  if (!call.attrs.defined()) return dflt;
  const AttrValue* v = call.attrs->find(name);
  if (auto* l = v ? std::get_if<std::vector<int64_t>>(v) : nullptr) return *l;
  return dflt;
}

struct GemmUse {
  GemmWorkload workload;
  std::string placeholder;
};

struct ModuleContext {
  const codegen::Target& target;
  codegen::ConstantNamer& namer;
  std::vector<GemmUse> gemms;
  std::map<std::string, AttentionClass> attention;  // the attention units, by symbol
};

class FunctionEmitter {
 public:
  FunctionEmitter(const CodegenFunction& f, ModuleContext& m) : f_(f), m_(m) {}

  std::string emit(CutlassFunction& entry) {
    const Function& fn = f_.func;
    if (!is_c_identifier(f_.symbol)) fail("its symbol is not a C identifier");
    auto* seq = fn->body.as<SeqExprNode>();
    if (!seq) fail("its body is not normalized");
    std::vector<Expr> results;
    if (auto* tup = seq->body.as<TupleNode>())
      results = tup->fields;
    else
      results.push_back(seq->body);
    for (size_t k = 0; k < results.size(); ++k)
      if (auto v = results[k].as_ref<VarNode>(); v && !out_index_.count(v.get())) out_index_[v.get()] = int(k);
    num_params_ = int(fn->params.size());
    codegen::ValueEnv<Value> env;
    for (size_t i = 0; i < fn->params.size(); ++i) env[fn->params[i].get()] = bind_param(fn->params[i], int(i));
    dest_ = &out_index_;
    codegen::walk_partition(fn, env, *this);
    for (size_t k = 0; k < results.size(); ++k) {
      auto* v = results[k].as<VarNode>();
      if (v && written_.count(int(k))) continue;
      Value src = v && env.count(v) ? env[v] : leaf(results[k], env);
      copy_to_output(src, int(k));
    }
    entry.symbol = f_.symbol;
    entry.num_params = num_params_;
    entry.constants = const_names_;
    std::string n_in = str(num_params_ + int(const_names_.size())), n_out = str(int64_t(results.size()));
    std::string out = "extern \"C\" int32_t " + f_.symbol + "(const PtCall* call) {\n";
    out += "  if (call->num_inputs != " + n_in + " || call->num_outputs != " + n_out + ") {\n";
    out += "    snprintf(call->error, call->error_size, \"" + f_.symbol + ": expected " + n_in + " inputs and " +
           n_out + " outputs, got %d and %d\", (int)call->num_inputs, (int)call->num_outputs);\n    return 1;\n  }\n";
    out += "  PtTemps temps(call);\n  cudaStream_t stream = (cudaStream_t)call->stream;\n  (void)stream;\n";
    out += "  return [&]() -> int32_t {\n" + body_.str() + "    return 0;\n  }();\n}\n";
    return out;
  }

  // walk_partition's hooks.
  [[noreturn]] void fail(const std::string& why) const { throw UnsupportedFunction(f_.symbol, why); }
  Value leaf(const Expr& e, codegen::ValueEnv<Value>& env) {
    if (auto* v = e.as<VarNode>()) {
      auto it = env.find(v);
      if (it == env.end()) fail("variable '" + v->name_hint + "' is not a tensor computed here");
      return it->second;
    }
    if (auto* c = e.as<ConstantNode>()) return constant(c->data);
    fail(std::string("an argument is a ") + node_kind_name(e->kind()));
  }
  Value lower_op(const CallNode& call, const VarBindingNode&, codegen::ValueEnv<Value>&) {
    fail("operator " + op_name(call) + " outside a cutlass composite");
  }
  Value lower_composite(const Function& inner, codegen::ValueEnv<Value>& params, const VarBindingNode& b) {
    std::string name = inner->attr_string("Composite").value_or("");
    auto* seq = inner->body.as<SeqExprNode>();
    if (!seq || name.rfind("cutlass.", 0) != 0) fail("a local function is not a cutlass composite");
    std::unordered_map<const VarNode*, const CallNode*> calls;
    std::unordered_map<const VarNode*, Expr> values;
    for (const auto& block : seq->blocks)
      for (const auto& bb : block->bindings)
        if (auto* vb = bb.as<VarBindingNode>()) {
          values[vb->var.get()] = vb->value;
          if (auto* c = vb->value.as<CallNode>()) calls[vb->var.get()] = c;
        }
    auto producer = [&](const Expr& e) -> const CallNode* {
      auto* v = e.as<VarNode>();
      auto it = v ? calls.find(v) : calls.end();
      return it == calls.end() ? nullptr : it->second;
    };
    const CallNode* last = producer(seq->body);
    if (!last) fail("composite " + name + " does not end with a call");
    auto operand = [&](const Expr& e) { return leaf(e, params); };
    int k = dest_of(b);
    auto* result = call_info(last);
    if (!result || result->ndim < 0) fail("composite " + name + " has no tensor result");
    if (name == "cutlass.multiply" || name == "cutlass.add") {
      if (std::string why = unsupported_binary(*last); !why.empty()) fail(why);
      return emit_binary(name == "cutlass.add" ? 0 : 1, operand(last->args[0]), operand(last->args[1]), result, k);
    }
    if (name == "cutlass.layer_norm") {
      if (std::string why = unsupported_layer_norm(*last); !why.empty()) fail(why);
      double eps = last->attrs->get<double>("epsilon");
      return emit_norm(false, operand(last->args[0]), operand(last->args[1]), operand(last->args[2]), eps, result, k);
    }
    if (name == "cutlass.rms_norm") {
      std::string why;
      auto r = describe_rms_norm(last, producer, &why);
      if (!r) fail(why);
      if (why = unsupported_rms_norm(*r, result); !why.empty()) fail(why);
      Value w = operand(r->weight);
      return emit_norm(true, operand(r->data), w, w, r->eps, result, k);
    }
    std::string why;
    if (name.find("attention") != std::string::npos) {
      auto a = describe_attention(*last, &why);
      if (!a) fail(name + ": " + why);
      if (name == "cutlass.attention" || name == "cutlass.attention_bias")
        return emit_attention(*last, *a, operand, result, k, nullptr);
      auto bound = [&](const Expr& e) -> Expr {
        auto* v = e.as<VarNode>();
        auto it = v ? values.find(v) : values.end();
        return it == values.end() ? Expr() : it->second;
      };
      auto stacked = describe_stacked_attention(last, bound, &why);
      if (!stacked) fail(name + ": " + why);
      return emit_attention(*last, *a, operand, result, k, &*stacked);
    }
    auto g = describe_fused_gemm(last, producer, &why);
    if (!g) fail(name + ": " + why);
    if (why = unsupported_reason(*g); !why.empty()) fail(name + ": " + why);
    return emit_gemm(*g, operand, result, k);
  }

 private:
  int dest_of(const VarBindingNode& b) const {
    auto it = dest_->find(b.var.get());
    return it == dest_->end() ? -1 : it->second;
  }
  void line(const std::string& s) { body_ << "    " << s << "\n"; }
  std::string fresh(const std::string& hint) { return hint + str(counter_++); }

  std::string ctype(DataType t) const {
    std::string c = c_type(t);
    if (c.empty()) fail("dtype " + t.str() + " is not supported");
    return c;
  }

  // Checks of a tensor argument (kind "argument" / "output") against its dtype and ndim.
  void check_tensor(const std::string& expr, const std::string& what, int ndim, DataType t) {
    line("if (" + expr + ".ndim != " + str(ndim) + " || " + expr + ".dtype_code != " + str(dl_code(t)) + " || " + expr +
         ".dtype_bits != " + str(t.bits()) + ") PT_FAIL(\"" + f_.symbol + ": " + what + " must be a " + str(ndim) +
         "-d " + t.str() + " tensor\");");
  }

  Value bind_param(const Var& p, int i) {
    auto* ti = tensor_info(p);
    if (!ti || ti->ndim < 0 || ti->dtype.is_void())
      fail("parameter '" + p->name_hint + "' is not a tensor of known ndim and dtype");
    std::string in = "call->inputs[" + str(i) + "]";
    check_tensor(in, "argument " + str(i) + " ('" + p->name_hint + "')", ti->ndim, ti->dtype);
    ctype(ti->dtype);
    if (ti->shape)
      for (int d = 0; d < ti->ndim; ++d)
        if (auto cst = as_const_int((*ti->shape)[size_t(d)]))
          line("if (" + in + ".shape[" + str(d) + "] != " + str(*cst) + ") PT_FAIL(\"" + f_.symbol + ": argument " +
               str(i) + " dimension " + str(d) + " is %lld, expected " + str(*cst) + "\", (long long)" + in +
               ".shape[" + str(d) + "]);");
    return Value{in + ".data", in + ".shape", ti->ndim, ti->dtype};
  }

  Value constant(const Tensor& t) {
    ctype(t.dtype());
    std::string name = m_.namer.name_for(t, f_.symbol);
    size_t index = 0;
    while (index < const_names_.size() && const_names_[index] != name) ++index;
    if (index == const_names_.size()) const_names_.push_back(name);
    std::string in = "call->inputs[" + str(num_params_ + int64_t(index)) + "]";
    return Value{in + ".data", in + ".shape", t.ndim(), t.dtype()};
  }

  // Storage for a result: output `k` (checked against the computed shape) or a temporary.
  std::string allocate(const std::string& shape, int ndim, DataType dtype, int k) {
    std::string c = ctype(dtype), data = fresh("buf");
    if (k >= 0 && !written_.count(k)) {
      written_.insert(k);
      std::string o = "call->outputs[" + str(k) + "]";
      check_tensor(o, "output " + str(k), ndim, dtype);
      line("for (int d = 0; d < " + str(ndim) + "; ++d) if (" + o + ".shape[d] != " + shape + "[d]) PT_FAIL(\"" +
           f_.symbol + ": output " + str(k) + " dimension %d is %lld, computed %lld\", d, (long long)" + o +
           ".shape[d], (long long)" + shape + "[d]);");
      line(c + "* " + data + " = (" + c + "*)" + o + ".data;");
    } else {
      line(c + "* " + data + " = (" + c + "*)temps.alloc(sizeof(" + c + ") * (size_t)(pt_numel(" + shape + ", " +
           str(ndim) + ") + 1));");
      line("if (!" + data + ") PT_FAIL(\"" + f_.symbol + ": out of device memory\");");
    }
    return data;
  }

  void copy_to_output(const Value& src, int k) {
    std::string data = allocate(src.shape, src.ndim, src.dtype, k);
    line("PT_CUDA(cudaMemcpyAsync(" + data + ", " + src.data + ", sizeof(" + ctype(src.dtype) + ") * pt_numel(" +
         src.shape + ", " + str(src.ndim) + "), cudaMemcpyDeviceToDevice, stream), \"" + f_.symbol + ": a copy\");");
  }

  std::string declare_shape(int ndim) {
    std::string s = fresh("shape");
    line("int64_t " + s + "[" + str(std::max(ndim, 1)) + "];");
    return s;
  }

  Value emit_binary(int op, const Value& a, const Value& b, const TensorStructInfoNode* result, int k) {
    int on = result->ndim;
    std::string shape = declare_shape(on), bc = fresh("bc");
    line("PtBroadcast " + bc + ";");
    line("if (!pt_broadcast(" + a.shape + ", " + str(a.ndim) + ", " + b.shape + ", " + str(b.ndim) + ", " + shape +
         ", " + str(on) + ", &" + bc + ")) PT_FAIL(\"" + f_.symbol + ": the operands cannot be broadcast\");");
    std::string data = allocate(shape, on, result->dtype, k), t = ctype(result->dtype), n = fresh("n");
    line("int64_t " + n + " = pt_numel(" + shape + ", " + str(on) + ");");
    line("if (" + n + " > 0) pt_binary_kernel<" + t + ", " + str(op) + "><<<pt_blocks(" + n +
         ", 256), 256, 0, stream>>>((const " + t + "*)" + a.data + ", (const " + t + "*)" + b.data + ", " + data +
         ", " + n + ", " + bc + ");");
    line("PT_CUDA(cudaGetLastError(), \"" + f_.symbol + ": launching an element-wise kernel\");");
    return Value{data, shape, on, result->dtype};
  }

  Value emit_norm(bool rms, const Value& x, const Value& gamma, const Value& beta, double eps,
                  const TensorStructInfoNode* result, int k) {
    int nd = x.ndim;
    std::string shape = declare_shape(nd);
    line("for (int d = 0; d < " + str(nd) + "; ++d) " + shape + "[d] = " + x.shape + "[d];");
    std::string data = allocate(shape, nd, result->dtype, k), t = ctype(result->dtype);
    std::string cols = fresh("cols"), rows = fresh("rows");
    line("int64_t " + cols + " = " + shape + "[" + str(nd - 1) + "], " + rows + " = pt_numel(" + shape + ", " +
         str(nd - 1) + ");");
    line("if (" + gamma.shape + "[" + str(gamma.ndim - 1) + "] != " + cols + ") PT_FAIL(\"" + f_.symbol +
         ": the norm's weight does not match the last axis\");");
    char epsbuf[64];
    std::snprintf(epsbuf, sizeof epsbuf, "%.9g", eps);
    line("if (" + rows + " > 0) pt_norm_kernel<" + t + ", " + (rms ? "true" : "false") + "><<<(unsigned)(" + rows +
         " < 65535 * 4 ? " + rows + " : 65535 * 4), 256, 0, stream>>>((const " + t + "*)" + x.data + ", (const " + t +
         "*)" + gamma.data + ", (const " + t + "*)" + beta.data + ", " + data + ", " + rows + ", " + cols + ", " +
         epsbuf + "f);");
    line("PT_CUDA(cudaGetLastError(), \"" + f_.symbol + ": launching a normalization kernel\");");
    return Value{data, shape, nd, result->dtype};
  }

  // Where `nonempty` holds: the unit `sym`'s workspace query, the workspace from the call's
  // temporaries, then the unit with its argument block `args` (a kernel unit's calling convention).
  void emit_unit_call(const std::string& nonempty, const std::string& sym, const std::string& args) {
    line("if (" + nonempty + ") {");
    line("  " + args + ".workspace_size = " + sym + "_workspace(&" + args + ");");
    line("  if (" + args + ".workspace_size) { " + args + ".workspace = temps.alloc(" + args + ".workspace_size); if (!" +
         args + ".workspace) PT_FAIL(\"" + f_.symbol + ": out of device memory\"); }");
    line("  if (" + sym + "(&" + args + ", call->error, call->error_size)) return 1;");
    line("}");
  }

  // relax.nn.attention[_bias] on the attention unit of its class (attention_kernel.h): the
  // operands' extents checked against each other at run time, the bias read through strides
  // that are 0 where it broadcasts. With `stacked`, query, key and value are read in place from
  // one (B, S, W) tensor, each `offsets[i]` elements into its rows.
  template <class Operand>
  Value emit_attention(const CallNode& call, const AttentionCall& at, Operand& operand,
                       const TensorStructInfoNode* result, int k, const StackedQkv* stacked) {
    const codegen::Target& target = m_.target;
    if (target.get_int("sm") < 80) fail("the attention kernel needs sm >= 80");
    const auto* qi = tensor_info(call.args[0]);
    const int64_t d = at.head_dim, dv = at.head_dim_v;
    AttentionClass cls =
        choose_attention_class(at, target.get_int("sm"), target.get_string("attention_kernel"),
                               target.get_string("attention_tile"), target.get_string("attention_schedule"));
    const std::string sym = attention_symbol(cls), ct = ctype(qi->dtype);
    m_.attention.emplace(sym, cls);
    auto require = [&](const std::string& cond, const std::string& what) {
      line("if (!(" + cond + ")) PT_FAIL(\"" + f_.symbol + ": " + what + "\");");
    };
    auto dim = [](const Value& x, int i) { return x.shape + "[" + str(i) + "]"; };
    std::string data[3], row[3], batch, seq_q, seq_kv, heads;
    if (stacked) {
      Value qkv = operand(stacked->qkv);
      const int64_t n = *as_const_int((*qi->shape)[2]);
      require(dim(qkv, 2) + " == " + str(stacked->row), "the stacked query, key and value are not rows of " +
                                                            str(stacked->row));
      for (int i = 0; i < 3; ++i) {
        data[i] = "(const void*)((const " + ct + "*)" + qkv.data + " + " + str(stacked->offsets[i]) + ")";
        row[i] = str(stacked->row);
      }
      batch = dim(qkv, 0), seq_q = seq_kv = dim(qkv, 1), heads = str(n);
    } else {
      Value q = operand(call.args[0]), key = operand(call.args[1]), v = operand(call.args[2]);
      require(dim(q, 3) + " == " + str(d) + " && " + dim(key, 3) + " == " + str(d) + " && " + dim(v, 3) + " == " +
                  str(dv),
              "the attention's head dimensions differ from the compiled ones");
      require(dim(key, 0) + " == " + dim(q, 0) + " && " + dim(v, 0) + " == " + dim(q, 0),
              "the attention's batch sizes differ");
      require(dim(key, 2) + " == " + dim(q, 2) + " && " + dim(v, 2) + " == " + dim(q, 2),
              "the attention's key / value heads differ from the query's");
      require(dim(v, 1) + " == " + dim(key, 1), "the key and value lengths differ");
      data[0] = q.data, data[1] = key.data, data[2] = v.data;
      row[0] = row[1] = dim(q, 2) + " * " + str(d), row[2] = dim(q, 2) + " * " + str(dv);
      batch = dim(q, 0), seq_q = dim(q, 1), seq_kv = dim(key, 1), heads = dim(q, 2);
    }
    std::string shape = declare_shape(4);
    line(shape + "[0] = " + batch + "; " + shape + "[1] = " + seq_q + "; " + shape + "[2] = " + heads + "; " + shape +
         "[3] = " + str(dv) + ";");
    std::string out = allocate(shape, 4, result->dtype, k), a = fresh("attn");
    line("PtAttentionArgs " + a + " = {};");
    line(a + ".q = " + data[0] + "; " + a + ".k = " + data[1] + "; " + a + ".v = " + data[2] + "; " + a + ".out = " +
         out + ";");
    line(a + ".q_row = " + row[0] + "; " + a + ".k_row = " + row[1] + "; " + a + ".v_row = " + row[2] + ";");
    line(a + ".batch = (int32_t)" + batch + "; " + a + ".seq_q = (int32_t)" + seq_q + "; " + a + ".heads = (int32_t)" +
         heads + "; " + a + ".seq_kv = (int32_t)" + seq_kv + "; " + a + ".head_dim = " + str(d) + "; " + a +
         ".head_dim_v = " + str(dv) + ";");
    if (at.bias) {
      Value b = operand(call.args[3]);
      require(dim(b, 3) + " == " + seq_kv, "the bias's last dimension is not the key length");
      const std::string want[3] = {batch, heads, seq_q};
      for (int i = 0; i < 3; ++i)
        require(dim(b, i) + " == 1 || " + dim(b, i) + " == " + want[i], "the bias does not broadcast");
      line(a + ".bias = " + b.data + ";");
      line(a + ".bias_stride_q = " + dim(b, 2) + " == 1 ? 0 : " + dim(b, 3) + ";");
      line(a + ".bias_stride_h = " + dim(b, 1) + " == 1 ? 0 : " + dim(b, 2) + " * " + dim(b, 3) + ";");
      line(a + ".bias_stride_b = " + dim(b, 0) + " == 1 ? 0 : " + dim(b, 1) + " * " + dim(b, 2) + " * " + dim(b, 3) +
           ";");
    }
    char scalebuf[64];
    std::snprintf(scalebuf, sizeof scalebuf, "%.9g", at.scale);
    const std::string mask = at.mask.empty()          ? "PT_MASK_NONE"
                             : at.mask == "TopLeft" ? "PT_MASK_TOP_LEFT"
                                                    : "PT_MASK_BOTTOM_RIGHT";
    if (mask == "PT_MASK_BOTTOM_RIGHT")
      require(seq_kv + " >= " + seq_q, "causal_mask BottomRight with fewer keys than queries");
    line(a + ".scale = " + scalebuf + "f; " + a + ".mask = " + mask + "; " + a + ".stream = call->stream;");
    emit_unit_call("pt_numel(" + shape + ", 4) > 0", sym, a);
    return Value{out, shape, 4, result->dtype};
  }

  template <class Operand>
  Value emit_gemm(const FusedGemm& g, Operand& operand, const TensorStructInfoNode* result, int k) {
    const codegen::Target& target = m_.target;
    int64_t sm = target.get_int("sm");
    if (sm < 90) fail("the CUTLASS 3 GEMM kernels need sm >= 90 (the target has sm=" + str(sm) + ")");
    if (g.in_dtype == DataType::Float(32) && !target.get_bool("tf32"))
      fail("float32 GEMMs run on the tensor cores as TF32: enable the target's tf32 option");
    auto* li = tensor_info(g.lhs);
    auto* ri = tensor_info(g.rhs);
    Value lhs = operand(g.lhs);
    GemmClass cls;
    cls.in = g.in_dtype;
    cls.out = g.out_dtype;
    cls.epilogue.bias = g.bias.defined();
    cls.epilogue.act = int(g.act);
    cls.epilogue.residual_mode = int(g.residual_mode);
    cls.epilogue.post_act = int(g.post_act);
    if (cls.has_c() != g.residual.defined()) fail("a residual without a residual mode (or the converse)");
    Value rhs;
    bool k_major = g.rhs_transposed || g.conv2d;
    if (!k_major && (cls.in == DataType::Float(32) || cls.in == DataType::Int(8))) {
      auto* c = g.rhs.as<ConstantNode>();
      if (!c) fail("a float32 / int8 weight must be constant or transposed");
      rhs = constant(transpose_2d(c->data));  // (K, N) -> (N, K): K-major
      k_major = true;
    } else {
      rhs = operand(g.rhs);
    }
    cls.b_k_major = k_major;
    int64_t n = *as_const_int((*result->shape)[size_t(result->ndim - 1)]);
    int64_t kk = 0;
    std::string m = fresh("m"), batch = fresh("batch"), a = lhs.data;
    int on = result->ndim;
    std::string shape = declare_shape(on);
    GemmWorkload w;
    w.cls = cls;
    w.n = n;
    if (g.conv2d) {
      // All static (the check): (N, H, W, C) * (O, KH, KW, C) -> (N, P, Q, O).
      auto dim = [](const TensorStructInfoNode* t, int d) { return *as_const_int((*t->shape)[size_t(d)]); };
      int64_t bn = dim(li, 0), h = dim(li, 1), wd = dim(li, 2), c = dim(li, 3), kh = dim(ri, 1), kw = dim(ri, 2);
      int64_t p = dim(result, 1), q = dim(result, 2);
      auto st = attr_ints(*g.root, "strides", {1, 1}), dl = attr_ints(*g.root, "dilation", {1, 1});
      auto pad = attr_ints(*g.root, "padding", {0, 0, 0, 0});
      if (st.size() == 1) st = {st[0], st[0]};
      if (dl.size() == 1) dl = {dl[0], dl[0]};
      if (pad.size() == 1) pad = {pad[0], pad[0], pad[0], pad[0]};
      if (pad.size() == 2) pad = {pad[0], pad[1], pad[0], pad[1]};
      kk = kh * kw * c;
      int64_t rows = bn * p * q;
      line("int64_t " + m + " = " + str(rows) + ", " + batch + " = 1;");
      for (int d = 0; d < 4; ++d) line(shape + "[" + str(d) + "] = " + str(dim(result, d)) + ";");
      bool direct = kh == 1 && kw == 1 && st == std::vector<int64_t>{1, 1} && pad == std::vector<int64_t>{0, 0, 0, 0};
      if (!direct) {
        std::string t = ctype(cls.in), cols = fresh("im2col");
        line(t + "* " + cols + " = (" + t + "*)temps.alloc(sizeof(" + t + ") * " + str(rows * kk) + ");");
        line("if (!" + cols + ") PT_FAIL(\"" + f_.symbol + ": out of device memory\");");
        line("pt_im2col_kernel<" + t + "><<<pt_blocks(" + str(rows * kk) + ", 256), 256, 0, stream>>>((const " + t +
             "*)" + lhs.data + ", " + cols + ", " + str(rows) + ", " + str(h) + ", " + str(wd) + ", " + str(c) + ", " +
             str(p) + ", " + str(q) + ", " + str(kh) + ", " + str(kw) + ", " + str(st[0]) + ", " + str(st[1]) + ", " +
             str(pad[0]) + ", " + str(pad[1]) + ", " + str(dl[0]) + ", " + str(dl[1]) + ");");
        line("PT_CUDA(cudaGetLastError(), \"" + f_.symbol + ": launching im2col\");");
        a = cols;
      }
      w.m = rows;
    } else {
      int ln = li->ndim;
      kk = *as_const_int((*ri->shape)[size_t(g.rhs_transposed ? 1 : ri->ndim - 2)]);
      line("if (" + lhs.shape + "[" + str(ln - 1) + "] != " + str(kk) + ") PT_FAIL(\"" + f_.symbol +
           ": the product's K is %lld, expected " + str(kk) + "\", (long long)" + lhs.shape + "[" + str(ln - 1) +
           "]);");
      bool batched = ri->ndim > 2;
      if (batched) {
        line("int64_t " + m + " = " + lhs.shape + "[" + str(ln - 2) + "], " + batch + " = pt_numel(" + lhs.shape +
             ", " + str(ln - 2) + ");");
        for (int d = 0; d + 2 < ln; ++d)
          line("if (" + lhs.shape + "[" + str(d) + "] != " + rhs.shape + "[" + str(d) + "]) PT_FAIL(\"" + f_.symbol +
               ": batch dimensions differ\");");
      } else {
        line("int64_t " + m + " = pt_numel(" + lhs.shape + ", " + str(ln - 1) + "), " + batch + " = 1;");
      }
      for (int d = 0; d + 1 < on; ++d) line(shape + "[" + str(d) + "] = " + lhs.shape + "[" + str(d) + "];");
      line(shape + "[" + str(on - 1) + "] = " + str(n) + ";");
      // Static M when every dimension but K is static (the profiler's workload).
      bool static_m = true;
      int64_t mv = 1, bv = 1;
      for (int d = 0; d + 1 < ln; ++d) {
        auto v = as_const_int((*li->shape)[size_t(d)]);
        if (!v)
          static_m = false;
        else if (batched && d + 2 < ln)
          bv *= *v;
        else
          mv *= *v;
      }
      w.m = static_m ? mv : -1;
      w.batch = static_m ? bv : 1;
    }
    w.k = kk;
    std::string d = allocate(shape, on, result->dtype, k);
    std::string bias = g.bias.defined() ? operand(g.bias).data : "nullptr";
    std::string res = g.residual.defined() ? operand(g.residual).data : "nullptr";
    // Placeholders for the unit's symbol and the split count, filled once kernels are chosen.
    const std::string index = str(int64_t(m_.gemms.size()));
    std::string ph = "@PT_GEMM_" + index + "@";
    m_.gemms.push_back({w, ph});
    std::string ga = fresh("gemm");
    bool batched_b = !g.conv2d && ri->ndim > 2;
    line("PtGemmArgs " + ga + " = {};");
    line(ga + ".m = " + m + "; " + ga + ".n = " + str(n) + "; " + ga + ".k = " + str(kk) + "; " + ga +
         ".batch = " + batch + ";");
    line(ga + ".a = " + a + "; " + ga + ".lda = " + str(kk) + "; " + ga + ".batch_stride_a = " + m + " * " + str(kk) +
         ";");
    line(ga + ".b = " + rhs.data + "; " + ga + ".ldb = " + str(k_major ? kk : n) + "; " + ga +
         ".batch_stride_b = " + (batched_b ? str(kk * n) : std::string("0")) + ";");
    line(ga + ".bias = " + bias + "; " + ga + ".c = " + res + "; " + ga + ".ldc = " + str(n) + "; " + ga +
         ".batch_stride_c = " + m + " * " + str(n) + ";");
    line(ga + ".d = " + d + "; " + ga + ".ldd = " + str(n) + "; " + ga + ".batch_stride_d = " + m + " * " + str(n) +
         ";");
    line(ga + ".act = " + str(cls.epilogue.act) + "; " + ga + ".c_mode = " + str(cls.epilogue.residual_mode) + "; " +
         ga + ".post_act = " + str(cls.epilogue.post_act) + "; " + ga + ".splits = @PT_SPLITS_" +
         index + "@; " + ga + ".stream = call->stream;");
    emit_unit_call(m + " > 0 && " + batch + " > 0", ph, ga);
    return Value{d, shape, on, result->dtype};
  }

  const CodegenFunction& f_;
  ModuleContext& m_;
  std::ostringstream body_;
  int counter_ = 0;
  int num_params_ = 0;
  std::vector<std::string> const_names_;
  std::unordered_map<const VarNode*, int> out_index_;
  const std::unordered_map<const VarNode*, int>* dest_ = nullptr;
  std::set<int> written_;
};

}  // namespace

NvccOptions nvcc_options(const codegen::Target& target) {
  NvccOptions o;
  o.nvcc = target.get_string("nvcc");
  std::filesystem::path dir = target.get_string("cutlass_dir");
  // Examples 41 and 88 hold CUTLASS's fused multi-head attention (kernel_forward.h) and its
  // Hopper FMHA, which the nvidia-cutlass wheel ships beside the headers.
  o.include_dirs = {(dir / "include").string(), (dir / "tools" / "util" / "include").string(),
                    (dir / "examples" / "41_fused_multi_head_attention").string(),
                    (dir / "examples" / "88_hopper_fmha").string()};
  o.sm = int(target.get_int("sm"));
  o.fast_math = target.get_bool("use_fast_math");
  o.jobs = int(target.get_int("threads"));
  o.cache_dir = target.get_string("cache_dir");
  return o;
}

GeneratedModule generate(const std::vector<CodegenFunction>& functions, const codegen::Target& target,
                         codegen::ConstantNamer& namer) {
  ModuleContext ctx{target, namer, {}};
  GeneratedModule out;
  std::string bodies;
  for (const auto& f : functions) {
    CutlassFunction entry;
    FunctionEmitter emitter(f, ctx);
    bodies += emitter.emit(entry) + "\n";
    out.functions.push_back(std::move(entry));
  }
  for (const auto& g : ctx.gemms) out.workloads.push_back(g.workload);
  out.source = "// Generated by Partita's cutlass backend: the module's functions (one translation unit).\n";
  out.source += kGemmAbi;
  if (!ctx.attention.empty()) {
    out.source += kAttentionAbi;
    out.source += "// The attention kernels (separate units, cached):\n";
  }
  for (const auto& [sym, cls] : ctx.attention) {
    out.source += "extern \"C\" size_t " + sym + "_workspace(const PtAttentionArgs*);\n";
    out.source += "extern \"C\" int32_t " + sym + "(const PtAttentionArgs*, char*, size_t);\n";
    out.units.emplace_back(sym, attention_unit_source(cls));
  }
  out.source += kModulePrelude;
  out.source += "@PT_GEMM_DECLARATIONS@\n" + bodies;
  return out;
}

void bind_kernels(GeneratedModule& m, const std::vector<GemmConfig>& configs) {
  std::set<std::string> declared;
  std::string decls;
  for (size_t i = 0; i < m.workloads.size(); ++i) {
    const GemmClass& cls = m.workloads[i].cls;
    std::string sym = gemm_symbol(cls, configs[i]);
    m.source = replace_all(m.source, "@PT_GEMM_" + std::to_string(i) + "@", sym);
    m.source = replace_all(m.source, "@PT_SPLITS_" + std::to_string(i) + "@", std::to_string(configs[i].splits));
    if (declared.insert(sym).second) {
      decls += "extern \"C\" size_t " + sym + "_workspace(const PtGemmArgs*);\n";
      decls += "extern \"C\" int32_t " + sym + "(const PtGemmArgs*, char*, size_t);\n";
      m.units.emplace_back(sym, gemm_unit_source(cls, configs[i]));
    }
  }
  m.source = replace_all(m.source, "@PT_GEMM_DECLARATIONS@", "// The GEMM kernels (separate units, cached):\n" + decls);
}

codegen::CodegenResult codegen(const std::vector<CodegenFunction>& functions, const codegen::Target& target,
                               const std::map<std::string, Tensor>& const_name_to_constant) {
  codegen::ConstantNamer namer(const_name_to_constant);
  GeneratedModule m = generate(functions, target, namer);
  NvccOptions nvcc = nvcc_options(target);
  ProfileOptions popt;
  popt.enabled = target.get_bool("profile");
  popt.cache_file = target.get_string("profile_cache");
  bind_kernels(m, choose_gemm_configs(m.workloads, nvcc, popt));
  std::vector<std::pair<std::string, std::string>> units{{"the module's glue", m.source}};
  units.insert(units.end(), m.units.begin(), m.units.end());
  std::string so = read_file(link(compile_objects(units, nvcc), true, nvcc));
  std::string bytes = runtime::write_module_sections(kModuleFormat, {m.source, so, write_function_table(m.functions)});
  codegen::CodegenResult result;
  result.modules.push_back(runtime::load_module_from_binary(kModuleFormat.type_key, bytes));
  result.constants = namer.added();
  return result;
}

}  // namespace partita::backend::cutlass
