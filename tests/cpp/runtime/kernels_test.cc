// Host kernels against straightforward references written here (small shapes, several dtypes
// and attribute combinations).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "partita/runtime/half.h"
#include "partita/runtime/kernel.h"
#include "partita/support/error.h"

using namespace partita;
using namespace partita::runtime;

namespace {

const DataType f32 = DataType::Float(32), f64 = DataType::Float(64), i32 = DataType::Int(32),
               i64 = DataType::Int(64), boolean = DataType::Bool(), f16 = DataType::Float(16),
               bf16 = DataType::BFloat16();

double get(const Tensor& t, int64_t i) {
  DataType d = t.dtype();
  if (d == f32) return t.data_as<float>()[i];
  if (d == f64) return t.data_as<double>()[i];
  if (d == i32) return t.data_as<int32_t>()[i];
  if (d == i64) return double(t.data_as<int64_t>()[i]);
  if (d == f16) return t.data_as<Half>()[i].to_float();
  if (d == bf16) return t.data_as<BFloat16>()[i].to_float();
  return t.data_as<uint8_t>()[i];
}
void set(Tensor& t, int64_t i, double v) {
  DataType d = t.dtype();
  if (d == f32) t.data_as<float>()[i] = float(v);
  else if (d == f64) t.data_as<double>()[i] = v;
  else if (d == i32) t.data_as<int32_t>()[i] = int32_t(v);
  else if (d == i64) t.data_as<int64_t>()[i] = int64_t(v);
  else if (d == f16) t.data_as<Half>()[i] = Half::from(v);
  else if (d == bf16) t.data_as<BFloat16>()[i] = BFloat16::from(v);
  else t.data_as<uint8_t>()[i] = uint8_t(v != 0);
}
Tensor rnd(std::vector<int64_t> shape, DataType dt, uint32_t seed) {
  Tensor t = Tensor::empty(std::move(shape), dt);
  std::mt19937 g(seed);
  for (int64_t i = 0; i < t.numel(); ++i) {
    int v = int(g() % 13) - 6;
    set(t, i, dt.is_float() ? v / 3.0 : v);
  }
  return t;
}
Tensor run1(const std::string& op, std::vector<Tensor> in, KernelAttrs attrs, std::vector<int64_t> shape, DataType dt) {
  std::vector<Tensor> out = {Tensor::empty(std::move(shape), dt)};
  run_kernel(op, in, attrs, out);
  return out[0];
}
KernelAttrs A(std::initializer_list<std::pair<const std::string, KernelAttrValue>> kv) {
  KernelAttrs a;
  a.values = kv;
  return a;
}
/// Multi-index of flat `i` in `shape`.
std::vector<int64_t> unravel(int64_t i, const std::vector<int64_t>& shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = i % shape[d];
    i /= shape[d];
  }
  return idx;
}
int64_t ravel(const std::vector<int64_t>& idx, const std::vector<int64_t>& shape) {
  int64_t o = 0;
  for (size_t d = 0; d < shape.size(); ++d) o = o * shape[d] + idx[d];
  return o;
}
/// Element of `t` at output index `idx` under numpy broadcasting.
double bget(const Tensor& t, const std::vector<int64_t>& idx) {
  std::vector<int64_t> j(size_t(t.ndim()));
  size_t off = idx.size() - j.size();
  for (size_t d = 0; d < j.size(); ++d) j[d] = t.shape()[d] == 1 ? 0 : idx[off + d];
  return get(t, ravel(j, t.shape()));
}
void expect_near(const Tensor& got, const std::vector<double>& want, double tol = 1e-5) {
  ASSERT_EQ(got.numel(), int64_t(want.size()));
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(get(got, int64_t(i)), want[i], tol * (1 + std::abs(want[i]))) << i;
}

}  // namespace

