// Winograd F(2x2, 3x3) and F(4x4, 3x3) (src/backend/dnnl/runtime/winograd_conv.h) against oneDNN's
// direct convolution on ResNet's 3x3 stride-1 shapes (N = 1), both on nChw8c activations with bias
// and ReLU fused, as the dnnl module runs them. Runs alternate (oneDNN, Winograd, oneDNN, ...) so
// load on a shared machine hits both alike; prints best and median of each and the ratios, and
// the largest difference between the two outputs relative to the largest output.
// On AVX-512 CPUs, a second table: oneDNN's own Winograd convolution against its direct one, each
// on the layouts it chooses, over the zoo's 3x3 stride-1 shapes (ResNet, GoogLeNet, DenseNet,
// SqueezeNet).
//
//   ./build/bench_winograd [runs=30] [threads=2] [extra shapes as HxWxC ...]
#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <oneapi/dnnl/dnnl.hpp>
#include <random>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "../runtime/winograd_conv.h"

namespace {

namespace dn = ::dnnl;
using tag = dn::memory::format_tag;
using dt = dn::memory::data_type;
using partita::backend::dnnl::WinogradConv;
using partita::backend::dnnl::WinogradPostOp;

void set_threads(int n) {
  using SetFn = void (*)(int);
  if (auto fn = reinterpret_cast<SetFn>(dlsym(RTLD_DEFAULT, "omp_set_num_threads"))) fn(n);
}

double now_ms() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct Stats {
  double best, median;
};

Stats stats(std::vector<double> t) {
  std::sort(t.begin(), t.end());
  return {t.front(), t[t.size() / 2]};
}

void bench(int64_t h, int64_t w, int64_t c, int runs, int threads) {
  dn::engine eng(dn::engine::kind::cpu, 0);
  dn::stream s(eng);
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> x(size_t(c * h * w)), wt(size_t(c * c * 9)), bias(static_cast<size_t>(c));
  for (auto& v : x) v = dist(rng);
  for (auto& v : wt) v = dist(rng) / std::sqrt(float(9 * c));
  for (auto& v : bias) v = dist(rng);

  dn::memory::dims xd{1, c, h, w}, wd{c, c, 3, 3};
  dn::memory::desc src_md(xd, dt::f32, tag::aBcd8b), dst_md(xd, dt::f32, tag::aBcd8b),
      w_any(wd, dt::f32, tag::any), bias_md({c}, dt::f32, tag::a);
  dn::convolution_forward::desc d(dn::prop_kind::forward_inference,
                                  dn::algorithm::convolution_direct, src_md, w_any, bias_md, dst_md,
                                  {1, 1}, {0, 0}, {1, 1}, {1, 1});
  dn::post_ops po;
  po.append_eltwise(1.0f, dn::algorithm::eltwise_relu, 0.0f, 0.0f);
  dn::primitive_attr attr;
  attr.set_post_ops(po);
  dn::convolution_forward::primitive_desc pd(d, attr, eng);
  dn::memory x_plain({xd, dt::f32, tag::nchw}, eng, x.data()),
      w_plain({wd, dt::f32, tag::oihw}, eng, wt.data());
  dn::memory src(src_md, eng), dst(dst_md, eng), dst2(dst_md, eng), wm(pd.weights_desc(), eng),
      bm(bias_md, eng, bias.data());
  dn::reorder(x_plain, src).execute(s, x_plain, src);
  dn::reorder(w_plain, wm).execute(s, w_plain, wm);
  s.wait();
  dn::convolution_forward conv(pd);
  WinogradConv wino(2, 1, c, h, w, c, wt.data(), {{WinogradPostOp::Kind::kRelu, 0.0f}}, threads);
  WinogradConv wino4(4, 1, c, h, w, c, wt.data(), {{WinogradPostOp::Kind::kRelu, 0.0f}}, threads);
  dn::memory dst4(dst_md, eng);
  std::vector<float> work2(size_t(wino.work_size())), work4(size_t(wino4.work_size()));

  auto run_dnnl = [&] {
    conv.execute(
        s, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wm}, {DNNL_ARG_BIAS, bm}, {DNNL_ARG_DST, dst}});
    s.wait();
  };
  auto run_wino = [&] {
    wino.run(static_cast<const float*>(src.get_data_handle()), bias.data(),
             static_cast<float*>(dst2.get_data_handle()), work2.data());
  };
  auto run_wino4 = [&] {
    wino4.run(static_cast<const float*>(src.get_data_handle()), bias.data(),
              static_cast<float*>(dst4.get_data_handle()), work4.data());
  };
  for (int k = 0; k < 3; ++k) run_dnnl(), run_wino(), run_wino4();
  std::vector<double> ta, tb, tc;
  for (int k = 0; k < runs; ++k) {
    double t0 = now_ms();
    run_dnnl();
    double t1 = now_ms();
    run_wino();
    double t2 = now_ms();
    run_wino4();
    double t3 = now_ms();
    ta.push_back(t1 - t0);
    tb.push_back(t2 - t1);
    tc.push_back(t3 - t2);
  }
  const float* a = static_cast<const float*>(dst.get_data_handle());
  auto rel_diff = [&](const dn::memory& m) {
    const float* b = static_cast<const float*>(m.get_data_handle());
    double max_diff = 0, max_ref = 0;
    for (size_t i = 0; i < size_t(c * h * w); ++i) {
      max_diff = std::max(max_diff, double(std::fabs(a[i] - b[i])));
      max_ref = std::max(max_ref, double(std::fabs(a[i])));
    }
    return max_diff / max_ref;
  };
  Stats sa = stats(ta), sb = stats(tb), sc = stats(tc);
  std::printf(
      "%3lldx%-3lldx%4lld  %7.3f %7.3f  %7.3f %7.3f %5.2f %5.2f %8.1e  %7.3f %7.3f %5.2f %5.2f "
      "%8.1e\n",
      (long long)h, (long long)w, (long long)c, sa.best, sa.median, sb.best, sb.median,
      sb.best / sa.best, sb.median / sa.median, rel_diff(dst2), sc.best, sc.median,
      sc.best / sa.best, sc.median / sa.median, rel_diff(dst4));
}

