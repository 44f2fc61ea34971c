// The `dnnl.*` fusion patterns. Later entries have higher priority, so plain ops come first and
// the longest fused chains last. Each pattern's check rejects what the codegen could not lower
// (dtype, layouts, symbolic shapes), so such calls stay on the host instead of failing a build.
#include <optional>

#include "dnnl.h"
#include "partita/dpl/pattern.h"

namespace partita::backend::dnnl {

using dpl::is_op;
using dpl::Pattern;
using dpl::wildcard;
using transform::FusionPattern;
using transform::PatternCheckContext;

namespace {

// The most inputs of a concat the backend takes (DenseNet-201's widest has 49).
constexpr int kMaxConcatInputs = 64;

bool check_match(const PatternCheckContext& ctx) {
  if (transform::has_leaking_intermediate_variables(ctx)) return false;
  for (const auto& [var, value] : ctx.matched_bindings)
    if (auto* call = value.as<CallNode>(); call && !unsupported_reason(*call).empty()) return false;
  if (auto* call = ctx.matched_expr.as<CallNode>(); call && !unsupported_reason(*call).empty()) return false;
  return true;
}

FusionPattern entry(const std::string& name, Pattern pattern) {
  FusionPattern p;
  p.name = "dnnl." + name;
  p.pattern = std::move(pattern);
  p.check = check_match;
  return p;
}

// Activations fused as eltwise post-ops (clip: relu6 and other bounded ReLUs).
const std::vector<std::pair<std::string, std::string>>& activations() {
  static const std::vector<std::pair<std::string, std::string>> acts = {
      {"relu", "relax.nn.relu"},   {"gelu", "relax.nn.gelu"},         {"gelu_tanh", "relax.nn.gelu_tanh"},
      {"sigmoid", "relax.sigmoid"}, {"tanh", "relax.tanh"},            {"silu", "relax.nn.silu"},
      {"clip", "relax.clip"}};
  return acts;
}

Pattern activation_of(const std::string& op, Pattern x) {
  if (op == "relax.clip") return is_op(op)({x, wildcard(), wildcard()});
  return is_op(op)({x});
}

}  // namespace

std::vector<FusionPattern> dnnl_patterns() {
  std::vector<FusionPattern> out;
  for (const char* u : {"relu", "gelu", "gelu_tanh", "silu"})
    out.push_back(entry(u, is_op(std::string("relax.nn.") + u)({wildcard()})));
  for (const char* u : {"sigmoid", "tanh", "exp", "sqrt", "abs"})
    out.push_back(entry(u, is_op(std::string("relax.") + u)({wildcard()})));
  out.push_back(entry("clip", is_op("relax.clip")({wildcard(), wildcard(), wildcard()})));
  out.push_back(entry("add", is_op("relax.add")({wildcard(), wildcard()})));
  out.push_back(entry("multiply", is_op("relax.multiply")({wildcard(), wildcard()})));
  out.push_back(entry("divide", is_op("relax.divide")({wildcard(), wildcard()})));
  out.push_back(entry("max_pool2d", is_op("relax.nn.max_pool2d")({wildcard()})));
  out.push_back(entry("avg_pool2d", is_op("relax.nn.avg_pool2d")({wildcard()})));
  out.push_back(entry("mean", is_op("relax.mean")({wildcard()})));
  out.push_back(entry("adaptive_avg_pool2d", is_op("relax.nn.adaptive_avg_pool2d")({wildcard()})));
  out.push_back(entry("softmax", is_op("relax.nn.softmax")({wildcard()})));
  out.push_back(entry("layer_norm", is_op("relax.nn.layer_norm")({wildcard(), wildcard(), wildcard()})));
  // concat of a tuple of 1 to kMaxConcatInputs tensors, written out field by field, so the
  // composite's parameters are the tensors (not one tuple) and merging joins their producers.
  // (Each field its own wildcard: one pattern node matches one expression; each arity its own
  // name, "dnnl.concat_2", since the registry keeps one pattern per name.)
  for (int arity = 1; arity <= kMaxConcatInputs; ++arity) {
    std::vector<Pattern> fields;
    for (int k = 0; k < arity; ++k) fields.push_back(wildcard());
    out.push_back(entry("concat_" + std::to_string(arity), is_op("relax.concat")({dpl::is_tuple(std::move(fields))})));
  }
  out.push_back(entry("pad", is_op("relax.nn.pad")({wildcard()})));
  // A transpose (one reorder): NCHW <-> NHWC around convnext's channels-last blocks, a channel
  // shuffle, so a partition does not end at each one.
  out.push_back(entry("permute_dims", is_op("relax.permute_dims")({wildcard()})));
  // Reshapes (a view where the layout allows) and unit-stride slices (a copy), so a partition
  // does not end at ShuffleNet's channel shuffle and split or at a transformer's head split.
  out.push_back(entry("reshape", is_op("relax.reshape")({wildcard(), wildcard()})));
  out.push_back(entry("strided_slice", is_op("relax.strided_slice")({wildcard(), wildcard(), wildcard(), wildcard()}) |
                                           is_op("relax.strided_slice")({wildcard(), wildcard(), wildcard(), wildcard(), wildcard()})));
  out.push_back(entry("resize2d", is_op("relax.image.resize2d")({wildcard(), wildcard()})));
  // Inference batch_norm (what FoldBatchnormToConv2D cannot fold, e.g. after a concat), its
  // normalized tensor optionally with a ReLU: one oneDNN primitive. (A pattern's root is a
  // call: the plain one yields the tuple, whose get-items merging takes into the partition.)
  Pattern bn = is_op("relax.nn.batch_norm")({wildcard(), wildcard(), wildcard(), wildcard(), wildcard()});
  out.push_back(entry("batch_norm", bn));
  out.push_back(entry("batch_norm_relu", is_op("relax.nn.relu")({dpl::is_tuple_get_item(bn, 0)})));

  // matmul / dense (weight optionally transposed by permute_dims) + bias + activation.
  for (int with_bias = 0; with_bias < 2; ++with_bias) {
    for (int a = -1; a < int(activations().size()); ++a) {
      Pattern w = is_op("relax.permute_dims")({wildcard()}) | wildcard();
      std::string name = "matmul";
      Pattern p = dpl::with_bias_and_residual(is_op("relax.matmul")({wildcard(), w}), with_bias,
                                              false, name);
      if (a >= 0) {
        p = activation_of(activations()[a].second, p);
        name += "_" + activations()[a].first;
      }
      out.push_back(entry(name, p));
    }
  }
  // conv2d + bias + residual add + activation.
  for (int with_bias = 0; with_bias < 2; ++with_bias) {
    for (int with_res = 0; with_res < 2; ++with_res) {
      for (int a = -1; a < int(activations().size()); ++a) {
        std::string name = "conv2d";
        Pattern p = dpl::with_bias_and_residual(
            is_op("relax.nn.conv2d")({wildcard(), wildcard()}), with_bias, with_res, name);
        if (a >= 0) {
          p = activation_of(activations()[a].second, p);
          name += "_" + activations()[a].first;
        }
        out.push_back(entry(name, p));
      }
    }
  }
  return out;
}

}  // namespace partita::backend::dnnl