TEST(Kernels, BinaryBroadcastAcrossDtypes) {
  struct Case { std::string op; double (*f)(double, double); };
  std::vector<Case> cases = {
      {"relax.add", [](double a, double b) { return a + b; }},
      {"relax.subtract", [](double a, double b) { return a - b; }},
      {"relax.multiply", [](double a, double b) { return a * b; }},
      {"relax.maximum", [](double a, double b) { return std::max(a, b); }},
      {"relax.minimum", [](double a, double b) { return std::min(a, b); }},
  };
  std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> shapes = {
      {{2, 3, 4}, {2, 3, 4}}, {{2, 3, 4}, {4}}, {{2, 1, 4}, {3, 1}}, {{1}, {2, 3}}, {{}, {3, 2}}, {{5, 1, 3}, {1, 4, 1}}};
  for (DataType dt : {f32, f64, i32, i64})
    for (auto& c : cases)
      for (auto& [sa, sb] : shapes) {
        Tensor a = rnd(sa, dt, 1), b = rnd(sb, dt, 2);
        size_t nd = std::max(sa.size(), sb.size());
        std::vector<int64_t> so(nd);
        for (size_t d = 0; d < nd; ++d) {
          int64_t x = d + sa.size() >= nd ? sa[d + sa.size() - nd] : 1, y = d + sb.size() >= nd ? sb[d + sb.size() - nd] : 1;
          so[d] = std::max(x, y);
        }
        Tensor o = run1(c.op, {a, b}, {}, so, dt);
        std::vector<double> want;
        for (int64_t i = 0; i < o.numel(); ++i) {
          auto idx = unravel(i, so);
          want.push_back(c.f(bget(a, idx), bget(b, idx)));
        }
        expect_near(o, want);
      }
}

TEST(Kernels, DivisionComparisonWhere) {
  Tensor a = Tensor::empty({4}, i32), b = Tensor::empty({4}, i32);
  int av[] = {7, -7, 7, -7}, bv[] = {2, 2, -2, -2};
  for (int i = 0; i < 4; ++i) set(a, i, av[i]), set(b, i, bv[i]);
  expect_near(run1("relax.floor_divide", {a, b}, {}, {4}, i32), {3, -4, -4, 3});
  expect_near(run1("relax.divide", {a, b}, {}, {4}, i32), {3, -4, -4, 3});
  Tensor z = Tensor::empty({4}, i32);
  for (int i = 0; i < 4; ++i) set(z, i, 0);
  EXPECT_THROW(run1("relax.floor_divide", {a, z}, {}, {4}, i32), Error);
  Tensor fa = rnd({3, 4}, f32, 3), fb = rnd({4}, f32, 4);
  Tensor lt = run1("relax.less", {fa, fb}, {}, {3, 4}, boolean);
  std::vector<double> want;
  for (int64_t i = 0; i < 12; ++i) want.push_back(get(fa, i) < get(fb, i % 4));
  expect_near(lt, want);
  Tensor w = run1("relax.where", {lt, fa, fb}, {}, {3, 4}, f32);
  want.clear();
  for (int64_t i = 0; i < 12; ++i) want.push_back(get(lt, i) ? get(fa, i) : get(fb, i % 4));
  expect_near(w, want);
  EXPECT_THROW(run1("relax.add", {fa, Tensor::empty({4}, f64)}, {}, {3, 4}, f32), Error);
}

TEST(Kernels, UnaryActivationsClipAstype) {
  Tensor x = rnd({2, 5}, f64, 5);
  auto check = [&](const std::string& op, double (*f)(double)) {
    Tensor o = run1(op, {x}, {}, {2, 5}, f64);
    std::vector<double> want;
    for (int64_t i = 0; i < 10; ++i) want.push_back(f(get(x, i)));
    expect_near(o, want, 1e-9);
  };
  check("relax.exp", [](double v) { return std::exp(v); });
  check("relax.tanh", [](double v) { return std::tanh(v); });
  check("relax.sigmoid", [](double v) { return 1 / (1 + std::exp(-v)); });
  check("relax.erf", [](double v) { return std::erf(v); });
  check("relax.negative", [](double v) { return -v; });
  check("relax.abs", [](double v) { return std::abs(v); });
  check("relax.nn.relu", [](double v) { return std::max(v, 0.0); });
  check("relax.nn.silu", [](double v) { return v / (1 + std::exp(-v)); });
  check("relax.nn.gelu", [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); });
  Tensor xi = rnd({7}, i64, 6);
  Tensor r = run1("relax.nn.relu", {xi}, {}, {7}, i64);
  for (int64_t i = 0; i < 7; ++i) EXPECT_EQ(get(r, i), std::max(get(xi, i), 0.0));
  Tensor c = run1("relax.clip", {x}, A({{"min", -0.5}, {"max", 1.0}}), {2, 5}, f64);
  for (int64_t i = 0; i < 10; ++i) EXPECT_DOUBLE_EQ(get(c, i), std::clamp(get(x, i), -0.5, 1.0));
  Tensor ci = run1("relax.astype", {x}, {}, {2, 5}, i32);
  for (int64_t i = 0; i < 10; ++i) EXPECT_EQ(get(ci, i), double(int32_t(get(x, i))));
  Tensor cb = run1("relax.astype", {x}, {}, {2, 5}, boolean);
  for (int64_t i = 0; i < 10; ++i) EXPECT_EQ(get(cb, i), get(x, i) != 0 ? 1.0 : 0.0);
  EXPECT_THROW(run1("relax.exp", {xi}, {}, {7}, i64), Error);
  Tensor h = Tensor::empty({2}, DataType::Float(16));
  try {
    run1("relax.add", {h, h}, {}, {2}, DataType::Float(16));
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not supported on the host"), std::string::npos);
  }
}

