// The cuDNN frontend graphs behind ConvPlan and AttentionPlan (cudnn_graphs.h). Only this file
// includes the frontend (it is large); its JSON support is left out (CUDNN_FRONTEND_SKIP_JSON_LIB)
// so that its bundled nlohmann copy never meets the one the module's program reader uses.
#define CUDNN_FRONTEND_SKIP_JSON_LIB 1
// The frontend's headers define static helpers this file does not call; their warnings are
// reported at the end of the file, so they are silenced for the whole of it.
#pragma GCC diagnostic ignored "-Wunused-function"
#include <cuda_runtime.h>
#include <cudnn_frontend.h>

#include <unordered_map>

#include "cudnn_graphs.h"
#include "partita/support/error.h"

namespace partita::backend::cudnn {

namespace fe = cudnn_frontend;

namespace {

constexpr int64_t kX = 1, kW = 2, kB = 3, kR = 4, kY = 5;
constexpr int64_t kQ = 1, kK = 2, kV = 3, kBias = 4, kO = 5;

fe::DataType_t fe_dtype(DataType dt) {
  if (dt == DataType::Float(16)) return fe::DataType_t::HALF;
  if (dt == DataType::BFloat16()) return fe::DataType_t::BFLOAT16;
  if (dt == DataType::Float(32)) return fe::DataType_t::FLOAT;
  throw_error("TypeError", "cudnn: dtype " + dt.str() + " is not supported");
}

/// Strides of (N, C, H, W) dims stored as NHWC.
std::vector<int64_t> nhwc_strides(const std::array<int64_t, 4>& d) {
  return {d[1] * d[2] * d[3], 1, d[3] * d[1], d[1]};
}

std::string dims_str(const std::array<int64_t, 4>& d) {
  return "(" + std::to_string(d[0]) + ", " + std::to_string(d[1]) + ", " + std::to_string(d[2]) + ", " +
         std::to_string(d[3]) + ")";
}

void check(fe::error_t status, const std::string& what) {
  if (status.is_bad()) throw_error("RuntimeError", "cudnn: " + what + ": " + status.get_message());
}

void check_cudnn(cudnnStatus_t status, const char* what) {
  if (status != CUDNN_STATUS_SUCCESS)
    throw_error("RuntimeError", std::string("cudnn: ") + what + " failed: " + cudnnGetErrorString(status));
}

/// Validates, lowers and plans `g` (heuristics A, then the fallback list); throws on failure.
/// `candidates` engines are built for autotune() to choose from: 1 the heuristic's choice, K > 1
/// the first K in the heuristic's order that build, 0 every engine that supports the graph
/// (building every engine is what makes full autotuning slow: some compile kernels at run time).
/// Returns how many plans were built.
int64_t plan(fe::graph::Graph& g, cudnnHandle_t handle, bool deselect_tensor_cores, const std::string& what,
             int64_t candidates = 1) {
  check(g.validate(), what + ": validate");
  check(g.build_operation_graph(handle), what + ": operation graph");
  check(g.create_execution_plans({fe::HeurMode_t::A, fe::HeurMode_t::FALLBACK}), what + ": heuristics");
  if (deselect_tensor_cores) g.deselect_numeric_notes({fe::NumericalNote_t::TENSOR_CORE});
  check(g.check_support(handle), what + ": no engine supports it");
  if (candidates <= 1) {
    check(g.build_plans(handle, candidates == 1 ? fe::BuildPlanPolicy_t::HEURISTICS_CHOICE : fe::BuildPlanPolicy_t::ALL),
          what + ": plan");
    return candidates == 1 ? 1 : g.get_execution_plan_count();
  }
  int64_t built = 0;
  for (int64_t i = 0; i < g.get_execution_plan_count() && built < candidates; ++i)
    if (g.build_plan_at_index(handle, i).is_good()) ++built;
  if (built == 0) check(g.build_plans(handle, fe::BuildPlanPolicy_t::HEURISTICS_CHOICE), what + ": plan");
  return std::max<int64_t>(built, 1);
}

/// Device scratch memory for autotuning, freed with it.
class Scratch {
 public:
  ~Scratch() {
    for (void* p : owned_) cudaFree(p);
  }
  /// `bytes` of memory filled with a non-zero pattern (timing on zeros flatters tensor cores).
  void* alloc(int64_t bytes) {
    void* p = nullptr;
    if (cudaMalloc(&p, size_t(std::max<int64_t>(bytes, 16))) != cudaSuccess)
      throw_error("RuntimeError", "cudnn: no device memory for autotuning (" + std::to_string(bytes) + " bytes)");
    owned_.push_back(p);
    cudaMemset(p, 0x3c, size_t(std::max<int64_t>(bytes, 16)));
    return p;
  }

