// The device code the cutlass codegen writes, as text: the argument block of one GEMM kernel
// (shared by a kernel's unit, the module's glue and the profiler), the body of a GEMM unit (one
// CUTLASS 3 kernel for sm90a, made concrete by the #defines gemm_kernel.cc puts before it), the
// argument block and body of an attention unit (attention_kernel.h) and the prelude of a module's glue (the calling convention, element-wise / im2col / normalization
// kernels). Kept here as text so that a generated source is self-contained and its hash covers
// everything that was compiled.
#pragma once

#include <string>

namespace partita::backend::cutlass {

inline constexpr const char* kGemmAbi = R"PT(
#include <stddef.h>
#include <stdint.h>
enum { PT_ACT_NONE = 0, PT_ACT_RELU = 1, PT_ACT_GELU = 2, PT_ACT_GELU_TANH = 3, PT_ACT_SILU = 4 };
enum { PT_C_NONE = 0, PT_C_ADD_BEFORE_ACT = 1, PT_C_ADD = 2, PT_C_MULTIPLY = 3 };
typedef struct {
  int64_t m, n, k, batch;
  const void* a; int64_t lda, batch_stride_a;
  const void* b; int64_t ldb, batch_stride_b;
  const void* bias;
  const void* c; int64_t ldc, batch_stride_c;
  void* d; int64_t ldd, batch_stride_d;
  int32_t act, c_mode, post_act;  // the epilogue the caller means (the kernel's is compiled in)
  int32_t splits;                  // split-K: K ranges per output tile (stream-K units; 0 or 1: none)
  void* stream;
  void* workspace;
  size_t workspace_size;
} PtGemmArgs;
)PT";

// The attention units' ABI (attention_kernel.h), apart from the GEMMs': each unit's source
// holds only its own, so a change to one leaves the other's cached objects valid. Layouts are Relax's: query
// (B, Sq, N, D), key (B, Skv, N, D), value (B, Skv, N, Dv), out (B, Sq, N, Dv) (contiguous);
// q / k / v rows (one sequence position: N heads) `*_row` elements apart (N·D when contiguous,
// wider when they lie in one stacked QKV tensor); the bias (B, N, Sq, Skv) read through strides
// (0 where it broadcasts).
inline constexpr const char* kAttentionAbi = R"PT(
enum { PT_MASK_NONE = 0, PT_MASK_TOP_LEFT = 1, PT_MASK_BOTTOM_RIGHT = 2 };
typedef struct {
  const void *q, *k, *v, *bias;
  void* out;
  int32_t batch, heads, seq_q, seq_kv, head_dim, head_dim_v;
  int64_t q_row, k_row, v_row;
  int64_t bias_stride_b, bias_stride_h, bias_stride_q;
  float scale;
  int32_t mask;
  void* stream;
  void* workspace;  // float (B, Sq, N, Dv) when the kernel accumulates outside its registers
  size_t workspace_size;
} PtAttentionArgs;
)PT";