TEST(Kernels, Reductions) {
  std::vector<int64_t> s = {2, 3, 4};
  for (DataType dt : {f32, f64, i32, i64}) {
    Tensor x = rnd(s, dt, 7);
    for (auto axes : std::vector<std::vector<int64_t>>{{1}, {0, 2}, {-1}, {1, 2}, {}})  // {-1}, {1, 2}, {}: a suffix
      for (bool keep : {false, true})
        for (std::string op : {"relax.sum", "relax.max", "relax.min", "relax.mean", "relax.variance"}) {
          if (!dt.is_float() && (op == "relax.mean" || op == "relax.variance")) continue;
          std::vector<bool> red(3, axes.empty());
          for (auto a : axes) red[size_t((a + 3) % 3)] = true;
          std::vector<int64_t> os, ks;
          for (int d = 0; d < 3; ++d) {
            if (!red[size_t(d)]) os.push_back(s[size_t(d)]);
            else if (keep) os.push_back(1);
            ks.push_back(red[size_t(d)] ? 1 : s[size_t(d)]);
          }
          KernelAttrs at = A({{"keepdims", keep}});
          if (!axes.empty()) at.values["axis"] = axes;
          Tensor o = run1(op, {x}, at, os, dt);
          std::vector<std::vector<double>> groups(size_t(o.numel()));
          for (int64_t i = 0; i < x.numel(); ++i) {
            auto idx = unravel(i, s);
            for (int d = 0; d < 3; ++d)
              if (red[size_t(d)]) idx[size_t(d)] = 0;
            groups[size_t(ravel(idx, ks))].push_back(get(x, i));
          }
          std::vector<double> want;
          for (auto& g : groups) {
            double sum = 0, mx = g[0], mn = g[0];
            for (double v : g) sum += v, mx = std::max(mx, v), mn = std::min(mn, v);
            double mean = sum / double(g.size()), var = 0;
            for (double v : g) var += (v - mean) * (v - mean);
            var /= double(g.size());
            want.push_back(op == "relax.sum" ? sum : op == "relax.max" ? mx : op == "relax.min" ? mn
                                               : op == "relax.mean" ? mean : var);
          }
          expect_near(o, want, 1e-5);
        }
  }
}

TEST(Kernels, SoftmaxAndLogSoftmax) {
  Tensor x = rnd({3, 4}, f32, 8);
  for (int64_t axis : {0, 1, -1}) {
    int ax = int((axis + 2) % 2);
    Tensor o = run1("relax.nn.softmax", {x}, A({{"axis", axis}}), {3, 4}, f32);
    Tensor l = run1("relax.nn.log_softmax", {x}, A({{"axis", axis}}), {3, 4}, f32);
    std::vector<double> want, lwant;
    for (int64_t i = 0; i < 12; ++i) {
      auto idx = unravel(i, {3, 4});
      double s = 0;
      for (int64_t k = 0; k < (ax ? 4 : 3); ++k) {
        auto j = idx;
        j[size_t(ax)] = k;
        s += std::exp(get(x, ravel(j, {3, 4})));
      }
      want.push_back(std::exp(get(x, i)) / s);
      lwant.push_back(get(x, i) - std::log(s));
    }
    expect_near(o, want);
    expect_near(l, lwant);
  }
}