 private:
  std::vector<void*> owned_;
};

/// Times every built plan of `g` on scratch tensors (uid -> bytes) and makes the fastest its
/// plan, as PyTorch's cudnn.benchmark does at a shape's first call; here once per shape, when the
/// module loads. A failed tuning keeps the heuristic's choice.
void autotune(fe::graph::Graph& g, cudnnHandle_t handle, const std::vector<std::pair<int64_t, int64_t>>& tensors) {
  Scratch scratch;
  std::unordered_map<int64_t, void*> pack;
  for (const auto& [uid, bytes] : tensors) pack[uid] = scratch.alloc(bytes);
  void* workspace = scratch.alloc(g.get_autotune_workspace_size());
  (void)g.autotune(handle, pack, workspace);
}

int64_t numel4(const std::array<int64_t, 4>& d) { return d[0] * d[1] * d[2] * d[3]; }

class GraphConvPlan : public ConvPlan {
 public:
  GraphConvPlan(cudnnHandle_t handle, const ConvSpec& s, bool fused) : spec_(s), fused_(fused) {
    const std::string what = "conv2d x " + dims_str(s.x) + " w " + dims_str(s.w) + " " + s.dtype.str() +
                             (fused ? " with its epilogue" : "");
    graph_ = std::make_shared<fe::graph::Graph>();
    auto& g = *graph_;
    g.set_io_data_type(fe_dtype(s.dtype))
        .set_intermediate_data_type(fe::DataType_t::FLOAT)
        .set_compute_data_type(fe::DataType_t::FLOAT);
    auto tensor = [&](const char* name, int64_t uid, const std::array<int64_t, 4>& dims,
                      std::vector<int64_t> strides) {
      return g.tensor(fe::graph::Tensor_attributes()
                          .set_name(name)
                          .set_uid(uid)
                          .set_dim({dims[0], dims[1], dims[2], dims[3]})
                          .set_stride(std::move(strides)));
    };
    auto x = tensor("x", kX, s.x, nhwc_strides(s.x));
    auto w = tensor("w", kW, s.w, nhwc_strides(s.w));
    auto y = g.conv_fprop(x, w,
                          fe::graph::Conv_fprop_attributes()
                              .set_pre_padding({s.padding[0], s.padding[1]})
                              .set_post_padding({s.padding[2], s.padding[3]})
                              .set_stride({s.strides[0], s.strides[1]})
                              .set_dilation({s.dilation[0], s.dilation[1]}));
    if (fused) {
      auto pw = [&](fe::PointwiseMode_t mode) { return fe::graph::Pointwise_attributes().set_mode(mode); };
      if (s.bias) {
        const int64_t k = s.y[1];
        y = g.pointwise(y, tensor("bias", kB, {1, k, 1, 1}, {k, 1, k, k}), pw(fe::PointwiseMode_t::ADD));
      }
      if (s.residual) y = g.pointwise(y, tensor("residual", kR, s.y, nhwc_strides(s.y)), pw(fe::PointwiseMode_t::ADD));
      if (s.activation == "relu") y = g.pointwise(y, pw(fe::PointwiseMode_t::RELU_FWD));
      else if (s.activation == "gelu") y = g.pointwise(y, pw(fe::PointwiseMode_t::GELU_FWD));
      else if (s.activation == "silu") y = g.pointwise(y, pw(fe::PointwiseMode_t::SWISH_FWD).set_swish_beta(1.0f));
      else if (s.activation == "sigmoid") y = g.pointwise(y, pw(fe::PointwiseMode_t::SIGMOID_FWD));
      else if (s.activation == "clip")
        y = g.pointwise(y, pw(fe::PointwiseMode_t::RELU_FWD)
                               .set_relu_lower_clip(float(s.clip_min))
                               .set_relu_upper_clip(float(s.clip_max)));
    }
    y->set_output(true).set_uid(kY).set_dim({s.y[0], s.y[1], s.y[2], s.y[3]}).set_stride(nhwc_strides(s.y));
    y->set_data_type(fe_dtype(s.dtype));
    const int64_t built = plan(g, handle, s.dtype == DataType::Float(32) && !s.allow_tf32, what,
                               s.autotune ? s.autotune_top_k : 1);
    if (s.autotune && built > 1) {
      const int64_t e = s.dtype.bytes();
      std::vector<std::pair<int64_t, int64_t>> tensors{{kX, numel4(s.x) * e}, {kW, numel4(s.w) * e}, {kY, numel4(s.y) * e}};
      if (fused && s.bias) tensors.push_back({kB, s.y[1] * e});
      if (fused && s.residual) tensors.push_back({kR, numel4(s.y) * e});
      autotune(g, handle, tensors);
    }
    check(g.get_workspace_size(workspace_), what + ": workspace size");
    if (!fused) make_epilogue();
  }

