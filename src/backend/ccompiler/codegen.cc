// The ccompiler codegen: C source for each offloaded function, compiled into one shared object
// per RunCodegen call (see README.md).
//
// Each function becomes `int32_t <symbol>(inputs, n_in, outputs, n_out)` per the runtime's C ABI.
// Shapes are computed at run time from the arguments (so symbolic dimensions need nothing
// special) and checked against the parameters' static dimensions and against the output
// tensors the caller allocated. Composite calls are expanded in place. Intermediates are
// malloc-ed and freed before returning; values that are outputs are written in place.
#include "ccompiler.h"

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <unordered_map>

#include "c_prelude.h"
#include "module_format.h"
#include "partita/codegen/partition_walker.h"
#include "partita/ir/functor.h"
#include "partita/support/temp_dir.h"

namespace partita::backend::ccompiler {

using codegen::CodegenFunction;
using codegen::UnsupportedFunction;

namespace {

struct CType {
  const char* name;
  const char* suffix;
  uint8_t code, bits;
};

std::optional<CType> c_type_of(DataType t) {
  if (t == DataType::Float(32)) return CType{"float", "f32", 2, 32};
  if (t == DataType::Float(64)) return CType{"double", "f64", 2, 64};
  if (t == DataType::Int(32)) return CType{"int32_t", "i32", 0, 32};
  if (t == DataType::Int(64)) return CType{"int64_t", "i64", 0, 64};
  return std::nullopt;
}

bool is_c_identifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

// A tensor value in the generated code.
struct Value {
  std::string data;   // C expression of the element pointer
  std::string shape;  // C expression of the int64_t shape array
  int ndim = 0;
  DataType dtype;
};

class FunctionEmitter {
 public:
  FunctionEmitter(const CodegenFunction& f, codegen::ConstantNamer& namer, std::set<std::string>& kernels,
                  std::map<std::string, int>& const_index, std::vector<std::string>& const_names,
                  std::string& const_decls)
      : f_(f), namer_(namer), kernels_(kernels), const_index_(const_index), const_names_(const_names),
        const_decls_(const_decls) {}

  std::string emit() {
    const Function& fn = f_.func;
    if (!is_c_identifier(f_.symbol)) fail("its symbol is not a C identifier");
    // Outputs: the body's result (a variable, or a tuple of them).
    auto* seq = fn->body.as<SeqExprNode>();
    if (!seq) fail("its body is not normalized");
    std::vector<Expr> results;
    if (auto* tup = seq->body.as<TupleNode>()) results = tup->fields;
    else results.push_back(seq->body);
    for (size_t k = 0; k < results.size(); ++k)
      if (auto v = results[k].as_ref<VarNode>(); v && !out_index_.count(v.get())) out_index_[v.get()] = int(k);

    line("int32_t " + f_.symbol + "(const PartitaTensorC* in, int32_t n_in, PartitaTensorC* out, int32_t n_out) {");
    line("  int32_t rc = 0;");
    line("  void* tmp[" + std::to_string(kMaxTemps) + "] = {0};");
    line("  int ntmp = 0;");
    line("  (void)ntmp;");
    line("  if (n_in != " + std::to_string(fn->params.size()) + " || n_out != " + std::to_string(results.size()) +
         ") PT_FAIL(\"" + f_.symbol + ": expected " + std::to_string(fn->params.size()) + " inputs and " +
         std::to_string(results.size()) + " outputs, got %d and %d\", (int)n_in, (int)n_out);");
    std::unordered_map<const VarNode*, Value> env;
    for (size_t i = 0; i < fn->params.size(); ++i) env[fn->params[i].get()] = bind_param(fn->params[i], int(i));
    emit_body(fn, env, out_index_);
    for (size_t k = 0; k < results.size(); ++k) {
      auto* v = results[k].as<VarNode>();
      if (v && written_.count(int(k))) continue;
      Value src = v && env.count(v) ? env[v] : leaf(results[k], env);
      copy_to_output(src, int(k));
    }
    line("done:");
    line("  for (int i = 0; i < ntmp; ++i) free(tmp[i]);");
    line("  return rc;");
    line("}");
    return body_.str();
  }

 private:
  static constexpr int kMaxTemps = 4096;

  [[noreturn]] void fail(const std::string& why) const { throw UnsupportedFunction(f_.symbol, why); }

  void line(const std::string& s) { body_ << s << "\n"; }
  std::string fresh(const std::string& hint) { return hint + std::to_string(counter_++); }

  static const TensorStructInfoNode* tensor_info(const Expr& e) {
    return e->struct_info_ ? e->struct_info_.as<TensorStructInfoNode>() : nullptr;
  }