TEST(Kernels, MatmulShapesAndDtypes) {
  auto ref = [](const Tensor& a, const Tensor& b, int64_t M, int64_t K, int64_t N, int64_t batch_a, int64_t batch_b) {
    int64_t B = std::max(batch_a, batch_b);
    std::vector<double> out(size_t(B * M * N), 0);
    for (int64_t t = 0; t < B; ++t)
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j)
          for (int64_t k = 0; k < K; ++k)
            out[size_t((t * M + i) * N + j)] += get(a, ((batch_a == 1 ? 0 : t) * M + i) * K + k) *
                                                get(b, ((batch_b == 1 ? 0 : t) * K + k) * N + j);
    return out;
  };
  for (DataType dt : {f32, f64, i32, i64}) {
    Tensor a = rnd({37, 53}, dt, 1), b = rnd({53, 29}, dt, 2);
    expect_near(run1("relax.matmul", {a, b}, {}, {37, 29}, dt), ref(a, b, 37, 53, 29, 1, 1), 1e-4);
    Tensor ba = rnd({3, 4, 5}, dt, 3), bb = rnd({5, 6}, dt, 4);
    expect_near(run1("relax.matmul", {ba, bb}, {}, {3, 4, 6}, dt), ref(ba, bb, 4, 5, 6, 3, 1), 1e-4);
    Tensor v = rnd({5}, dt, 5);
    expect_near(run1("relax.matmul", {v, bb}, {}, {6}, dt), ref(v, bb, 1, 5, 6, 1, 1), 1e-4);
  }
  Tensor a = rnd({2, 3}, f32, 1), b = rnd({3, 2}, f32, 2);
  Tensor o = run1("relax.matmul", {a, b}, {}, {2, 2}, f64);
  expect_near(o, ref(a, b, 2, 3, 2, 1, 1), 1e-5);
}

// A batch of 0 broadcast against a batch of 1 is an empty product (numpy's rule: 1 stretches
// to 0), so nothing is written: the output's buffer, larger than its 0 elements, keeps its bytes.
TEST(Kernels, MatmulEmptyBatchWritesNothing) {
  std::shared_ptr<uint8_t> buffer(new uint8_t[64], std::default_delete<uint8_t[]>());
  std::fill_n(buffer.get(), 64, uint8_t(0xAB));
  std::vector<Tensor> out = {Tensor::from_buffer({0, 2, 3}, f32, buffer)};
  std::vector<Tensor> in = {rnd({0, 2, 5}, f32, 1), rnd({1, 5, 3}, f32, 2)};
  run_kernel("relax.matmul", in, {}, out);
  EXPECT_TRUE(std::all_of(buffer.get(), buffer.get() + 64, [](uint8_t v) { return v == 0xAB; }));
}

TEST(Kernels, Conv2dAttributes) {
  struct P { int64_t n, c, h, w, o, kh, kw, sh, sw, pt, pl, pb, pr, dh, dw, g; };
  for (P p : {P{1, 3, 7, 7, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1}, P{2, 4, 9, 8, 6, 3, 2, 2, 1, 0, 1, 2, 0, 2, 1, 2},
              P{1, 4, 6, 6, 4, 3, 3, 1, 2, 1, 0, 1, 1, 1, 2, 4}}) {
    for (DataType dt : {f32, f64, i32}) {
      Tensor x = rnd({p.n, p.c, p.h, p.w}, dt, 11), w = rnd({p.o, p.c / p.g, p.kh, p.kw}, dt, 12);
      int64_t oh = (p.h + p.pt + p.pb - p.dh * (p.kh - 1) - 1) / p.sh + 1;
      int64_t ow = (p.w + p.pl + p.pr - p.dw * (p.kw - 1) - 1) / p.sw + 1;
      KernelAttrs at = A({{"strides", std::vector<int64_t>{p.sh, p.sw}},
                          {"padding", std::vector<int64_t>{p.pt, p.pl, p.pb, p.pr}},
                          {"dilation", std::vector<int64_t>{p.dh, p.dw}},
                          {"groups", p.g}});
      Tensor y = run1("relax.nn.conv2d", {x, w}, at, {p.n, p.o, oh, ow}, dt);
      std::vector<double> want;
      int64_t cg = p.c / p.g, og = p.o / p.g;
      for (int64_t n = 0; n < p.n; ++n)
        for (int64_t o = 0; o < p.o; ++o)
          for (int64_t i = 0; i < oh; ++i)
            for (int64_t j = 0; j < ow; ++j) {
              double s = 0;
              int64_t g = o / og;
              for (int64_t c = 0; c < cg; ++c)
                for (int64_t a = 0; a < p.kh; ++a)
                  for (int64_t b = 0; b < p.kw; ++b) {
                    int64_t ih = i * p.sh - p.pt + a * p.dh, iw = j * p.sw - p.pl + b * p.dw;
                    if (ih < 0 || ih >= p.h || iw < 0 || iw >= p.w) continue;
                    s += get(x, ((n * p.c + g * cg + c) * p.h + ih) * p.w + iw) * get(w, ((o * cg + c) * p.kh + a) * p.kw + b);
                  }
              want.push_back(s);
            }
      expect_near(y, want, 1e-4);
    }
  }
}