  ~GraphConvPlan() override {
    if (y_desc_) cudnnDestroyTensorDescriptor(y_desc_);
    if (b_desc_) cudnnDestroyTensorDescriptor(b_desc_);
    if (act_desc_) cudnnDestroyActivationDescriptor(act_desc_);
  }

  int64_t workspace_size() const override { return workspace_; }
  bool fused() const override { return fused_; }

  void run(cudnnHandle_t handle, const void* x, const void* w, const void* bias, const void* residual, void* y,
           void* workspace) const override {
    std::unordered_map<int64_t, void*> pack{{kX, const_cast<void*>(x)}, {kW, const_cast<void*>(w)}, {kY, y}};
    if (fused_ && spec_.bias) pack[kB] = const_cast<void*>(bias);
    if (fused_ && spec_.residual) pack[kR] = const_cast<void*>(residual);
    check(graph_->execute(handle, pack, workspace), "conv2d: execute");
    if (fused_) return;
    const float one = 1.f, zero = 0.f;
    if (spec_.bias) check_cudnn(cudnnAddTensor(handle, &one, b_desc_, bias, &one, y_desc_, y), "cudnnAddTensor (bias)");
    if (spec_.residual)
      check_cudnn(cudnnAddTensor(handle, &one, y_desc_, residual, &one, y_desc_, y), "cudnnAddTensor (residual)");
    if (act_desc_)
      check_cudnn(cudnnActivationForward(handle, act_desc_, &one, y_desc_, y, &zero, y_desc_, y),
                  "cudnnActivationForward");
  }

 private:
  /// The epilogue as cuDNN tensor operations, for convolutions no fused engine runs.
  void make_epilogue() {
    const cudnnDataType_t dt = cudnn_dtype(spec_.dtype);
    check_cudnn(cudnnCreateTensorDescriptor(&y_desc_), "cudnnCreateTensorDescriptor");
    check_cudnn(cudnnSetTensor4dDescriptor(y_desc_, CUDNN_TENSOR_NHWC, dt, int(spec_.y[0]), int(spec_.y[1]),
                                           int(spec_.y[2]), int(spec_.y[3])),
                "cudnnSetTensor4dDescriptor");
    if (spec_.bias) {
      check_cudnn(cudnnCreateTensorDescriptor(&b_desc_), "cudnnCreateTensorDescriptor");
      check_cudnn(cudnnSetTensor4dDescriptor(b_desc_, CUDNN_TENSOR_NHWC, dt, 1, int(spec_.y[1]), 1, 1),
                  "cudnnSetTensor4dDescriptor");
    }
    if (spec_.activation.empty()) return;
    cudnnActivationMode_t mode;
    double coef = 0;
    if (spec_.activation == "relu") mode = CUDNN_ACTIVATION_RELU;
    else if (spec_.activation == "sigmoid") mode = CUDNN_ACTIVATION_SIGMOID;
    else if (spec_.activation == "silu") mode = CUDNN_ACTIVATION_SWISH, coef = 1.0;
    else if (spec_.activation == "clip" && spec_.clip_min == 0) mode = CUDNN_ACTIVATION_CLIPPED_RELU, coef = spec_.clip_max;
    else
      throw_error("RuntimeError", "cudnn: no fused engine runs conv2d x " + dims_str(spec_.x) + " w " +
                                      dims_str(spec_.w) + " with " + spec_.activation +
                                      ", and cuDNN has no separate kernel for that activation");
    check_cudnn(cudnnCreateActivationDescriptor(&act_desc_), "cudnnCreateActivationDescriptor");
    check_cudnn(cudnnSetActivationDescriptor(act_desc_, mode, CUDNN_NOT_PROPAGATE_NAN, coef),
                "cudnnSetActivationDescriptor");
    if (mode == CUDNN_ACTIVATION_SWISH)
      check_cudnn(cudnnSetActivationDescriptorSwishBeta(act_desc_, 1.0), "cudnnSetActivationDescriptorSwishBeta");
  }