  CType ctype(DataType t) const {
    auto c = c_type_of(t);
    if (!c) fail("dtype " + (t.is_void() ? std::string("void") : t.str()) + " is not supported");
    return *c;
  }

  Value bind_param(const Var& p, int i) {
    auto* ti = tensor_info(p);
    if (!ti || ti->ndim < 0 || ti->dtype.is_void()) fail("parameter '" + p->name_hint + "' is not a tensor of known ndim and dtype");
    CType c = ctype(ti->dtype);
    std::string ix = std::to_string(i);
    line("  if (in[" + ix + "].ndim != " + std::to_string(ti->ndim) + " || in[" + ix + "].dtype_code != " +
         std::to_string(c.code) + " || in[" + ix + "].dtype_bits != " + std::to_string(c.bits) + ") PT_FAIL(\"" +
         f_.symbol + ": argument " + ix + " ('" + p->name_hint + "') must be a " + std::to_string(ti->ndim) +
         "-d " + ti->dtype.str() + " tensor\");");
    if (ti->shape) {
      for (int d = 0; d < ti->ndim; ++d) {
        const PrimExpr& dim = (*ti->shape)[d];
        std::string actual = "in[" + ix + "].shape[" + std::to_string(d) + "]";
        std::string where = f_.symbol + ": argument " + ix + " ('" + p->name_hint + "') dimension " + std::to_string(d);
        if (auto cst = as_const_int(dim)) {
          line("  if (" + actual + " != " + std::to_string(*cst) + ") PT_FAIL(\"" + where + " is %lld, expected " +
               std::to_string(*cst) + "\", (long long)" + actual + ");");
        } else if (auto* pv = dim.as<PrimVarNode>()) {
          auto it = sym_.find(pv);
          if (it == sym_.end()) {
            std::string name = fresh("sym_");
            line("  int64_t " + name + " = " + actual + ";");
            sym_[pv] = name;
          } else {
            line("  if (" + actual + " != " + it->second + ") PT_FAIL(\"" + where + " is %lld, but '" + pv->name +
                 "' is %lld\", (long long)" + actual + ", (long long)" + it->second + ");");
          }
        }
      }
    }
    return Value{"((" + std::string(c.name) + "*)in[" + ix + "].data)", "in[" + ix + "].shape", ti->ndim, ti->dtype};
  }

  Value constant(const ConstantNode* c) {
    const Tensor& t = c->data;
    CType ct = ctype(t.dtype());
    std::string name = namer_.name_for(t, f_.symbol);
    auto it = const_index_.find(name);
    int index;
    if (it == const_index_.end()) {
      index = int(const_names_.size());
      const_index_[name] = index;
      const_names_.push_back(name);
      std::string shape = "{";
      for (size_t d = 0; d < t.shape().size(); ++d) shape += (d ? ", " : "") + std::to_string(t.shape()[d]) + "LL";
      if (t.shape().empty()) shape += "0";
      shape += "}";
      const_decls_ += "static const int64_t pt_const_shape" + std::to_string(index) + "[] = " + shape + ";\n";
      const_decls_ += "#define PT_CONST" + std::to_string(index) + "_NDIM " + std::to_string(t.ndim()) + "\n";
      const_decls_ += "#define PT_CONST" + std::to_string(index) + "_CODE " + std::to_string(ct.code) + "\n";
      const_decls_ += "#define PT_CONST" + std::to_string(index) + "_BITS " + std::to_string(ct.bits) + "\n";
    } else {
      index = it->second;
    }
    std::string ix = std::to_string(index);
    line("  if (!pt_const_data[" + ix + "]) PT_FAIL(\"" + f_.symbol + ": constant '" + name + "' was not set\");");
    return Value{"((" + std::string(ct.name) + "*)pt_const_data[" + ix + "])", "pt_const_shape" + ix, t.ndim(),
                 t.dtype()};
  }

  Value leaf(const Expr& e, std::unordered_map<const VarNode*, Value>& env) {
    if (auto* v = e.as<VarNode>()) {
      auto it = env.find(v);
      if (it == env.end()) fail("variable '" + v->name_hint + "' is not a tensor computed here");
      return it->second;
    }
    if (auto* c = e.as<ConstantNode>()) return constant(c);
    fail(std::string("an argument is a ") + node_kind_name(e->kind()));
  }