TEST(Kernels, PoolsCeilModeAndPadding) {
  Tensor x = rnd({1, 2, 5, 5}, f32, 13);
  for (bool ceil : {false, true})
    for (bool include : {false, true})
      for (std::string op : {"relax.nn.max_pool2d", "relax.nn.avg_pool2d"}) {
        int64_t k = 2, s = 2, pad = 1;
        auto out_dim = [&](int64_t d) {
          int64_t num = d + 2 * pad - k;
          int64_t o = (ceil ? (num + s - 1) / s : num / s) + 1;
          if (ceil && (o - 1) * s >= d + pad) --o;
          return o;
        };
        int64_t oh = out_dim(5);
        KernelAttrs at = A({{"pool_size", std::vector<int64_t>{k, k}}, {"strides", std::vector<int64_t>{s, s}},
                            {"padding", std::vector<int64_t>{pad, pad, pad, pad}}, {"ceil_mode", ceil},
                            {"count_include_pad", include}});
        Tensor y = run1(op, {x}, at, {1, 2, oh, oh}, f32);
        std::vector<double> want;
        for (int64_t c = 0; c < 2; ++c)
          for (int64_t i = 0; i < oh; ++i)
            for (int64_t j = 0; j < oh; ++j) {
              double best = -1e30, sum = 0;
              int cnt = 0, padded = 0;
              for (int64_t a = 0; a < k; ++a)
                for (int64_t b = 0; b < k; ++b) {
                  int64_t ih = i * s - pad + a, iw = j * s - pad + b;
                  if (ih < 5 + pad && iw < 5 + pad) ++padded;
                  if (ih < 0 || ih >= 5 || iw < 0 || iw >= 5) continue;
                  double v = get(x, (c * 5 + ih) * 5 + iw);
                  best = std::max(best, v), sum += v, ++cnt;
                }
              want.push_back(op == "relax.nn.max_pool2d" ? best : sum / (include ? padded : cnt));
            }
        expect_near(y, want);
      }
  Tensor ad = run1("relax.nn.adaptive_avg_pool2d", {x}, {}, {1, 2, 2, 3}, f32);
  std::vector<double> want;
  for (int64_t c = 0; c < 2; ++c)
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 3; ++j) {
        int64_t h0 = i * 5 / 2, h1 = ((i + 1) * 5 + 1) / 2, w0 = j * 5 / 3, w1 = ((j + 1) * 5 + 2) / 3;
        double s = 0;
        for (int64_t a = h0; a < h1; ++a)
          for (int64_t b = w0; b < w1; ++b) s += get(x, (c * 5 + a) * 5 + b);
        want.push_back(s / double((h1 - h0) * (w1 - w0)));
      }
  expect_near(ad, want);
}