// One attention unit: CUTLASS example 41's forward kernel for one class (attention_kernel.cc
// fills the @...@ fields). Its entry point checks what the kernel needs (alignment, the bound
// on the head dimension) and launches it on the caller's stream.
inline constexpr const char* kAttentionUnit = R"PT(
#include <cmath>
#include <cstdio>
#include "kernel_forward.h"
namespace {
using Kernel = AttentionKernel<@ELEMENT@, cutlass::arch::Sm80, /*aligned*/ true, @QUERIES@, @KEYS@, @MAX_K@,
                               /*dropout*/ false, /*bias*/ @BIAS@>;
using Element = @ELEMENT@;

bool fill(const PtAttentionArgs* a, typename Kernel::Params* p, char* error, size_t error_size) {
  if (a->head_dim > @MAX_K@ || a->head_dim_v > @MAX_K@) {
    snprintf(error, error_size, "@SYMBOL@: head dimension %d / %d above %d", (int)a->head_dim, (int)a->head_dim_v, @MAX_K@);
    return false;
  }
  const int64_t hdv = int64_t(a->heads) * a->head_dim_v;
  p->query_ptr = (Element*)a->q;
  p->key_ptr = (Element*)a->k;
  p->value_ptr = (Element*)a->v;
  p->output_ptr = (Element*)a->out;
  p->output_accum_ptr = Kernel::kNeedsOutputAccumulatorBuffer ? (float*)a->workspace : nullptr;
  if constexpr (Kernel::kSupportsBias) {
    p->attn_bias_ptr = (Element*)a->bias;
    p->bias_strideB = a->bias_stride_b;
    p->bias_strideH = a->bias_stride_h;
    p->bias_strideM = int32_t(a->bias_stride_q);
  }
  p->scale = a->scale;
  p->num_batches = a->batch;
  p->num_heads = a->heads;
  p->head_dim = a->head_dim;
  p->head_dim_value = a->head_dim_v;
  p->num_queries = a->seq_q;
  p->num_keys = a->seq_kv;
  p->custom_mask_type = uint8_t(a->mask);
  p->q_strideM = int32_t(a->q_row);
  p->k_strideM = int32_t(a->k_row);
  p->v_strideM = int32_t(a->v_row);
  p->o_strideM = int32_t(hdv);
  p->q_strideH = a->head_dim;
  p->k_strideH = a->head_dim;
  p->v_strideH = a->head_dim_v;
  p->q_strideB = int64_t(a->seq_q) * a->q_row;
  p->k_strideB = int64_t(a->seq_kv) * a->k_row;
  p->v_strideB = int64_t(a->seq_kv) * a->v_row;
  if (!Kernel::check_supported(*p)) {
    snprintf(error, error_size, "@SYMBOL@: operands not aligned to %d elements", (int)Kernel::kAlignmentQ);
    return false;
  }
  return true;
}
}  // namespace

extern "C" size_t @SYMBOL@_workspace(const PtAttentionArgs* a) {
  return Kernel::kNeedsOutputAccumulatorBuffer
             ? sizeof(float) * size_t(a->batch) * size_t(a->seq_q) * size_t(a->heads) * size_t(a->head_dim_v)
             : 0;
}

extern "C" int32_t @SYMBOL@(const PtAttentionArgs* a, char* error, size_t error_size) {
  typename Kernel::Params p;
  if (!fill(a, &p, error, error_size)) return 1;
  constexpr auto kernel = attention_kernel_batched_impl<Kernel>;
  const int smem = int(sizeof(typename Kernel::SharedStorage));
  if (smem > 0xc000) {
    cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    if (e != cudaSuccess) {
      snprintf(error, error_size, "@SYMBOL@: %s", cudaGetErrorString(e));
      return 1;
    }
  }
  kernel<<<p.getBlocksGrid(), p.getThreadsGrid(), smem, (cudaStream_t)a->stream>>>(p);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) {
    snprintf(error, error_size, "@SYMBOL@: launching the kernel: %s", cudaGetErrorString(e));
    return 1;
  }
  return 0;
}
)PT";

// One unit of CUTLASS's Hopper FMHA (example 88: FmhaBuilder's TMA warp-specialized kernel, its
// schedule @SCHEDULE@) for one class (attention_kernel.cc fills the @...@ fields: the tile is 128 queries x
// @KEYS@ keys x the head dimension; ResidualFusion masks a partial last block of keys,
// CausalFusion the top-left triangle). Its scale is the kernel's own, 1 / sqrt(D); the
// logsumexp it writes goes to the workspace. Relax's (B, S, N, D) operands are strides of its
// (S, D, (B, N)) layouts.
inline constexpr const char* kAttentionUnitSm90 = R"PT(
#include <cmath>
#include <cstdio>
#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "cutlass/kernel_hardware_info.h"
#include "collective/fmha_fusion.hpp"
#include "device/device_universal.hpp"
#include "kernel/fmha_kernel_builder.hpp"
namespace {
using namespace cute;
using Element = @ELEMENT@;
using RowStride = cute::tuple<int, _1, cute::tuple<int, int>>;  // (S, D, (B, N))
using Operation = cutlass::device::Universal<typename cutlass::fmha::kernel::FmhaBuilder<
    Element, float, float, Shape<_128, Int<@KEYS@>, Int<@MAX_K@>>, RowStride, RowStride, RowStride,
    cutlass::fmha::collective::@FUSION@, @SCHEDULE@>::Kernel>;

int sm_count() {
  static int count = cutlass::KernelHardwareInfo::query_device_multiprocessor_count(0);
  return count;
}

typename Operation::Arguments arguments(const PtAttentionArgs* a) {
  const int b = a->batch, n = a->heads, sq = a->seq_q, skv = a->seq_kv, d = a->head_dim;
  cutlass::KernelHardwareInfo hw;
  hw.sm_count = sm_count();
  return {{b, n, sq, skv, d},
          {(const Element*)a->q, make_stride(int(a->q_row), _1{}, make_stride(int(sq * a->q_row), d)),
           (const Element*)a->k, make_stride(int(a->k_row), _1{}, make_stride(int(skv * a->k_row), d)),
           (const Element*)a->v, make_stride(int(a->v_row), _1{}, make_stride(int(skv * a->v_row), d))},
          {(Element*)a->out, make_stride(n * d, _1{}, make_stride(sq * n * d, d)), (float*)a->workspace,
           make_stride(_1{}, make_stride(n * sq, sq))},
          hw};
}

// The workspace: the logsumexp (B, N, Sq) the kernel writes, padded to 256 bytes, then the
// kernel's own.
size_t lse_bytes(const PtAttentionArgs* a) {
  return (sizeof(float) * size_t(a->batch) * size_t(a->heads) * size_t(a->seq_q) + 255) / 256 * 256;
}
}  // namespace