  // Storage for a result of `dtype`, `ndim`, with shape array `shape`: output `k` when >= 0.
  std::string allocate(const std::string& shape, int ndim, DataType dtype, int k) {
    CType c = ctype(dtype);
    std::string data = fresh("buf_");
    if (k >= 0 && !written_.count(k)) {
      written_.insert(k);
      std::string ks = std::to_string(k);
      line("  if (out[" + ks + "].ndim != " + std::to_string(ndim) + " || out[" + ks + "].dtype_code != " +
           std::to_string(c.code) + " || out[" + ks + "].dtype_bits != " + std::to_string(c.bits) + ") PT_FAIL(\"" +
           f_.symbol + ": output " + ks + " has the wrong ndim or dtype\");");
      line("  for (int d = 0; d < " + std::to_string(ndim) + "; ++d) if (out[" + ks + "].shape[d] != " + shape +
           "[d]) PT_FAIL(\"" + f_.symbol + ": output " + ks + " dimension %d is %lld, computed %lld\", d, (long long)out[" +
           ks + "].shape[d], (long long)" + shape + "[d]);");
      line("  " + std::string(c.name) + "* " + data + " = (" + c.name + "*)out[" + ks + "].data;");
    } else {
      line("  if (ntmp >= " + std::to_string(kMaxTemps) + ") PT_FAIL(\"" + f_.symbol + ": too many temporaries\");");
      line("  " + std::string(c.name) + "* " + data + " = (" + c.name + "*)malloc(sizeof(" + c.name +
           ") * (size_t)(pt_numel(" + shape + ", " + std::to_string(ndim) + ") + 1));");
      line("  if (!" + data + ") PT_FAIL(\"" + f_.symbol + ": out of memory\");");
      line("  tmp[ntmp++] = " + data + ";");
    }
    return data;
  }

  void copy_to_output(const Value& src, int k) {
    CType c = ctype(src.dtype);
    std::string data = allocate(src.shape, src.ndim, src.dtype, k);
    line("  memcpy(" + data + ", " + src.data + ", sizeof(" + c.name + ") * (size_t)pt_numel(" + src.shape + ", " +
         std::to_string(src.ndim) + "));");
  }

  std::string kernel(const std::string& kind, DataType t) {
    CType c = ctype(t);
    std::string name = "pt_" + kind + "_" + c.suffix;
    kernels_.insert(kind + " " + c.name + " " + c.suffix);
    return name;
  }

  Value emit_op(const std::string& op, const CallNode* call, std::unordered_map<const VarNode*, Value>& env,
                const TensorStructInfoNode* result, int k) {
    if (!result || result->ndim < 0) fail("the result of " + op + " has no known ndim");
    std::vector<Value> args;
    for (const auto& a : call->args) args.push_back(leaf(a, env));
    for (const auto& a : args)
      if (a.dtype != args[0].dtype) fail(op + " mixes dtypes " + a.dtype.str() + " and " + args[0].dtype.str());
    if (result->dtype != args[0].dtype) fail(op + " changes the dtype");
    int on = result->ndim;
    if (on > 16) fail(op + " has more than 16 dimensions");
    std::string shape = fresh("shape_");
    line("  int64_t " + shape + "[" + std::to_string(std::max(on, 1)) + "];");
    static const std::map<std::string, std::string> binary = {
        {"relax.add", "add"}, {"relax.subtract", "sub"}, {"relax.multiply", "mul"}, {"relax.divide", "div"}};
    if (auto it = binary.find(op); it != binary.end()) {
      if (args.size() != 2) fail(op + " expects 2 arguments");
      if (it->second == "div" && !args[0].dtype.is_float()) fail("integer division is not supported");
      const Value &a = args[0], &b = args[1];
      if (std::max(a.ndim, b.ndim) != on) fail(op + ": unexpected result ndim");
      line("  if (!pt_broadcast(" + a.shape + ", " + std::to_string(a.ndim) + ", " + b.shape + ", " +
           std::to_string(b.ndim) + ", " + shape + ")) PT_FAIL(\"" + f_.symbol + ": " + op +
           ": shapes cannot be broadcast\");");
      std::string data = allocate(shape, on, result->dtype, k);
      line("  " + kernel(it->second, a.dtype) + "(" + a.data + ", " + a.shape + ", " + std::to_string(a.ndim) + ", " +
           b.data + ", " + b.shape + ", " + std::to_string(b.ndim) + ", " + data + ", " + shape + ", " +
           std::to_string(on) + ");");
      return Value{data, shape, on, result->dtype};
    }
    if (op == "relax.nn.relu") {
      const Value& a = args.at(0);
      line("  for (int d = 0; d < " + std::to_string(on) + "; ++d) " + shape + "[d] = " + a.shape + "[d];");
      std::string data = allocate(shape, on, result->dtype, k);
      line("  " + kernel("relu", a.dtype) + "(" + a.data + ", " + data + ", pt_numel(" + shape + ", " +
           std::to_string(on) + "));");
      return Value{data, shape, on, result->dtype};
    }
    if (op == "relax.matmul") {
      const Value &a = args.at(0), &b = args.at(1);
      if (a.ndim < 2 || b.ndim < 2) fail("matmul of a 1-d operand is not supported");
      if (call->attrs.defined())
        if (const AttrValue* od = call->attrs->find("out_dtype"))
          if (auto* dt = std::get_if<DataType>(od); dt && !dt->is_void() && *dt != a.dtype)
            fail("matmul with out_dtype " + dt->str() + " is not supported");
      std::string as = a.shape, bs = b.shape, an = std::to_string(a.ndim), bn = std::to_string(b.ndim);
      line("  if (" + as + "[" + an + " - 1] != " + bs + "[" + bn + " - 2]) PT_FAIL(\"" + f_.symbol +
           ": matmul: inner dimensions %lld and %lld differ\", (long long)" + as + "[" + an + " - 1], (long long)" +
           bs + "[" + bn + " - 2]);");
      line("  if (!pt_broadcast(" + as + ", " + an + " - 2, " + bs + ", " + bn + " - 2, " + shape +
           ")) PT_FAIL(\"" + f_.symbol + ": matmul: batch dimensions cannot be broadcast\");");
      line("  " + shape + "[" + std::to_string(on - 2) + "] = " + as + "[" + an + " - 2];");
      line("  " + shape + "[" + std::to_string(on - 1) + "] = " + bs + "[" + bn + " - 1];");
      std::string data = allocate(shape, on, result->dtype, k);
      line("  " + kernel("matmul", a.dtype) + "(" + a.data + ", " + as + ", " + an + ", " + b.data + ", " + bs + ", " +
           bn + ", " + data + ", " + shape + ", " + std::to_string(on) + ");");
      return Value{data, shape, on, result->dtype};
    }
    fail("operator " + op + " is not supported");
  }

