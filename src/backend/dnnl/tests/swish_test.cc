// The SiLU kernel that replaces oneDNN's swish (runtime/swish.h): every path this CPU runs,
// against double precision, with vector tails, in place and out of place, at the extremes.
#include "../runtime/swish.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace partita::backend::dnnl {
namespace {

std::vector<SwishPath> paths_here() {
  std::vector<SwishPath> out = {SwishPath::kScalar};
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) out.push_back(SwishPath::kAvx2);
  if (__builtin_cpu_supports("avx512f")) out.push_back(SwishPath::kAvx512);
  return out;
}

double reference(double x) { return x / (1.0 + std::exp(-x)); }

TEST(Swish, EveryPathMatchesDoublePrecision) {
  const int64_t n = 70001;  // not a multiple of any vector width, several threads' chunks
  std::vector<float> x(n);
  for (int64_t i = 0; i < n; ++i) x[size_t(i)] = -120.f + 240.f * float(i) / float(n - 1);
  for (SwishPath path : paths_here()) {
    std::vector<float> y(n), z = x;
    swish(x.data(), y.data(), n, 2, path);
    swish(z.data(), z.data(), n, 2, path);  // in place
    for (int64_t i = 0; i < n; ++i) {
      const double want = reference(x[size_t(i)]);
      ASSERT_NEAR(y[size_t(i)], want, 1e-6 * std::fabs(want) + 1e-30) << "path " << int(path) << ", x = " << x[size_t(i)];
      ASSERT_EQ(y[size_t(i)], z[size_t(i)]);
    }
  }
}

// Infinities and NaN: +inf stays, NaN stays NaN, -inf gives no positive number (x / (1 + e^-x)
// is NaN there in IEEE arithmetic, the limit is 0, the AVX2 path's reciprocal gives -inf).
TEST(Swish, InfinitiesAndNaN) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  for (SwishPath path : paths_here()) {
    std::vector<float> x(37, 0.f);
    x[3] = inf, x[20] = -inf, x[33] = nan, x[5] = -0.f;
    swish(x.data(), x.data(), int64_t(x.size()), 1, path);
    EXPECT_EQ(x[3], inf) << int(path);
    EXPECT_FALSE(x[20] > 0.f) << int(path);
    EXPECT_TRUE(std::isnan(x[33])) << int(path);
    EXPECT_EQ(x[0], 0.f);
    EXPECT_EQ(x[5], 0.f);
  }
}

}  // namespace
}  // namespace partita::backend::dnnl