  ConvSpec spec_;
  bool fused_;
  std::shared_ptr<fe::graph::Graph> graph_;
  int64_t workspace_ = 0;
  cudnnTensorDescriptor_t y_desc_ = nullptr, b_desc_ = nullptr;
  cudnnActivationDescriptor_t act_desc_ = nullptr;
};

class GraphAttentionPlan : public AttentionPlan {
 public:
  GraphAttentionPlan(cudnnHandle_t handle, const AttentionSpec& s) : spec_(s) {
    const std::string what = "attention (B, N, Sq, Skv, H) = (" + std::to_string(s.b) + ", " + std::to_string(s.h) +
                             ", " + std::to_string(s.sq) + ", " + std::to_string(s.skv) + ", " + std::to_string(s.d) +
                             ") " + s.dtype.str();
    graph_ = std::make_shared<fe::graph::Graph>();
    auto& g = *graph_;
    g.set_io_data_type(fe_dtype(s.dtype))
        .set_intermediate_data_type(fe::DataType_t::FLOAT)
        .set_compute_data_type(fe::DataType_t::FLOAT);
    // (B, S, N, H) in memory, described as (B, N, S, H) dims.
    auto bsnh = [&](const char* name, int64_t uid, int64_t seq) {
      return g.tensor(fe::graph::Tensor_attributes()
                          .set_name(name)
                          .set_uid(uid)
                          .set_dim({s.b, s.h, seq, s.d})
                          .set_stride({seq * s.h * s.d, s.d, s.h * s.d, 1}));
    };
    auto q = bsnh("q", kQ, s.sq), k = bsnh("k", kK, s.skv), v = bsnh("v", kV, s.skv);
    auto opts = fe::graph::SDPA_attributes().set_name("sdpa").set_generate_stats(false).set_attn_scale(float(s.scale));
    if (s.causal == "TopLeft" || (s.causal == "BottomRight" && s.sq == s.skv)) opts.set_causal_mask(true);
    else if (s.causal == "BottomRight") opts.set_causal_mask_bottom_right(true);
    if (s.bias) {
      const auto& d = s.bias_dims;
      opts.set_bias(g.tensor(fe::graph::Tensor_attributes()
                                 .set_name("bias")
                                 .set_uid(kBias)
                                 .set_dim({d[0], d[1], d[2], d[3]})
                                 .set_stride({d[1] * d[2] * d[3], d[2] * d[3], d[3], 1})));
    }
    auto [o, stats] = g.sdpa(q, k, v, opts);
    (void)stats;
    o->set_output(true).set_uid(kO).set_dim({s.b, s.h, s.sq, s.d}).set_stride({s.sq * s.h * s.d, s.d, s.h * s.d, 1});
    plan(g, handle, false, what);
    check(g.get_workspace_size(workspace_), what + ": workspace size");
  }

  int64_t workspace_size() const override { return workspace_; }

  void run(cudnnHandle_t handle, const void* q, const void* k, const void* v, const void* bias, void* o,
           void* workspace) const override {
    std::unordered_map<int64_t, void*> pack{
        {kQ, const_cast<void*>(q)}, {kK, const_cast<void*>(k)}, {kV, const_cast<void*>(v)}, {kO, o}};
    if (spec_.bias) pack[kBias] = const_cast<void*>(bias);
    check(graph_->execute(handle, pack, workspace), "attention: execute");
  }

 private:
  AttentionSpec spec_;
  std::shared_ptr<fe::graph::Graph> graph_;
  int64_t workspace_ = 0;
};

}  // namespace

cudnnDataType_t cudnn_dtype(DataType dt) {
  if (dt == DataType::Float(16)) return CUDNN_DATA_HALF;
  if (dt == DataType::BFloat16()) return CUDNN_DATA_BFLOAT16;
  if (dt == DataType::Float(32)) return CUDNN_DATA_FLOAT;
  throw_error("TypeError", "cudnn: dtype " + dt.str() + " is not supported");
}

std::unique_ptr<ConvPlan> ConvPlan::build(cudnnHandle_t handle, const ConvSpec& spec) {
  const bool has_epilogue = spec.bias || spec.residual || !spec.activation.empty();
  if (!has_epilogue) return std::make_unique<GraphConvPlan>(handle, spec, false);
  try {
    return std::make_unique<GraphConvPlan>(handle, spec, true);
  } catch (const Error& fused_failed) {
    // No engine fuses this epilogue (depthwise, odd channel counts, ...): the convolution alone,
    // then the epilogue as tensor operations.
    try {
      return std::make_unique<GraphConvPlan>(handle, spec, false);
    } catch (const Error& e) {
      throw_error("RuntimeError", e.message() + " (fused: " + fused_failed.message() + ")");
    }
  }
}

std::unique_ptr<AttentionPlan> AttentionPlan::build(cudnnHandle_t handle, const AttentionSpec& spec) {
  return std::make_unique<GraphAttentionPlan>(handle, spec);
}

}  // namespace partita::backend::cudnn