TEST(Kernels, LayerNormOf16BitTensorsHasDoubleStatistics) {
  // InstanceNormalization of .half() exports imports as a layer norm: the host runs it for
  // float16 / bfloat16 storage, with statistics in double (data far from zero would lose its
  // variance in a 16-bit mean) and one rounding of each result.
  for (DataType dt : {f16, bf16}) {
    Tensor x = rnd({2, 48}, dt, 21), g = rnd({48}, dt, 22), b = rnd({48}, dt, 23);
    for (int64_t i = 0; i < x.numel(); ++i) set(x, i, 100 + get(x, i));
    Tensor y = run1("relax.nn.layer_norm", {x, g, b}, A({{"axes", std::vector<int64_t>{-1}}, {"epsilon", 1e-5}}),
                    {2, 48}, dt);
    for (int64_t r = 0; r < 2; ++r) {
      double m = 0, v = 0;
      for (int k = 0; k < 48; ++k) m += get(x, r * 48 + k) / 48;
      for (int k = 0; k < 48; ++k) v += (get(x, r * 48 + k) - m) * (get(x, r * 48 + k) - m) / 48;
      for (int k = 0; k < 48; ++k) {
        double want = (get(x, r * 48 + k) - m) / std::sqrt(v + 1e-5) * get(g, k) + get(b, k);
        EXPECT_NEAR(get(y, r * 48 + k), want, (dt == f16 ? 1e-3 : 8e-3) * (std::abs(want) + 1))
            << dt.str() << " row " << r << " element " << k;
      }
    }
  }
}

TEST(Kernels, LayerNormAndBatchNorm) {
  Tensor x = rnd({2, 3, 4}, f32, 14), g = rnd({4}, f32, 15), b = rnd({4}, f32, 16);
  Tensor y = run1("relax.nn.layer_norm", {x, g, b}, A({{"axes", std::vector<int64_t>{-1}}, {"epsilon", 1e-5}}),
                  {2, 3, 4}, f32);
  std::vector<double> want;
  for (int64_t r = 0; r < 6; ++r) {
    double m = 0, v = 0;
    for (int k = 0; k < 4; ++k) m += get(x, r * 4 + k) / 4;
    for (int k = 0; k < 4; ++k) v += (get(x, r * 4 + k) - m) * (get(x, r * 4 + k) - m) / 4;
    for (int k = 0; k < 4; ++k) want.push_back((get(x, r * 4 + k) - m) / std::sqrt(v + 1e-5) * get(g, k) + get(b, k));
  }
  expect_near(y, want, 1e-4);
  Tensor gc = rnd({3}, f32, 17), bc = rnd({3}, f32, 18), mm = rnd({3}, f32, 19), mv = Tensor::empty({3}, f32);
  for (int i = 0; i < 3; ++i) set(mv, i, 0.5 + i);
  for (bool training : {false, true}) {
    std::vector<Tensor> out = {Tensor::empty({2, 3, 4}, f32), Tensor::empty({3}, f32), Tensor::empty({3}, f32)};
    run_kernel("relax.nn.batch_norm", std::vector<Tensor>{x, gc, bc, mm, mv},
               A({{"axis", int64_t(1)}, {"epsilon", 1e-5}, {"momentum", 0.1}, {"training", training}}), out);
    std::vector<double> want2;
    std::vector<double> mean(3), var(3);
    for (int c = 0; c < 3; ++c) {
      if (!training) {
        mean[size_t(c)] = get(mm, c), var[size_t(c)] = get(mv, c);
        continue;
      }
      double s = 0, q = 0;
      for (int n = 0; n < 2; ++n)
        for (int k = 0; k < 4; ++k) s += get(x, (n * 3 + c) * 4 + k) / 8;
      for (int n = 0; n < 2; ++n)
        for (int k = 0; k < 4; ++k) q += std::pow(get(x, (n * 3 + c) * 4 + k) - s, 2) / 8;
      mean[size_t(c)] = s, var[size_t(c)] = q;
    }
    for (int n = 0; n < 2; ++n)
      for (int c = 0; c < 3; ++c)
        for (int k = 0; k < 4; ++k)
          want2.push_back((get(x, (n * 3 + c) * 4 + k) - mean[size_t(c)]) / std::sqrt(var[size_t(c)] + 1e-5) * get(gc, c) +
                          get(bc, c));
    expect_near(out[0], want2, 1e-4);
    for (int c = 0; c < 3; ++c)
      EXPECT_NEAR(get(out[1], c), training ? 0.9 * get(mm, c) + 0.1 * mean[size_t(c)] : get(mm, c), 1e-5);
  }
}

