// The cublas codegen: every offloaded function (one composite per function from
// partition_for_cublas, or a merged partition of several) becomes a GEMM program
// (gemm_program.h) run by the runtime plug-in on cuBLASLt. A function the program cannot express
// is refused with codegen::UnsupportedFunction naming why (build() then runs it as generated CUDA).
#include <set>
#include <unordered_map>

#include "cublas.h"
#include "gemm_program.h"
#include "gemm_rules.h"
#include "module_format.h"
#include "partita/codegen/partition_walker.h"
#include "partita/op/ops.h"

namespace partita::backend::cublas {
namespace {

using codegen::CodegenFunction;
using codegen::ValueEnv;

const TensorStructInfoNode* tensor_of(const Expr& e) {
  return e.defined() && e->struct_info_ ? e->struct_info_.as<TensorStructInfoNode>() : nullptr;
}

class ProgramBuilder {
 public:
  ProgramBuilder(const CodegenFunction& f, codegen::ConstantNamer& namer, std::vector<std::string>& const_names)
      : f_(f), namer_(namer), const_names_(const_names) {}

  GemmFunction build() {
    fn_.symbol = f_.symbol;
    ValueEnv<int> env;
    for (const auto& p : f_.func->params) {
      env[p.get()] = new_value(p, "parameter '" + p->name_hint + "'");
      fn_.inputs.push_back(env[p.get()]);
    }
    for (int v : lower_body(f_.func, env)) {
      if (!gemm_result(v)) fail("it returns a value no GEMM computes");
      fn_.outputs.push_back(v);
    }
    return std::move(fn_);
  }

  [[noreturn]] void fail(const std::string& why) const { throw codegen::UnsupportedFunction(f_.symbol, why); }

  // walk_partition's hooks.
  int leaf(const Expr& e, ValueEnv<int>& env) {
    if (auto* v = e.as<VarNode>()) {
      auto it = env.find(v);
      if (it == env.end()) fail("variable '" + v->name_hint + "' is not a tensor computed here");
      use(it->second);
      return it->second;
    }
    if (auto* c = e.as<ConstantNode>()) {
      std::string name = namer_.name_for(c->data, f_.symbol);
      if (auto it = const_ids_.find(name); it != const_ids_.end()) return it->second;
      int id = new_value(e, "a constant");
      const_ids_[name] = id;
      fn_.constants.emplace_back(id, name);
      if (std::find(const_names_.begin(), const_names_.end(), name) == const_names_.end()) const_names_.push_back(name);
      return id;
    }
    fail(std::string("an argument is a ") + node_kind_name(e->kind()));
  }

  int lower_op(const CallNode& call, const VarBindingNode& binding, ValueEnv<int>& env) {
    const std::string& name = call.op.as<OpNode>()->name;
    Expr result = binding.var;
    if (name == "relax.permute_dims") {
      int x = leaf(call.args[0], env);
      auto* t = tensor_of(call.args[0]);
      if (!t || t->ndim < 2 || !swaps_last_two(op::permute_dims_axes(call, t->ndim), size_t(t->ndim)))
        fail("a permute_dims other than a swap of the last two axes");
      int out = new_value(result, "a transpose");
      transposed_[out] = x;
      return out;
    }
    if (name == "relax.matmul") {
      int a = operand(call.args[0], env), b_view = leaf(call.args[1], env);
      MatmulOperands m{call.args[0], call.args[1], false, result};
      int b = b_view;
      if (auto it = transposed_.find(b_view); it != transposed_.end()) {
        b = it->second;
        m.rhs = exprs_.at(b);
        m.transposed = true;
        absorbed_.insert(b_view);
      } else if (!plain(b)) {
        fail("a matmul operand that is not a tensor");
      }
      std::string why = matmul_unsupported(m);
      if (!why.empty()) fail(why);
      GemmStep g;
      g.a = a;
      g.b = b;
      g.transpose_b = m.transposed;
      g.out = new_value(result, "a matmul");
      g.from = composite_;
      product_of_[g.out] = m.product;
      fn_.gemms.push_back(g);
      return g.out;
    }
    if (name == "relax.add") {
      int x = leaf(call.args[0], env), y = leaf(call.args[1], env);
      // The bias of the latest GEMM (add commutes: bias + product too).
      if (!open_gemm(x) && open_gemm(y)) std::swap(x, y);
      GemmStep* g = open_gemm(x);
      if (!g || g->bias != -1 || g->epilogue != Epilogue::kNone || g->scale_a != -1 || !plain(y))
        fail("an add that is not the bias of a matmul");
      bool matrix = false;
      std::string why = bias_unsupported(product_of_.at(g->out), exprs_.at(y), result, matrix);
      if (!why.empty()) fail(why);
      g->bias = y;
      g->bias_kind = matrix ? BiasKind::kMatrix : BiasKind::kVector;
      return retarget(*g, result);
    }
    if (name == "relax.nn.relu" || name == "relax.nn.gelu") {
      GemmStep* g = open_gemm(leaf(call.args[0], env));
      if (!g || g->epilogue != Epilogue::kNone || g->scale_a != -1) fail(name + " that does not follow a matmul");
      g->epilogue = name == "relax.nn.relu" ? Epilogue::kRelu : Epilogue::kGelu;
      return retarget(*g, result);
    }
    if (name == "relax.multiply") {
      int x = leaf(call.args[0], env), y = leaf(call.args[1], env);
      if (!open_gemm(x) && open_gemm(y)) std::swap(x, y);
      if (GemmStep* g = open_gemm(x)) {
        auto it = scales_.find(y);
        if (it == scales_.end() || g->bias != -1 || g->epilogue != Epilogue::kNone || g->scale_a != -1)
          fail("a multiply that is not the scale of a matmul");
        absorbed_.insert(y);
        g->scale_a = it->second.first;
        g->scale_b = it->second.second;
        scaled_[g->out] = {exprs_.at(g->scale_a), exprs_.at(g->scale_b)};
        return retarget(*g, result);
      }
      // The product of the two scales, folded into the GEMM that it multiplies.
      if (!plain(x) || !plain(y)) fail("a multiply of something other than tensors");
      int out = new_value(result, "a scale");
      scales_[out] = {x, y};
      return out;
    }
    if (name == "relax.astype") {
      GemmStep* g = open_gemm(leaf(call.args[0], env));
      if (!g || g->scale_a == -1) fail("an astype that does not follow a scaled matmul");
      auto [sa, sb] = scaled_.at(g->out);
      std::string why = scale_unsupported(product_of_.at(g->out), sa, sb, result);
      if (!why.empty()) fail(why);
      int out = retarget(*g, result);
      return out;
    }
    fail("operator " + name + " is not a GEMM or its epilogue");
  }

