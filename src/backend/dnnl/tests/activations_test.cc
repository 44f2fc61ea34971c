// The SiLU and GELU kernels that replace oneDNN's (runtime/activations.h): every path this CPU
// runs, against double precision, with vector tails, in place and out of place, at the extremes.
#include "../runtime/activations.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace partita::backend::dnnl {
namespace {

std::vector<VectorPath> paths_here() {
  std::vector<VectorPath> out = {VectorPath::kScalar};
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) out.push_back(VectorPath::kAvx2);
  if (__builtin_cpu_supports("avx512f")) out.push_back(VectorPath::kAvx512);
  return out;
}

double reference(Activation f, double x) {
  return f == Activation::kSilu ? x / (1.0 + std::exp(-x)) : 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
}

// SiLU to 1e-6 relative; GELU to erf's approximation (1.5e-7 absolute in erf, so 1e-7 |x|).
TEST(Activations, EveryPathMatchesDoublePrecision) {
  const int64_t n = 70001;  // not a multiple of any vector width, several threads' chunks
  std::vector<float> x(n);
  for (int64_t i = 0; i < n; ++i) x[size_t(i)] = -120.f + 240.f * float(i) / float(n - 1);
  for (Activation f : {Activation::kSilu, Activation::kGelu})
    for (VectorPath path : paths_here()) {
      std::vector<float> y(n), z = x;
      activation(f, x.data(), y.data(), n, 2, path);
      activation(f, z.data(), z.data(), n, 2, path);  // in place
      for (int64_t i = 0; i < n; ++i) {
        const double xi = x[size_t(i)], want = reference(f, xi);
        const double tol = f == Activation::kSilu ? 1e-6 * std::fabs(want) + 1e-30 : 1e-7 * std::fabs(xi) + 1e-6 * std::fabs(want);
        ASSERT_NEAR(y[size_t(i)], want, tol) << "activation " << int(f) << ", path " << int(path) << ", x = " << xi;
        ASSERT_EQ(y[size_t(i)], z[size_t(i)]);
      }
    }
}

// Infinities and NaN: +inf stays, NaN stays NaN, -inf gives no positive number (x / (1 + e^-x)
// is NaN there in IEEE arithmetic, the limit 0).
TEST(Activations, InfinitiesAndNaN) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  for (Activation f : {Activation::kSilu, Activation::kGelu})
    for (VectorPath path : paths_here()) {
      std::vector<float> x(37, 0.f);
      x[3] = inf, x[20] = -inf, x[33] = nan, x[5] = -0.f;
      activation(f, x.data(), x.data(), int64_t(x.size()), 1, path);
      EXPECT_EQ(x[3], inf) << int(f) << " " << int(path);
      EXPECT_FALSE(x[20] > 0.f) << int(f) << " " << int(path);
      EXPECT_TRUE(std::isnan(x[33])) << int(f) << " " << int(path);
      EXPECT_EQ(x[0], 0.f);
      EXPECT_EQ(x[5], 0.f);
    }
}

}  // namespace
}  // namespace partita::backend::dnnl
