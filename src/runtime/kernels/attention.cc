// relax.nn.attention / relax.nn.attention_bias on the host: softmax(scale · Q·Kᵀ + bias, masked)
// · V per batch and query head, in TVM's layouts (query (B, Sq, N, H), key (B, Skv, Nkv, H),
// value (B, Skv, Nkv, Hv), bias broadcast to (B, N, Sq, Skv), result (B, Sq, N, Hv)). Scores
// and the softmax are computed in float (double sums) for every storage type, float16 and
// bfloat16 included, so the kernel is the reference the GPU backends are compared with.
#include <algorithm>
#include <cmath>
#include <limits>

#include "common.h"

namespace partita::runtime::kernels {
namespace {

void attention(std::span<const Tensor> in, const KernelAttrs& attrs, std::span<Tensor> out) {
  const char* op = in.size() == 4 ? "attention_bias" : "attention";
  if (attrs.has("window_size"))
    throw_error("ValueError", std::string(op) +
                                  ": sliding-window attention (window_size) has no host kernel (as in TVM, whose "
                                  "legalization refuses it)");
  const Tensor& q = in[0];
  const Tensor& k = in[1];
  const Tensor& v = in[2];
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i].ndim() != 4) throw_error("ValueError", std::string(op) + ": every operand must be 4-d");
  const int64_t B = q.shape()[0], Sq = q.shape()[1], N = q.shape()[2], H = q.shape()[3];
  const int64_t Skv = k.shape()[1], Nkv = k.shape()[2], Hv = v.shape()[3];
  if (Nkv <= 0 || N % Nkv != 0 || k.shape()[0] != B || v.shape()[0] != B || k.shape()[3] != H ||
      v.shape()[1] != Skv || v.shape()[2] != Nkv)
    throw_error("ValueError", std::string(op) + ": query, key and value shapes do not agree");
  const int64_t group = N / Nkv;
  const double scale = attrs.has("scale") ? attrs.get_float("scale", 0.0) : 1.0 / std::sqrt(double(H));
  const std::string causal = attrs.get_string("causal_mask", "");
  if (!causal.empty() && causal != "TopLeft" && causal != "BottomRight")
    throw_error("ValueError", std::string(op) + ": unknown causal_mask \"" + causal + "\"");
  // Key j is visible from query i when j <= i + offset (TVM: tril with k = 0 or |Sq - Skv|).
  const int64_t offset = causal == "BottomRight" ? std::abs(Sq - Skv) : 0;
  // Bias strides over (B, N, Sq, Skv), 0 on broadcast dimensions.
  int64_t bs[4] = {0, 0, 0, 0};
  if (in.size() == 4) {
    const Tensor& bias = in[3];
    const int64_t want[4] = {B, N, Sq, Skv};
    auto strides = contiguous_strides(bias.shape());
    for (int d = 0; d < 4; ++d) {
      int64_t e = bias.shape()[size_t(d)];
      if (e != want[d] && !(e == 1 && d < 3))
        throw_error("ValueError", std::string(op) + ": bias does not broadcast to (B, N, Sq, Skv)");
      bs[d] = e == 1 ? 0 : strides[size_t(d)];
    }
    if (!(bias.dtype() == q.dtype())) throw_error("TypeError", std::string(op) + ": bias dtype differs from query's");
  }
  dispatch_with_float16(q.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_floating_point_v<T> && !is_float16_storage_v<T>) {
      unsupported(op, q.dtype());
    } else {
      const T* pq = q.data_as<const T>();
      const T* pk = k.data_as<const T>();
      const T* pv = v.data_as<const T>();
      const T* pb = in.size() == 4 ? in[3].data_as<const T>() : nullptr;
      T* po = out[0].data_as<T>();
      std::vector<double> p(static_cast<size_t>(Skv));
      std::vector<double> acc(static_cast<size_t>(Hv));
      for (int64_t b = 0; b < B; ++b)
        for (int64_t n = 0; n < N; ++n) {
          const int64_t kvn = n / group;
          for (int64_t i = 0; i < Sq; ++i) {
            const int64_t qoff = ((b * Sq + i) * N + n) * H;
            const int64_t visible = causal.empty() ? Skv : std::min(Skv, i + offset + 1);
            double m = -std::numeric_limits<double>::infinity();
            for (int64_t j = 0; j < visible; ++j) {
              const int64_t koff = ((b * Skv + j) * Nkv + kvn) * H;
              double s = 0;
              for (int64_t h = 0; h < H; ++h) s += load_real(pq, qoff + h) * load_real(pk, koff + h);
              s *= scale;
              if (pb) s += load_real(pb, b * bs[0] + n * bs[1] + i * bs[2] + j * bs[3]);
              p[size_t(j)] = s;
              m = std::max(m, s);
            }
            double sum = 0;
            for (int64_t j = 0; j < visible; ++j) sum += p[size_t(j)] = std::exp(p[size_t(j)] - m);
            std::fill(acc.begin(), acc.end(), 0.0);
            for (int64_t j = 0; j < visible; ++j) {
              const int64_t voff = ((b * Skv + j) * Nkv + kvn) * Hv;
              for (int64_t h = 0; h < Hv; ++h) acc[size_t(h)] += p[size_t(j)] * load_real(pv, voff + h);
            }
            const int64_t ooff = ((b * Sq + i) * N + n) * Hv;
            for (int64_t h = 0; h < Hv; ++h) store_real(po, ooff + h, acc[size_t(h)] / sum);
          }
        }
    }
  });
}

}  // namespace

PARTITA_REGISTER_KERNEL("relax.nn.attention", attention);
PARTITA_REGISTER_KERNEL("relax.nn.attention_bias", attention);

}  // namespace partita::runtime::kernels