  // Emits the bindings of `fn`; `dest` maps variables to the output index they are written to
  // (so a result is computed in place in its output). Returns fn's body.
  const SeqExprNode& emit_body(const Function& fn, std::unordered_map<const VarNode*, Value>& env,
                               const std::unordered_map<const VarNode*, int>& dest) {
    const auto* outer = dest_;
    dest_ = &dest;
    const SeqExprNode& seq = codegen::walk_partition(fn, env, *this);
    dest_ = outer;
    return seq;
  }

  // walk_partition's hooks.
  template <class V, class L>
  friend const SeqExprNode& codegen::walk_partition(const Function&, codegen::ValueEnv<V>&, L&);
  int dest_of(const VarBindingNode& b) const {
    auto it = dest_->find(b.var.get());
    return it == dest_->end() ? -1 : it->second;
  }
  Value lower_op(const CallNode& call, const VarBindingNode& b, std::unordered_map<const VarNode*, Value>& env) {
    return emit_op(call.op.as<OpNode>()->name, &call, env, tensor_info(b.var), dest_of(b));
  }
  Value lower_composite(const Function& inner, std::unordered_map<const VarNode*, Value>& params,
                        const VarBindingNode& b) {
    std::unordered_map<const VarNode*, int> inner_dest;
    int k = dest_of(b);
    auto* iseq = inner->body.as<SeqExprNode>();
    if (k >= 0 && iseq)
      if (auto* rv = iseq->body.as<VarNode>()) inner_dest[rv] = k;
    const SeqExprNode& seq = emit_body(inner, params, inner_dest);
    if (!seq.body.as<VarNode>() && !seq.body.as<ConstantNode>()) fail("a composite returns a non-tensor");
    return leaf(seq.body, params);
  }