TEST(Kernels, PadModes) {
  Tensor x = rnd({2, 3}, i32, 20);
  for (std::string mode : {"constant", "edge", "reflect"}) {
    Tensor y = run1("relax.nn.pad", {x}, A({{"pad_width", std::vector<int64_t>{1, 0, 2, 1}}, {"pad_value", 9.0}, {"pad_mode", mode}}),
                    {3, 6}, i32);
    std::vector<double> want;
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 6; ++j) {
        int64_t a = i - 1, b = j - 2;
        auto fix = [&](int64_t v, int64_t n) {
          if (mode == "edge") return std::clamp<int64_t>(v, 0, n - 1);
          if (v < 0) return -v;
          if (v >= n) return 2 * (n - 1) - v;
          return v;
        };
        bool out = a < 0 || a >= 2 || b < 0 || b >= 3;
        if (out && mode == "constant") want.push_back(9);
        else want.push_back(get(x, fix(a, 2) * 3 + fix(b, 3)));
      }
    expect_near(y, want);
  }
}

// Transposes large enough for the tiled copy (the output's fastest axis strided in the input):
// every element where the permutation puts it, for 1-, 2-, 4- and 8-byte elements, sizes that
// are not multiples of the tile, several permutations (NCHW <-> NHWC, a 2-D transpose, a 5-D
// channel shuffle) and size-1 axes.
TEST(Kernels, PermuteDimsTiledMatchesTheDefinition) {
  struct Case {
    std::vector<int64_t> shape, axes;
  };
  const std::vector<Case> cases = {{{1, 37, 9, 45}, {0, 2, 3, 1}}, {{2, 11, 70, 3}, {0, 3, 1, 2}},
                                   {{67, 33}, {1, 0}},            {{1, 2, 29, 5, 7}, {0, 2, 1, 3, 4}},
                                   {{3, 1, 40, 1}, {3, 2, 1, 0}}, {{5, 33, 34}, {2, 0, 1}}};
  for (DataType dt : {DataType::Int(8), DataType::Float(16), DataType::Float(32), f64}) {
    for (const Case& c : cases) {
      SCOPED_TRACE(dt.str() + " case of rank " + std::to_string(c.shape.size()));
      Tensor x = Tensor::empty(c.shape, dt);
      auto* bytes = static_cast<uint8_t*>(x.data());
      // Each element holds its own index (its low bytes: unique for 2 bytes and more here; for
      // int8, modulo 256), so a misplaced element shows.
      const size_t width = size_t(dt.bytes());
      for (int64_t i = 0; i < x.numel(); ++i) {
        const uint64_t index = uint64_t(i);
        std::memcpy(bytes + size_t(i) * width, &index, width);
      }
      std::vector<int64_t> out_shape;
      for (int64_t a : c.axes) out_shape.push_back(c.shape[size_t(a)]);
      Tensor y = run1("relax.permute_dims", {x}, A({{"axes", c.axes}}), out_shape, dt);
      const size_t es = size_t(dt.bytes());
      const auto* got = static_cast<const uint8_t*>(y.data());
      for (int64_t i = 0; i < y.numel(); ++i) {
        auto idx = unravel(i, out_shape);
        std::vector<int64_t> src(c.shape.size());
        for (size_t k = 0; k < c.axes.size(); ++k) src[size_t(c.axes[k])] = idx[k];
        ASSERT_EQ(std::memcmp(got + size_t(i) * es, bytes + size_t(ravel(src, c.shape)) * es, es), 0) << "element " << i;
      }
    }
  }
}