// oneDNN's Winograd against its direct convolution, H x H, cin -> cout, bias + ReLU, each on the
// layouts it chooses (format_tag::any). Returns false where oneDNN has no Winograd here.
bool bench_onednn_winograd(int64_t h, int64_t cin, int64_t cout, int runs) {
  dn::engine eng(dn::engine::kind::cpu, 0);
  dn::stream s(eng);
  dn::memory::dims xd{1, cin, h, h}, wd{cout, cin, 3, 3}, od{1, cout, h, h};
  dn::post_ops po;
  po.append_eltwise(1.0f, dn::algorithm::eltwise_relu, 0.0f, 0.0f);
  dn::primitive_attr attr;
  attr.set_post_ops(po);
  std::vector<dn::convolution_forward> prims;
  std::vector<std::unordered_map<int, dn::memory>> args;
  for (auto alg : {dn::algorithm::convolution_direct, dn::algorithm::convolution_winograd}) {
    dn::convolution_forward::desc d(dn::prop_kind::forward_inference, alg, {xd, dt::f32, tag::any},
                                    {wd, dt::f32, tag::any}, {{cout}, dt::f32, tag::a}, {od, dt::f32, tag::any},
                                    {1, 1}, {1, 1}, {1, 1});
    dn::convolution_forward::primitive_desc pd(d, attr, eng, /*allow_empty=*/true);
    if (!pd) return false;
    prims.emplace_back(pd);
    std::unordered_map<int, dn::memory> a;
    for (auto [arg, md] : {std::pair{DNNL_ARG_SRC, pd.src_desc()}, {DNNL_ARG_WEIGHTS, pd.weights_desc()},
                           {DNNL_ARG_BIAS, pd.bias_desc()}, {DNNL_ARG_DST, pd.dst_desc()}}) {
      a[arg] = dn::memory(md, eng);
      std::fill_n(static_cast<float*>(a[arg].get_data_handle()), md.get_size() / sizeof(float), 0.01f);
    }
    args.push_back(std::move(a));
  }
  std::vector<double> t[2];
  for (int k = 0; k < runs + 3; ++k)
    for (int i = 0; i < 2; ++i) {
      double t0 = now_ms();
      prims[size_t(i)].execute(s, args[size_t(i)]);
      s.wait();
      if (k >= 3) t[i].push_back(now_ms() - t0);
    }
  Stats a = stats(t[0]), b = stats(t[1]);
  std::printf("%3lldx%-3lld %4lld -> %-4lld  %7.3f %7.3f  %7.3f %7.3f  %5.2f\n", (long long)h, (long long)h,
              (long long)cin, (long long)cout, a.best, a.median, b.best, b.median, b.median / a.median);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  int runs = argc > 1 ? std::atoi(argv[1]) : 30;
  int threads = argc > 2 ? std::atoi(argv[2]) : 2;
  if (!WinogradConv::cpu_supported()) {
    std::printf("this CPU lacks AVX2/FMA: the Winograd kernel does not run here\n");
    return 0;
  }
  set_threads(threads);
  std::vector<std::array<int64_t, 3>> shapes = {
      {56, 56, 64}, {28, 28, 128}, {14, 14, 256}, {7, 7, 512}};
  for (int k = 3; k < argc; ++k) {
    long long h, w, c;
    if (std::sscanf(argv[k], "%lldx%lldx%lld", &h, &w, &c) == 3) shapes.push_back({h, w, c});
  }
  std::printf(
      "%d runs, %d threads; times in ms: oneDNN direct | Winograd F(2x2,3x3) | F(4x4,3x3); ratio = "
      "Winograd/oneDNN; diff = max|wino - oneDNN| / max|oneDNN|\n",
      runs, threads);
  std::printf(
      "  HxWxC        dnnl:best  median   F2:best  median r.bst r.med     diff   F4:best  median "
      "r.bst r.med     diff\n");
  for (const auto& [h, w, c] : shapes) bench(h, w, c, runs, threads);
  std::printf("\noneDNN's Winograd convolution against its direct one (each on the layouts it chooses), ms\n");
  std::printf("  HxW     cin -> cout  direct:best median  wino:best median  median ratio\n");
  const std::vector<std::array<int64_t, 3>> zoo = {
      {56, 64, 64},   {28, 128, 128}, {14, 256, 256}, {7, 512, 512}, {56, 64, 192},  {28, 96, 128},
      {28, 16, 32},   {14, 96, 208},  {14, 112, 224}, {14, 128, 256}, {7, 160, 320}, {7, 192, 384},
      {56, 128, 32},  {28, 128, 32},  {14, 128, 32},  {7, 128, 32},  {55, 16, 64},   {27, 32, 128},
      {13, 64, 256},  {224, 3, 64}};
  for (const auto& [h, cin, cout] : zoo)
    if (!bench_onednn_winograd(h, cin, cout, runs)) {
      std::printf("  (oneDNN has no Winograd convolution on this CPU)\n");
      break;
    }
  return 0;
}
