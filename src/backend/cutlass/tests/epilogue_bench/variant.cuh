// One GEMM kernel variant of the epilogue micro-benchmark (bench.cu), made concrete by the
// #defines of the .cu that includes it: PT_NAME (entry prefix), PT_B_K_MAJOR, PT_FUSION_KIND
// (0: the backend's run-time-configured EVT node as of 1d7276e, 1: the same node with its codes
// fixed at compile time, 2: CUTLASS's LinCombPerColBiasEltAct<ReLu>, 3: plain D = acc), and for
// kind 1 PT_CT_ACT; 4: kind 0 with its switches outside the loops over a fragment. fp16 operands and result, f32 accumulation, 128x128x64 cooperative, 1x1.
#include <cstdio>
#include "cutlass/cutlass.h"
#include "cute/tensor.hpp"
#include "cutlass/numeric_types.h"
#include "cutlass/gemm/dispatch_policy.hpp"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/epilogue/fusion/sm90_callbacks_tma_warpspecialized.hpp"
#include "cutlass/epilogue/thread/activation.h"
#include "cutlass/gemm/device/gemm_universal_adapter.h"
#include "cutlass/gemm/kernel/gemm_universal.hpp"
#include "bench_abi.h"

namespace {
using namespace cute;

template <class T>
CUTLASS_DEVICE float activate(float v, int code) {
  switch (code) {
    case 1: return v > 0.f ? v : 0.f;
    case 2: return 0.5f * v * (1.f + erff(v * 0.70710678118654752f));
    case 3: {
      float u = 0.7978845608028654f * (v + 0.044715f * v * v * v);
      return 0.5f * v * (1.f + tanhf(u));
    }
    case 4: return v / (1.f + __expf(-v));
    default: return v;
  }
}

#if PT_FUSION_KIND == 0
struct FusedEpilogueArguments {
  float alpha = 1.f;
  int act = 0, c_mode = 0, post_act = 0;
};
template <class Fragment>
struct FusedEpilogue {
  using Arguments = FusedEpilogueArguments;
  CUTLASS_DEVICE Fragment operator()(Fragment const& acc, Fragment const& bias, Arguments const& p) const {
    Fragment out;
    CUTLASS_PRAGMA_UNROLL
    for (int i = 0; i < Fragment::kElements; ++i)
      out[i] = activate<float>(activate<float>(p.alpha * float(acc[i]) + float(bias[i]), p.act), p.post_act);
    return out;
  }
};
#elif PT_FUSION_KIND == 4
// Run-time codes, but each switch outside the loop over the fragment: the executed code is one
// compact loop per step instead of every activation inlined per element.
struct FusedEpilogueArguments {
  float alpha = 1.f;
  int act = 0, c_mode = 0, post_act = 0;
};
template <int Code, class Fragment>
CUTLASS_DEVICE void activate_all(Fragment& f) {
  CUTLASS_PRAGMA_UNROLL
  for (int i = 0; i < Fragment::kElements; ++i) f[i] = activate<float>(f[i], Code);
}
template <class Fragment>
CUTLASS_DEVICE void activate_all(Fragment& f, int code) {
  switch (code) {
    case 1: activate_all<1>(f); break;
    case 2: activate_all<2>(f); break;
    case 3: activate_all<3>(f); break;
    case 4: activate_all<4>(f); break;
    default: break;
  }
}
template <class Fragment>
struct FusedEpilogue {
  using Arguments = FusedEpilogueArguments;
  CUTLASS_DEVICE Fragment operator()(Fragment const& acc, Fragment const& bias, Arguments const& p) const {
    Fragment out;
    CUTLASS_PRAGMA_UNROLL
    for (int i = 0; i < Fragment::kElements; ++i) out[i] = p.alpha * float(acc[i]) + float(bias[i]);
    activate_all(out, p.act);
    activate_all(out, p.post_act);
    return out;
  }
};
#elif PT_FUSION_KIND == 1
template <class Fragment>
struct FusedEpilogue {
  CUTLASS_DEVICE Fragment operator()(Fragment const& acc, Fragment const& bias) const {
    Fragment out;
    CUTLASS_PRAGMA_UNROLL
    for (int i = 0; i < Fragment::kElements; ++i) out[i] = activate<float>(float(acc[i]) + float(bias[i]), PT_CT_ACT);
    return out;
  }
};
#endif

using ElementAB = cutlass::half_t;
using ElementD = cutlass::half_t;
using ElementAcc = float;
using ElementCompute = float;
using ElementC = void;
using LayoutA = cutlass::layout::RowMajor;
#if PT_B_K_MAJOR
using LayoutB = cutlass::layout::ColumnMajor;
#else
using LayoutB = cutlass::layout::RowMajor;
#endif
using LayoutD = cutlass::layout::RowMajor;
constexpr int kAlign = 8;
using TileShape = Shape<_128, _128, _64>;
using ClusterShape = Shape<_1, _1, _1>;
constexpr auto kRound = cutlass::FloatRoundStyle::round_to_nearest;

using namespace cutlass::epilogue::fusion;
using Bias = Sm90RowBroadcast<0, TileShape, ElementD, ElementCompute, Stride<_0, _1, _0>, kAlign>;
#if PT_FUSION_KIND <= 1 || PT_FUSION_KIND == 4
using Fusion = Sm90EVT<Sm90Compute<FusedEpilogue, ElementD, ElementCompute, kRound>, Sm90AccFetch, Bias>;
#elif PT_FUSION_KIND == 2
using Fusion = LinCombPerColBiasEltAct<cutlass::epilogue::thread::ReLu, ElementD, ElementCompute, ElementD, ElementD>;
#else
using Fusion = LinearCombination<ElementD, ElementCompute>;
#endif

using CollectiveEpilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
    cutlass::epilogue::collective::EpilogueTileAuto, ElementAcc, ElementCompute, ElementC, LayoutD, kAlign,
    ElementD, LayoutD, kAlign, cutlass::epilogue::TmaWarpSpecializedCooperative, Fusion>::CollectiveOp;
using CollectiveMainloop = typename cutlass::gemm::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, ElementAB, LayoutA, kAlign, ElementAB, LayoutB, kAlign,
    ElementAcc, TileShape, ClusterShape,
    cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(
        sizeof(typename CollectiveEpilogue::SharedStorage))>,
    cutlass::gemm::KernelTmaWarpSpecializedCooperative>::CollectiveOp;
using Kernel = cutlass::gemm::kernel::GemmUniversal<Shape<int, int, int, int>, CollectiveMainloop, CollectiveEpilogue>;
using Gemm = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;

typename Gemm::Arguments make_arguments(const BenchGemm& g) {
  typename Gemm::GemmKernel::StrideA sa = make_stride(g.k, Int<1>{}, int64_t(0));
  typename Gemm::GemmKernel::StrideB sb;
#if PT_B_K_MAJOR
  sb = make_stride(g.k, Int<1>{}, int64_t(0));
#else
  sb = make_stride(Int<1>{}, g.n, int64_t(0));
#endif
  typename Gemm::GemmKernel::StrideD sd = make_stride(g.n, Int<1>{}, int64_t(0));
  typename Gemm::Arguments args{};
  args.mode = cutlass::gemm::GemmUniversalMode::kGemm;
  args.problem_shape = {int(g.m), int(g.n), int(g.k), 1};
  args.mainloop = {static_cast<const ElementAB*>(g.a), sa, static_cast<const ElementAB*>(g.b), sb};
  args.epilogue.ptr_C = nullptr;
  args.epilogue.ptr_D = static_cast<ElementD*>(g.d);
  args.epilogue.dD = sd;
#if PT_FUSION_KIND == 0 || PT_FUSION_KIND == 4
  args.epilogue.thread = {{}, {static_cast<const ElementD*>(g.bias), ElementD(0), {}}, {1.f, g.act, 0, 0}};
#elif PT_FUSION_KIND == 1
  args.epilogue.thread = {{}, {static_cast<const ElementD*>(g.bias), ElementD(0), {}}, {}};
#elif PT_FUSION_KIND == 2
  args.epilogue.thread.alpha = 1.f;
  args.epilogue.thread.beta = 0.f;
  args.epilogue.thread.bias_ptr = static_cast<const ElementD*>(g.bias);
#else
  args.epilogue.thread.alpha = 1.f;
  args.epilogue.thread.beta = 0.f;
#endif
  args.hw_info.sm_count = g.sm_count;
  return args;
}

Gemm g_gemm;
}  // namespace