TEST(Kernels, DataMovement) {
  Tensor x = rnd({2, 3, 4}, f64, 21);
  Tensor p = run1("relax.permute_dims", {x}, A({{"axes", std::vector<int64_t>{2, 0, 1}}}), {4, 2, 3}, f64);
  for (int64_t i = 0; i < 24; ++i) {
    auto idx = unravel(i, {4, 2, 3});
    EXPECT_EQ(get(p, i), get(x, ravel({idx[1], idx[2], idx[0]}, {2, 3, 4})));
  }
  Tensor t = run1("relax.permute_dims", {x}, {}, {4, 3, 2}, f64);
  EXPECT_EQ(get(t, ravel({3, 1, 0}, {4, 3, 2})), get(x, ravel({0, 1, 3}, {2, 3, 4})));
  Tensor bsrc = rnd({3, 1}, i64, 22);
  Tensor bc = run1("relax.broadcast_to", {bsrc}, {}, {2, 3, 4}, i64);
  for (int64_t i = 0; i < 24; ++i) EXPECT_EQ(get(bc, i), get(bsrc, unravel(i, {2, 3, 4})[1]));
  Tensor y = rnd({2, 1, 4}, f64, 23);
  Tensor c = run1("relax.concat", {x, y}, A({{"axis", int64_t(1)}}), {2, 4, 4}, f64);
  for (int64_t i = 0; i < 32; ++i) {
    auto idx = unravel(i, {2, 4, 4});
    EXPECT_EQ(get(c, i), idx[1] < 3 ? get(x, ravel(idx, {2, 3, 4})) : get(y, ravel({idx[0], 0, idx[2]}, {2, 1, 4})));
  }
  // axis=None concatenates the flattened inputs.
  Tensor flat = run1("relax.concat", {x, y}, {}, {32}, f64);
  for (int64_t i = 0; i < 32; ++i) EXPECT_EQ(get(flat, i), i < 24 ? get(x, i) : get(y, i - 24));
  std::vector<Tensor> parts = {Tensor::empty({2, 3, 1}, f64), Tensor::empty({2, 3, 3}, f64)};
  run_kernel("relax.split", std::vector<Tensor>{x}, A({{"axis", int64_t(2)}}), parts);
  for (int64_t i = 0; i < 18; ++i) {
    auto idx = unravel(i, {2, 3, 3});
    EXPECT_EQ(get(parts[1], i), get(x, ravel({idx[0], idx[1], idx[2] + 1}, {2, 3, 4})));
  }
  // x[:, ::-2, 1:4:2]
  Tensor s = run1("relax.strided_slice", {x},
                  A({{"axes", std::vector<int64_t>{1, 2}}, {"begin", std::vector<int64_t>{-1, 1}},
                     {"end", std::vector<int64_t>{-100, 4}}, {"strides", std::vector<int64_t>{-2, 2}}}),
                  {2, 2, 2}, f64);
  for (int64_t i = 0; i < 8; ++i) {
    auto idx = unravel(i, {2, 2, 2});
    EXPECT_EQ(get(s, i), get(x, ravel({idx[0], 2 - 2 * idx[1], 1 + 2 * idx[2]}, {2, 3, 4})));
  }
  Tensor ind = Tensor::empty({2, 2}, i64);
  int64_t iv[] = {3, 0, -1, 2};
  for (int i = 0; i < 4; ++i) set(ind, i, double(iv[i]));
  Tensor tk = run1("relax.take", {x, ind}, A({{"axis", int64_t(2)}}), {2, 3, 2, 2}, f64);
  for (int64_t i = 0; i < 24; ++i) {
    auto idx = unravel(i, {2, 3, 2, 2});
    int64_t k = iv[idx[2] * 2 + idx[3]];
    if (k < 0) k += 4;
    EXPECT_EQ(get(tk, i), get(x, ravel({idx[0], idx[1], k}, {2, 3, 4})));
  }
  set(ind, 0, 17);
  EXPECT_THROW(run1("relax.take", {x, ind}, A({{"axis", int64_t(2)}}), {2, 3, 2, 2}, f64), Error);
  Tensor tc = run1("relax.take", {x, ind}, A({{"axis", int64_t(2)}, {"mode", std::string("clip")}}), {2, 3, 2, 2}, f64);
  EXPECT_EQ(get(tc, 0), get(x, 3));
  Tensor fv = Tensor::empty({}, f64);
  set(fv, 0, 2.5);
  Tensor full = run1("relax.full", {fv}, {}, {2, 2}, f32);
  expect_near(full, {2.5, 2.5, 2.5, 2.5});
  expect_near(run1("relax.ones", {}, {}, {3}, i32), {1, 1, 1});
  expect_near(run1("relax.zeros_like", {x}, {}, {2}, f64), {0, 0});
}