extern "C" size_t @SYMBOL@_workspace(const PtAttentionArgs* a) {
  return lse_bytes(a) + Operation::get_workspace_size(arguments(a));
}

extern "C" int32_t @SYMBOL@(const PtAttentionArgs* a, char* error, size_t error_size) {
  if (a->head_dim != @MAX_K@ || a->head_dim_v != @MAX_K@ || a->bias || a->mask != @MASK@ || a->seq_q % 8) {
    snprintf(error, error_size, "@SYMBOL@: a call this kernel was not compiled for (head dimension %d / %d, mask %d, "
             "%d queries)", (int)a->head_dim, (int)a->head_dim_v, (int)a->mask, (int)a->seq_q);
    return 1;
  }
  typename Operation::Arguments args = arguments(a);
  void* workspace = (char*)a->workspace + lse_bytes(a);
  // The kernel's shared memory is set here, per unit: Universal::initialize sets it once per
  // process, remembered in a function-local static that g++ makes one symbol across every loaded
  // module (STB_GNU_UNIQUE), so a second module's copy of the kernel was launched without it
  // ("invalid argument", H100, 2026-12-07). This static is the unit's own.
  static const cudaError_t smem = cudaFuncSetAttribute(cutlass::device_kernel<typename Operation::Kernel>,
                                                       cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                       int(Operation::Kernel::SharedStorageSize));
  if (smem != cudaSuccess) {
    snprintf(error, error_size, "@SYMBOL@: setting the kernel's shared memory: %s", cudaGetErrorString(smem));
    return 1;
  }
  Operation op;
  cudaStream_t stream = (cudaStream_t)a->stream;
  if (op.can_implement(args) != cutlass::Status::kSuccess) {
    snprintf(error, error_size, "@SYMBOL@: the kernel cannot run this call");
    return 1;
  }
  if (op.initialize(args, workspace, stream) != cutlass::Status::kSuccess || op.run(stream) != cutlass::Status::kSuccess) {
    snprintf(error, error_size, "@SYMBOL@: launching the kernel: %s", cudaGetErrorString(cudaGetLastError()));
    return 1;
  }
  return 0;
}
)PT";

/// `s` with every `from` replaced by `to`.
inline std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t p = 0; (p = s.find(from, p)) != std::string::npos; p += to.size()) s.replace(p, from.size(), to);
  return s;
}

inline constexpr const char* kGemmUnitIncludes = R"PT(
#include <cstdio>
#include <cstring>
#include "cutlass/cutlass.h"
#include "cute/tensor.hpp"
#include "cutlass/numeric_types.h"
#include "cutlass/gemm/dispatch_policy.hpp"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/epilogue/fusion/sm90_callbacks_tma_warpspecialized.hpp"
#include "cutlass/gemm/device/gemm_universal_adapter.h"
#include "cutlass/gemm/kernel/gemm_universal.hpp"
)PT";