  const std::unordered_map<const VarNode*, int>* dest_ = nullptr;
  const CodegenFunction& f_;
  codegen::ConstantNamer& namer_;
  std::set<std::string>& kernels_;
  std::map<std::string, int>& const_index_;
  std::vector<std::string>& const_names_;
  std::string& const_decls_;
  std::ostringstream body_;
  int counter_ = 0;
  std::unordered_map<const PrimVarNode*, std::string> sym_;
  std::unordered_map<const VarNode*, int> out_index_;
  std::set<int> written_;
};

std::string kernel_definitions(const std::set<std::string>& kernels) {
  std::string out;
  for (const auto& k : kernels) {
    std::istringstream in(k);
    std::string kind, type, suffix;
    in >> kind >> type >> suffix;
    std::string name = "pt_" + kind + "_" + suffix;
    if (kind == "add") out += "PT_BINARY(" + name + ", " + type + ", x + y)\n";
    else if (kind == "sub") out += "PT_BINARY(" + name + ", " + type + ", x - y)\n";
    else if (kind == "mul") out += "PT_BINARY(" + name + ", " + type + ", x * y)\n";
    else if (kind == "div") out += "PT_BINARY(" + name + ", " + type + ", x / y)\n";
    else if (kind == "relu") out += "PT_UNARY(" + name + ", " + type + ", x > 0 ? x : 0)\n";
    else if (kind == "matmul") out += "PT_MATMUL(" + name + ", " + type + ")\n";
  }
  return out;
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  return out + "'";
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

std::string generate_source(const std::vector<CodegenFunction>& functions, codegen::ConstantNamer& namer,
                            std::vector<std::string>& const_names) {
  std::set<std::string> kernels;
  std::map<std::string, int> const_index;
  std::string const_decls, bodies;
  for (const auto& f : functions) {
    FunctionEmitter emitter(f, namer, kernels, const_index, const_names, const_decls);
    bodies += emitter.emit() + "\n";
  }
  std::string src = kPrelude;
  src += kernel_definitions(kernels) + "\n";
  size_t nconst = const_names.size();
  src += "/* Named constants, set by the runtime at load through partita_set_constant. */\n";
  src += "static void* pt_const_data[" + std::to_string(std::max<size_t>(nconst, 1)) + "];\n";
  src += const_decls;
  src += "int32_t partita_set_constant(const char* name, const PartitaTensorC* t) {\n";
  for (size_t i = 0; i < nconst; ++i) {
    std::string ix = std::to_string(i);
    src += "  if (strcmp(name, \"" + const_names[i] + "\") == 0) {\n";
    src += "    if (t->ndim != PT_CONST" + ix + "_NDIM || t->dtype_code != PT_CONST" + ix +
           "_CODE || t->dtype_bits != PT_CONST" + ix + "_BITS) return 1;\n";
    src += "    for (int d = 0; d < t->ndim; ++d) if (t->shape[d] != pt_const_shape" + ix + "[d]) return 1;\n";
    src += "    pt_const_data[" + ix + "] = t->data;\n    return 0;\n  }\n";
  }
  src += "  (void)t;\n  snprintf(pt_error, sizeof pt_error, \"unknown constant %s\", name);\n  return 1;\n}\n\n";
  src += bodies;
  return src;
}

std::string compile_shared_object(const std::string& source, const codegen::Target& target) {
  namespace fs = std::filesystem;
  TempDir temp("partita_ccompiler_", "ccompiler");
  const fs::path& dir = temp.path();
  fs::path src = dir / "module.c", so = dir / "module.so", log = dir / "compile.log";
  {
    std::ofstream out(src, std::ios::binary);
    out << source;
    if (!out) throw_error("IOError", "ccompiler: cannot write " + src.string());
  }
  std::string cmd = shell_quote(target.get_string("cc"));
  for (const auto& flag : target.get_string_list("cflags")) cmd += " " + shell_quote(flag);
  cmd += " -shared -fPIC -o " + shell_quote(so.string()) + " " + shell_quote(src.string()) + " > " +
         shell_quote(log.string()) + " 2>&1";
  int rc = std::system(cmd.c_str());
  if (rc != 0 || !fs::exists(so)) {
    std::string output = read_file(log);
    if (output.size() > 4000) output = output.substr(0, 4000) + "\n...";
    throw_error("CompileError", "ccompiler: `" + target.str() + "` failed to compile the generated C (exit status " +
                                    std::to_string(rc) + "):\n" + output);
  }
  return read_file(so);
}

codegen::CodegenResult codegen(const std::vector<CodegenFunction>& functions, const codegen::Target& target,
                               const std::map<std::string, Tensor>& const_name_to_constant) {
  codegen::ConstantNamer namer(const_name_to_constant);
  std::vector<std::string> const_names;
  std::string source = generate_source(functions, namer, const_names);
  std::string so = compile_shared_object(source, target);
  std::vector<std::string> symbols;
  for (const auto& f : functions) symbols.push_back(f.symbol);
  std::string bytes = runtime::write_module_sections(
      kModuleFormat, {source, runtime::dso_module_binary(so, symbols, const_names)});
  return codegen::module_from_bytes(kModuleFormat.type_key, bytes, namer);
}

}  // namespace partita::backend::ccompiler