#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)

extern "C" int CAT(PT_NAME, _init)(const BenchGemm* g, void** ws) {
  auto args = make_arguments(*g);
  if (g_gemm.can_implement(args) != cutlass::Status::kSuccess) return 1;
  size_t n = Gemm::get_workspace_size(args);
  *ws = nullptr;
  if (n && cudaMalloc(ws, n) != cudaSuccess) return 2;
  return g_gemm.initialize(args, *ws, static_cast<cudaStream_t>(g->stream)) == cutlass::Status::kSuccess ? 0 : 3;
}
// The launch alone (arguments as the last _init).
extern "C" int CAT(PT_NAME, _launch)(void* stream) {
  return g_gemm.run(static_cast<cudaStream_t>(stream)) == cutlass::Status::kSuccess ? 0 : 1;
}
// What the backend's unit does per call: can_implement, workspace size, initialize, run.
extern "C" int CAT(PT_NAME, _full)(const BenchGemm* g, void* ws) {
  auto args = make_arguments(*g);
  if (g_gemm.can_implement(args) != cutlass::Status::kSuccess) return 1;
  (void)Gemm::get_workspace_size(args);
  if (g_gemm.initialize(args, ws, static_cast<cudaStream_t>(g->stream)) != cutlass::Status::kSuccess) return 3;
  return g_gemm.run(static_cast<cudaStream_t>(g->stream)) == cutlass::Status::kSuccess ? 0 : 1;
}