inline constexpr const char* kGemmUnitBodyHead = R"PT(
// Everything of the kernel has internal linkage: several units are linked into one module, and
// their same-named types (Gemm, Kernel, ...) and helpers must not meet.
namespace {
using namespace cute;

// The epilogue D = post(res(act(acc + bias), C)) with its codes fixed at compile time (PT_BIAS,
// PT_ACT, PT_C_MODE, PT_POST_ACT; the glue's codes are checked against them at each call): each
// element runs only its own arithmetic. Choosing the codes at run time inlined every activation
// at every element, ten times the code, and the epilogue then ran at the speed of instruction
// fetches (docs/benchmarks.md, "CUTLASS GEMMs with epilogues").
template <int Code>
CUTLASS_DEVICE float activate(float v) {
  if constexpr (Code == PT_ACT_RELU) {
    return v > 0.f ? v : 0.f;
  } else if constexpr (Code == PT_ACT_GELU) {
    return pt_gelu_erf(v);  // gemm_kernel.h: one exp2 and a polynomial, not erff's two
  } else if constexpr (Code == PT_ACT_GELU_TANH) {
    // 0.5 v (1 + tanh(u)) = v sigmoid(2u): one exp and one approximate division, accurate to a
    // few ulp of float everywhere (tanh.approx's 2^-11 would cost 1 + tanh its precision where
    // it nears 0, at negative v).
    float u = 0.7978845608028654f * fmaf(0.044715f * v, v * v, v);
    return __fdividef(v, 1.f + __expf(-2.f * u));
  } else if constexpr (Code == PT_ACT_SILU) {
    return __fdividef(v, 1.f + __expf(-v));  // a huge divisor (v < -88) gives 0, as v / inf does
  } else {
    return v;
  }
}

CUTLASS_DEVICE float fused_epilogue(float v, float bias, float c) {
  if constexpr (PT_BIAS) v += bias;
  if constexpr (PT_C_MODE == PT_C_ADD_BEFORE_ACT) v += c;
  v = activate<PT_ACT>(v);
  if constexpr (PT_C_MODE == PT_C_ADD) v += c;
  if constexpr (PT_C_MODE == PT_C_MULTIPLY) v *= c;
  return activate<PT_POST_ACT>(v);
}

// The EVT's compute node: its inputs are the accumulator, then the bias (when PT_BIAS), then C
// (when PT_HAS_C).
template <class Fragment>
struct FusedEpilogue {
#if PT_BIAS && PT_HAS_C
  CUTLASS_DEVICE Fragment operator()(Fragment const& acc, Fragment const& bias, Fragment const& c) const {
    Fragment out;
    CUTLASS_PRAGMA_UNROLL
    for (int i = 0; i < Fragment::kElements; ++i) out[i] = fused_epilogue(float(acc[i]), float(bias[i]), float(c[i]));
    return out;
  }
#elif PT_BIAS
  CUTLASS_DEVICE Fragment operator()(Fragment const& acc, Fragment const& bias) const {
    Fragment out;
    CUTLASS_PRAGMA_UNROLL
    for (int i = 0; i < Fragment::kElements; ++i) out[i] = fused_epilogue(float(acc[i]), float(bias[i]), 0.f);
    return out;
  }
#elif PT_HAS_C
  CUTLASS_DEVICE Fragment operator()(Fragment const& acc, Fragment const& c) const {
    Fragment out;
    CUTLASS_PRAGMA_UNROLL
    for (int i = 0; i < Fragment::kElements; ++i) out[i] = fused_epilogue(float(acc[i]), 0.f, float(c[i]));
    return out;
  }
#else
  CUTLASS_DEVICE Fragment operator()(Fragment const& acc) const {
    Fragment out;
    CUTLASS_PRAGMA_UNROLL
    for (int i = 0; i < Fragment::kElements; ++i) out[i] = fused_epilogue(float(acc[i]), 0.f, 0.f);
    return out;
  }
#endif
};

using ElementAB = PT_ELEMENT_AB;
using ElementD = PT_ELEMENT_D;
using ElementAcc = cute::conditional_t<cute::is_same_v<ElementAB, int8_t>, int32_t, float>;
using ElementCompute = float;
#if PT_HAS_C
using ElementC = PT_ELEMENT_C;
#else
using ElementC = void;
#endif
using LayoutA = cutlass::layout::RowMajor;
using LayoutB = PT_LAYOUT_B;
using LayoutD = cutlass::layout::RowMajor;
constexpr int kAlignAB = 128 / cutlass::sizeof_bits<ElementAB>::value;
constexpr int kAlignD = 128 / cutlass::sizeof_bits<ElementD>::value;
using TileShape = PT_TILE;
using ClusterShape = PT_CLUSTER;
constexpr auto kRound = cutlass::FloatRoundStyle::round_to_nearest;

using namespace cutlass::epilogue::fusion;
using Bias = Sm90RowBroadcast<0, TileShape, ElementD, ElementCompute, Stride<_0, _1, _0>, kAlignD>;
using Compute = Sm90Compute<FusedEpilogue, ElementD, ElementCompute, kRound>;
#if PT_BIAS && PT_HAS_C
using Fusion = Sm90EVT<Compute, Sm90AccFetch, Bias, Sm90SrcFetch<ElementC>>;
#elif PT_BIAS
using Fusion = Sm90EVT<Compute, Sm90AccFetch, Bias>;
#elif PT_HAS_C
using Fusion = Sm90EVT<Compute, Sm90AccFetch, Sm90SrcFetch<ElementC>>;
#else
using Fusion = Sm90EVT<Compute, Sm90AccFetch>;
#endif

using CollectiveEpilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
    cutlass::epilogue::collective::EpilogueTileAuto, ElementAcc, ElementCompute, ElementC, LayoutD, kAlignD,
    ElementD, LayoutD, kAlignD, PT_EPILOGUE_SCHEDULE, Fusion>::CollectiveOp;
using CollectiveMainloop = typename cutlass::gemm::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, ElementAB, LayoutA, kAlignAB, ElementAB, LayoutB, kAlignAB,
    ElementAcc, TileShape, ClusterShape,
    cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(
        sizeof(typename CollectiveEpilogue::SharedStorage))>,
    PT_KERNEL_SCHEDULE>::CollectiveOp;
)PT";