  int lower_composite(const Function& inner, ValueEnv<int>& params, const VarBindingNode&) {
    std::string outer = composite_;
    composite_ = inner->attr_string("Composite").value_or("");
    std::vector<int> out = lower_body(inner, params);
    composite_ = outer;
    if (out.size() != 1) fail("a composite returns a tuple");
    if (!gemm_result(out[0])) fail("a composite whose result no GEMM computes");
    return out[0];
  }

 private:
  std::vector<int> lower_body(const Function& fn, ValueEnv<int>& env) {
    std::vector<int> out;
    for (const Expr& r : codegen::partition_results(codegen::walk_partition(fn, env, *this)))
      out.push_back(leaf(r, env));
    return out;
  }

  int new_value(const Expr& e, const std::string& what) {
    auto* t = tensor_of(e);
    if (!t || !t->shape) fail(what + " is not a tensor of known rank");
    GemmValue v;
    v.dtype = t->dtype;
    for (const auto& d : *t->shape) v.shape.push_back(as_const_int(d).value_or(-1));
    fn_.values.push_back(std::move(v));
    exprs_.push_back(e);
    return int(fn_.values.size()) - 1;
  }

  // Reading a value: an epilogue's operand disappears into its GEMM, so no one else may read it.
  void use(int v) {
    if (absorbed_.count(v)) fail("an intermediate result of a GEMM's epilogue is used outside it");
  }
  bool plain(int v) const { return !transposed_.count(v) && !scales_.count(v); }
  int operand(const Expr& e, ValueEnv<int>& env) {
    int v = leaf(e, env);
    if (!plain(v)) fail("a matmul's left-hand side is a transpose or a scale");
    return v;
  }
  bool gemm_result(int v) const {
    for (const auto& g : fn_.gemms)
      if (g.out == v) return true;
    return false;
  }
  // The latest GEMM, when `v` is its result (an epilogue may still be added to it).
  GemmStep* open_gemm(int v) {
    if (fn_.gemms.empty() || fn_.gemms.back().out != v) return nullptr;
    return &fn_.gemms.back();
  }
  // The GEMM now computes `result` (its earlier result becomes an intermediate).
  int retarget(GemmStep& g, const Expr& result) {
    absorbed_.insert(g.out);
    int out = new_value(result, "an epilogue's result");
    product_of_[out] = product_of_.at(g.out);
    if (auto it = scaled_.find(g.out); it != scaled_.end()) scaled_[out] = it->second;
    g.out = out;
    return out;
  }

  const CodegenFunction& f_;
  codegen::ConstantNamer& namer_;
  std::vector<std::string>& const_names_;
  GemmFunction fn_;
  std::vector<Expr> exprs_;  // value id -> the expression it stands for
  std::map<std::string, int> const_ids_;
  std::map<int, int> transposed_;                  // transpose view -> the tensor it transposes
  std::map<int, std::pair<int, int>> scales_;      // scale product -> its two factors
  std::map<int, Expr> product_of_;                 // GEMM result -> its relax.matmul
  std::map<int, std::pair<Expr, Expr>> scaled_;    // GEMM result -> its scales
  std::set<int> absorbed_;
  std::string composite_;
};

}  // namespace

codegen::CodegenResult codegen(const std::vector<CodegenFunction>& functions, const codegen::Target& target,
                               const std::map<std::string, Tensor>& const_name_to_constant) {
  codegen::ConstantNamer namer(const_name_to_constant);
  std::vector<std::string> const_names;
  GemmProgram program;
  program.allow_tf32 = target.get_bool("allow_tf32");
  program.autotune_top_k = target.get_int("autotune_top_k");
  program.workspace_mib = target.get_int("workspace_mib");
  if (program.autotune_top_k < 0 || program.autotune_top_k > 64)
    throw_error("ValueError", "Target cublas: autotune_top_k must be in [0, 64], got " + std::to_string(program.autotune_top_k));
  if (program.workspace_mib < 0 || program.workspace_mib > 4096)
    throw_error("ValueError", "Target cublas: workspace_mib must be in [0, 4096], got " + std::to_string(program.workspace_mib));
  for (const auto& f : functions) program.functions.push_back(ProgramBuilder(f, namer, const_names).build());
  return codegen::module_from_bytes(
      kModuleFormat.type_key,
      runtime::write_module_sections(kModuleFormat, {program_to_json(program).dump()}), namer);
}

}  // namespace partita::backend::cublas
