// The `example_npu.*` pattern table: TVM v0.26's names, annotations and order
// (python/tvm/relax/backend/contrib/example_npu/patterns.py). As in TVM, a pattern is registered
// only when its operator exists (Partita has no relax.quantize, relax.dequantize, relax.nn.conv1d,
// relax.nn.relu6, relax.nn.sigmoid or relax.nn.tanh, so those patterns are absent here as they
// are from TVM builds without the ops). TVM's memory and quantization checks are placeholders
// that accept every match; here they accept exactly what the runtime runs (unsupported_call).
#include "example_npu.h"
#include "partita/dpl/pattern.h"
#include "partita/op/registry.h"
#include "partita/runtime/kernel.h"

namespace partita::backend::example_npu {
namespace {

using dpl::is_op;
using dpl::Pattern;
using dpl::wildcard;
using transform::FusionPattern;
using transform::PatternCheckContext;

std::string op_name(const CallNode& call) {
  const auto* op = call.op.as<OpNode>();
  return op ? op->name : "";
}

bool static_f32_tensor(const StructInfo& s) {
  const auto* t = s ? s.as<TensorStructInfoNode>() : nullptr;
  return t && t->dtype == DataType::Float(32) && static_shape(s).has_value();
}

// TVM's _check_npu_memory_constraints and _check_npu_quantization in one: every call of the
// match is one the runtime can run (a real NPU would check its memory tiers and dtypes here).
bool check_npu_constraints(const PatternCheckContext& ctx) {
  const auto* root = ctx.matched_expr.as<CallNode>();
  if (!root || !unsupported_call(*root).empty()) return false;
  for (const auto& [var, value] : ctx.matched_bindings)
    if (const auto* call = value.as<CallNode>(); call && !unsupported_call(*call).empty())
      return false;
  return true;
}

// The fused patterns also keep their intermediate inside: a conv2d whose result is used
// elsewhere as well is not fused with its relu (TVM's example does not check this).
bool check_fused(const PatternCheckContext& ctx) {
  return !transform::has_leaking_intermediate_variables(ctx) && check_npu_constraints(ctx);
}

// TVM's _check_depthwise: groups > 1 (any grouped convolution) goes to the depthwise unit.
bool check_depthwise(const PatternCheckContext& ctx) {
  const auto* conv = ctx.annotated_expr.at("root").as<CallNode>();
  const AttrValue* groups = conv && conv->attrs ? conv->attrs->find("groups") : nullptr;
  const auto* g = groups ? std::get_if<int64_t>(groups) : nullptr;
  return g && *g > 1 && check_npu_constraints(ctx);
}

bool op_exists(const std::string& name) { return op::find_op_def(name) != nullptr; }

// A pattern of one call of `op` on `arg_names.size()` wildcards, annotated as TVM annotates it.
FusionPattern single_op(
    const std::string& name, const std::string& op, const std::vector<std::string>& arg_names,
    std::function<bool(const PatternCheckContext&)> check = check_npu_constraints) {
  FusionPattern f;
  f.name = name;
  std::vector<Pattern> args;
  for (const std::string& a : arg_names) {
    args.push_back(wildcard());
    if (!a.empty()) f.annotation_patterns[a] = args.back();
  }
  f.pattern = is_op(op)(args);
  f.annotation_patterns["root"] = f.pattern;
  f.check = std::move(check);
  return f;
}

// TVM's conv2d_relu_fused_pattern / matmul_relu_fused_pattern.
FusionPattern relu_fused(const std::string& name, const std::string& op, const std::string& inner) {
  FusionPattern f;
  f.name = name;
  Pattern input = wildcard(), weight = wildcard();
  Pattern call = is_op(op)({input, weight});
  f.pattern = is_op("relax.nn.relu")({call});
  f.annotation_patterns = {
      {"input", input}, {"weight", weight}, {inner, call}, {"root", f.pattern}};
  f.check = check_fused;
  return f;
}

}  // namespace

std::string unsupported_call(const CallNode& call) {
  const std::string name = op_name(call);
  if (name.empty()) return "a call of something other than an operator";
  if (!runtime::find_kernel(name)) return name + " has no host kernel";
  for (size_t i = 0; i < call.args.size(); ++i)
    if (!static_f32_tensor(call.args[i]->struct_info_))
      return name + ": argument " + std::to_string(i) + " is not a float32 tensor of static shape";
  const auto* tuple = call.struct_info_ ? call.struct_info_.as<TupleStructInfoNode>() : nullptr;
  if (tuple) {
    for (const StructInfo& field : tuple->fields)
      if (!static_f32_tensor(field))
        return name + ": a result field is not a float32 tensor of static shape";
  } else if (!static_f32_tensor(call.struct_info_)) {
    return name + ": the result is not a float32 tensor of static shape";
  }
  if (call.attrs)
    for (const auto& [key, value] : call.attrs->values)
      if (std::holds_alternative<VDevice>(value))
        return name + ": attribute " + key + " is a virtual device";
  return "";
}

std::vector<FusionPattern> patterns() {
  std::vector<FusionPattern> out;
  // A pattern is made only when its operator exists (is_op refuses unknown operators).
  auto single = [&](const std::string& name, const std::string& op,
                    const std::vector<std::string>& args,
                    std::function<bool(const PatternCheckContext&)> check = check_npu_constraints) {
    if (op_exists(op)) out.push_back(single_op(name, op, args, std::move(check)));
  };
  auto fused = [&](const std::string& name, const std::string& op, const std::string& inner) {
    if (op_exists(op) && op_exists("relax.nn.relu")) out.push_back(relu_fused(name, op, inner));
  };
  // quantization_patterns: relax.quantize / relax.dequantize do not exist in Partita.
  single("example_npu.quantize", "relax.quantize", {"input"});
  single("example_npu.dequantize", "relax.dequantize", {"input"});
  // elementwise_patterns
  for (const char* op : {"add", "multiply", "subtract", "divide"})
    single(std::string("example_npu.") + op, std::string("relax.") + op, {"input1", "input2"});
  // activation_patterns (TVM names relax.nn.sigmoid / relax.nn.tanh, which neither TVM nor
  // Partita defines, so those two are absent in both)
  for (auto [name, op] :
       std::vector<std::pair<const char*, const char*>>{{"example_npu.relu", "relax.nn.relu"},
                                                        {"example_npu.relu6", "relax.nn.relu6"},
                                                        {"example_npu.sigmoid", "relax.nn.sigmoid"},
                                                        {"example_npu.tanh", "relax.nn.tanh"},
                                                        {"example_npu.gelu", "relax.nn.gelu"}})
    single(name, op, {"input"});
  // softmax_patterns
  single("example_npu.softmax", "relax.nn.softmax", {"input"});
  // batch_norm_patterns (gamma, beta and the moments are not annotated in TVM)
  single("example_npu.batch_norm", "relax.nn.batch_norm", {"input", "", "", "", ""});
  // pooling_patterns
  single("example_npu.max_pool2d", "relax.nn.max_pool2d", {"input"});
  single("example_npu.avg_pool2d", "relax.nn.avg_pool2d", {"input"});
  // matmul_patterns: both names TVM registers for one pattern
  single("example_npu.dense", "relax.matmul", {"input", "weight"});
  single("example_npu.matmul", "relax.matmul", {"input", "weight"});
  // conv1d_patterns
  single("example_npu.conv1d", "relax.nn.conv1d", {"input", "weight"});
  // conv2d_patterns, then depthwise (more specific, so later)
  single("example_npu.conv2d", "relax.nn.conv2d", {"input", "weight"});
  single("example_npu.depthwise_conv2d", "relax.nn.conv2d", {"input", "weight"}, check_depthwise);
  // the fused patterns last: highest priority
  fused("example_npu.matmul_relu_fused", "relax.matmul", "matmul");
  fused("example_npu.conv2d_relu_fused", "relax.nn.conv2d", "conv");
  return out;
}

}  // namespace partita::backend::example_npu