// The kernel type (gemm_kernel.cc writes it between the two halves: its tile scheduler is part of
// the configuration), then the rest of the unit.
inline constexpr const char* kGemmUnitBodyTail = R"PT(using Gemm = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;

typename Gemm::Arguments make_arguments(const PtGemmArgs& g) {
  using StrideA = typename Gemm::GemmKernel::StrideA;
  using StrideB = typename Gemm::GemmKernel::StrideB;
  using StrideC = typename Gemm::GemmKernel::StrideC;
  using StrideD = typename Gemm::GemmKernel::StrideD;
  StrideA sa = cute::make_stride(g.lda, cute::Int<1>{}, g.batch_stride_a);
  StrideB sb;
#if PT_B_K_MAJOR
  sb = cute::make_stride(g.ldb, cute::Int<1>{}, g.batch_stride_b);
#else
  sb = cute::make_stride(cute::Int<1>{}, g.ldb, g.batch_stride_b);
#endif
  StrideD sd = cute::make_stride(g.ldd, cute::Int<1>{}, g.batch_stride_d);
  StrideC sc{};
#if PT_HAS_C
  sc = cute::make_stride(g.ldc, cute::Int<1>{}, g.batch_stride_c);
#endif
  typename Gemm::Arguments args{};
  args.mode = cutlass::gemm::GemmUniversalMode::kGemm;
  args.problem_shape = {int(g.m), int(g.n), int(g.k), int(g.batch)};
  args.mainloop = {static_cast<const ElementAB*>(g.a), sa, static_cast<const ElementAB*>(g.b), sb};
  args.epilogue.ptr_C = static_cast<const typename CollectiveEpilogue::ElementC*>(g.c);
  args.epilogue.dC = sc;
  args.epilogue.ptr_D = static_cast<ElementD*>(g.d);
  args.epilogue.dD = sd;
#if PT_STREAM_K
  args.scheduler.splits = g.splits > 1 ? int(g.splits) : 1;  // more than 1: split-K (CUTLASS's heuristic mode)
#endif
  auto& f = args.epilogue.thread;
#if PT_BIAS && PT_HAS_C
  f = {{}, {static_cast<const ElementD*>(g.bias), ElementD(0), {}}, {}, {}};
#elif PT_BIAS
  f = {{}, {static_cast<const ElementD*>(g.bias), ElementD(0), {}}, {}};
#elif PT_HAS_C
  f = {{}, {}, {}};
#else
  f = {{}, {}};
#endif
  return args;
}

void fail(char* err, size_t n, const char* what, cutlass::Status s) {
  if (err && n) snprintf(err, n, "%s: %s", what, cutlass::cutlassGetStatusString(s));
}

}  // namespace

#define PT_CAT2(a, b) a##b
#define PT_CAT(a, b) PT_CAT2(a, b)

// The workspace the kernel needs for these arguments (0 for plain data-parallel tiles).
extern "C" size_t PT_CAT(PT_ENTRY, _workspace)(const PtGemmArgs* g) {
  return Gemm::get_workspace_size(make_arguments(*g));
}

// Runs D = epilogue(A B) on the stream; returns 0, else 1 with a message in `err`.
extern "C" int32_t PT_ENTRY(const PtGemmArgs* g, char* err, size_t err_size) {
  if ((g->bias != nullptr) != bool(PT_BIAS) || (g->c != nullptr) != bool(PT_HAS_C) || g->act != PT_ACT ||
      g->c_mode != PT_C_MODE || g->post_act != PT_POST_ACT) {
    if (err && err_size)
      snprintf(err, err_size, "the kernel's epilogue is %s, called with bias %d, C %d, act %d, c_mode %d, post_act %d",
               PT_EPI_ID, int(g->bias != nullptr), int(g->c != nullptr), int(g->act), int(g->c_mode), int(g->post_act));
    return 1;
  }
  if (g->splits > 1 && !PT_STREAM_K) {
    if (err && err_size) snprintf(err, err_size, "split-K (%d) asked of a kernel without the stream-K scheduler", int(g->splits));
    return 1;
  }
  auto args = make_arguments(*g);
  Gemm gemm;
  cutlass::Status s = gemm.can_implement(args);
  if (s != cutlass::Status::kSuccess) return fail(err, err_size, "the kernel cannot run this problem", s), 1;
  if (Gemm::get_workspace_size(args) > g->workspace_size)
    return fail(err, err_size, "workspace too small", cutlass::Status::kErrorWorkspaceNull), 1;
  s = gemm.initialize(args, g->workspace, static_cast<cudaStream_t>(g->stream));
  if (s != cutlass::Status::kSuccess) return fail(err, err_size, "initializing the kernel", s), 1;
  s = gemm.run(static_cast<cudaStream_t>(g->stream));
  if (s != cutlass::Status::kSuccess) return fail(err, err_size, "launching the kernel", s), 1;
  return 0;
}
)PT";

inline constexpr const char* kModulePrelude = R"PT(
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <stdio.h>
#include <string.h>

// The runtime's tensor view (partita/runtime/c_abi.h), repeated so this file stands alone.
typedef struct {
  void* data;
  const int64_t* shape;
  int32_t ndim;
  uint8_t dtype_code;
  uint8_t dtype_bits;
  uint16_t dtype_lanes;
} PartitaTensorC;

// One call of a generated function (module_format.h: the plug-in's side of it).
typedef struct {
  const PartitaTensorC* inputs;  // the function's parameters, then its constants (device memory)
  int32_t num_inputs;
  PartitaTensorC* outputs;
  int32_t num_outputs;
  void* stream;                  // cudaStream_t: the VM's current stream
  void* (*alloc)(void* ctx, size_t bytes);  // device memory ordered on that stream
  void (*release)(void* ctx, void* ptr);
  void* ctx;
  char* error;
  size_t error_size;
} PtCall;

// Generated functions run their body in a lambda returning the status, so a failure returns.
#define PT_FAIL(...)                                       \
  do {                                                     \
    snprintf(call->error, call->error_size, __VA_ARGS__);  \
    return 1;                                              \
  } while (0)
#define PT_CUDA(expr, what)                                                                       \
  do {                                                                                            \
    cudaError_t e_ = (expr);                                                                      \
    if (e_ != cudaSuccess) PT_FAIL("%s: %s (%s)", what, cudaGetErrorName(e_), cudaGetErrorString(e_)); \
  } while (0)

// Device temporaries of one call, given back (stream-ordered) when the call returns.
struct PtTemps {
  const PtCall* call;
  void* ptr[256];
  int n = 0;
  explicit PtTemps(const PtCall* c) : call(c) {}
  ~PtTemps() {
    for (int i = 0; i < n; ++i) call->release(call->ctx, ptr[i]);
  }
  void* alloc(size_t bytes) {
    if (n == 256) return nullptr;
    void* p = call->alloc(call->ctx, bytes);
    if (p) ptr[n++] = p;
    return p;
  }
};

static inline int64_t pt_numel(const int64_t* s, int n) {
  int64_t r = 1;
  for (int i = 0; i < n; ++i) r *= s[i];
  return r;
}
static inline unsigned pt_blocks(int64_t n, int threads) {
  int64_t b = (n + threads - 1) / threads;
  return unsigned(b < 1 ? 1 : (b > 65535 * 8 ? 65535 * 8 : b));
}

template <class T> __device__ __forceinline__ float pt_load(const T* p, int64_t i) { return float(p[i]); }
template <class T> __device__ __forceinline__ void pt_store(T* p, int64_t i, float v) { p[i] = T(v); }
template <> __device__ __forceinline__ void pt_store<int32_t>(int32_t* p, int64_t i, float v) { p[i] = int32_t(v); }

// Element-wise binary with NumPy broadcasting, up to 6 dimensions (strides 0 on broadcast axes).
struct PtBroadcast {
  int ndim;
  int64_t out_shape[6];
  int64_t a_stride[6], b_stride[6];
};
static inline bool pt_broadcast(const int64_t* as, int an, const int64_t* bs, int bn, int64_t* os, int on,
                                PtBroadcast* bc) {
  bc->ndim = on;
  int64_t sa = 1, sb = 1;
  for (int d = on - 1; d >= 0; --d) {
    int ia = d - (on - an), ib = d - (on - bn);
    int64_t ea = ia >= 0 ? as[ia] : 1, eb = ib >= 0 ? bs[ib] : 1;
    if (ea != eb && ea != 1 && eb != 1) return false;
    os[d] = ea > eb ? ea : eb;
    bc->out_shape[d] = os[d];
    bc->a_stride[d] = ea == 1 ? 0 : sa;
    bc->b_stride[d] = eb == 1 ? 0 : sb;
    sa *= ea;
    sb *= eb;
  }
  return true;
}
template <class T, int Op>
__global__ void pt_binary_kernel(const T* a, const T* b, T* out, int64_t n, PtBroadcast bc) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t r = i, ia = 0, ib = 0;
    for (int d = bc.ndim - 1; d >= 0; --d) {
      int64_t c = r % bc.out_shape[d];
      r /= bc.out_shape[d];
      ia += c * bc.a_stride[d];
      ib += c * bc.b_stride[d];
    }
    if (Op == 0) out[i] = T(a[ia] + b[ib]);
    else out[i] = T(a[ia] * b[ib]);
  }
}

// im2col for an NHWC convolution with an OHWI kernel: row m = (n, p, q), column k = (kh, kw, c).
template <class T>
__global__ void pt_im2col_kernel(const T* x, T* cols, int64_t rows, int H, int W, int C, int P, int Q, int KH, int KW,
                                 int sh, int sw, int ph, int pw, int dh, int dw) {
  int64_t K = int64_t(KH) * KW * C, total = rows * K;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t m = i / K, k = i % K;
    int c = int(k % C), kw = int((k / C) % KW), kh = int(k / (int64_t(C) * KW));
    int q = int(m % Q), p = int((m / Q) % P);
    int64_t n = m / (int64_t(P) * Q);
    int h = p * sh - ph + kh * dh, w = q * sw - pw + kw * dw;
    cols[i] = (h >= 0 && h < H && w >= 0 && w < W) ? x[((n * H + h) * W + w) * C + c] : T(0.f);
  }
}

// A row's sum over a block of 256 threads.
__device__ __forceinline__ float pt_block_sum(float v, float* shared) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  v = lane < int(blockDim.x / 32) ? shared[lane] : 0.f;
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// layer_norm / rms_norm over the last axis: one block per row, statistics in float.
template <class T, bool Rms>
__global__ void pt_norm_kernel(const T* x, const T* gamma, const T* beta, T* y, int64_t rows, int64_t cols, float eps) {
  __shared__ float shared[32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * cols;
    float s = 0.f, s2 = 0.f;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      float v = float(xr[c]);
      s += v;
      s2 += v * v;
    }
    float mean = Rms ? 0.f : pt_block_sum(s, shared) / float(cols);
    float var;
    if (Rms) {
      var = pt_block_sum(s2, shared) / float(cols);
    } else {
      // Two passes for the variance: sum of squared deviations (stable for large means).
      float d2 = 0.f;
      for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
        float d = float(xr[c]) - mean;
        d2 += d * d;
      }
      var = pt_block_sum(d2, shared) / float(cols);
    }
    float inv = rsqrtf(var + eps);
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      float v = (float(xr[c]) - mean) * inv * float(gamma[c]);
      if (!Rms) v += float(beta[c]);
      y[r * cols + c] = T(v);
    }
  }
}
)PT";

}  // namespace partita::backend::cutlass
