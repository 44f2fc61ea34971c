// The dnnl backend takes only what it runs: random graphs of the operators of its pattern table
// (element-wise ops on 0-d to 5-d tensors with every kind of broadcast and scalar constants,
// grouped, dilated, strided and padded convolutions with bias / residual / activation, pooling
// with every attribute, softmax and layer norm on any axis, matmuls of 1-d to 4-d operands with
// transposed weights and biases of every shape), plus what it must leave to the host (other
// dtypes, symbolic shapes), are partitioned with partition_for, built with fallback off,
// exported, reloaded and run, and must match the host VM.
#include <gtest/gtest.h>

#include "backend_differential.h"
#include "verbose_log.h"

namespace partita::backend::dnnl {
namespace {

using testing::GraphValue;
using testing::RandomGraph;
constexpr DataType F32 = DataType::Float(32);
using Ints = std::vector<int64_t>;

int64_t numel(const Ints& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

class DnnlGraph : public RandomGraph {
 public:
  explicit DnnlGraph(uint32_t seed) : RandomGraph(seed) {}

  Case generate() {
    if (chance(0.05)) return symbolic_case();
    std::vector<GraphValue> extra_outputs;
    int steps = int(uniform(1, 6));
    for (int s = 0; s < steps; ++s) {
      double r = real(0, 1.16);
      if (r < 0.17) unary();
      else if (r < 0.20) permute();
      else if (r < 0.42) binary();
      else if (r < 0.57) conv();
      else if (r < 0.62) gated_conv();
      else if (r < 0.72) pool();
      else if (r < 0.77) softmax();
      else if (r < 0.82) layer_norm();
      else if (r < 0.89) matmul();
      else if (r < 0.93) concat();
      else if (r < 0.96) batch_norm();
      else if (r < 0.975) pad();
      else if (r < 0.985) hard_activation();
      else if (r < 0.995) resize();
      else if (r < 1.0) extra_outputs.push_back(other_dtype());
      else if (r < 1.08) reshape();
      else if (r < 1.13) slice();
      else divide();
    }
    if (values().empty()) unary();
    std::vector<GraphValue> outs;
    outs.reserve(2 + extra_outputs.size());
    outs.push_back(last_f32());
    if (chance(0.25)) outs.push_back(pick(values()));
    for (auto& v : extra_outputs) outs.push_back(v);
    return finish(outs);
  }

 private:
  int64_t dim() { return pick(Ints{1, 1, 2, 3, 4, 5, 7, 8, 13, 16}); }

  Ints shape(int rank, bool allow_empty = false) {
    Ints s;
    for (int k = 0; k < rank; ++k) s.push_back(dim());
    while (numel(s) > 1024)
      for (auto& d : s) d = std::max<int64_t>(1, d / 2);
    if (allow_empty && rank > 0 && chance(0.04)) s[size_t(uniform(0, rank - 1))] = 0;
    return s;
  }

  GraphValue fresh(const Ints& s, double p_const = 0.3, double scale = 1.0) {
    return chance(p_const) ? constant(s, scale) : param(s, F32, scale);
  }

  GraphValue last_f32() {
    for (auto it = values().rbegin(); it != values().rend(); ++it)
      if (it->dtype == F32 && !it->symbolic) return *it;
    return emit(op::nn::relu(param(shape(2)).expr), 1, true);
  }

  // A float32 value of rank in [lo, hi] already in the graph (the latest ones preferred, so
  // chains form and fuse), or a new one.
  GraphValue operand(int lo, int hi, bool allow_empty = true) {
    if (chance(0.7)) {
      std::vector<GraphValue> ok;
      for (const auto& v : values())
        if (v.dtype == F32 && !v.symbolic && int(v.shape.size()) >= lo && int(v.shape.size()) <= hi &&
            numel(v.shape) > 0)
          ok.push_back(v);
      if (!ok.empty()) return chance(0.6) ? ok.back() : pick(ok);
    }
    return fresh(shape(int(uniform(lo, hi)), allow_empty));
  }

  GraphValue operand4d() {
    if (chance(0.6)) {
      std::vector<GraphValue> ok;
      for (const auto& v : values())
        if (v.dtype == F32 && !v.symbolic && v.shape.size() == 4 && numel(v.shape) > 0 && v.shape[1] <= 32)
          ok.push_back(v);
      if (!ok.empty()) return chance(0.6) ? ok.back() : pick(ok);
    }
    Ints s = {pick(Ints{1, 1, 2}), pick(Ints{1, 2, 3, 4, 5, 6, 8, 12, 16}), uniform(1, 12), uniform(1, 12)};
    return fresh(s, 0.1);
  }

  GraphValue activation(const GraphValue& x) {
    switch (uniform(0, 6)) {
      case 0: return emit(op::nn::relu(x.expr), x.bound, true);
      case 1: return emit(op::nn::gelu(x.expr), x.bound);
      case 2: return emit(op::nn::gelu_tanh(x.expr), x.bound);
      case 3: return emit(op::nn::silu(x.expr), x.bound);
      case 4: return emit(op::sigmoid(x.expr), 1, true);
      case 5: return emit(op::tanh(x.expr), 1);
      default: {
        double lo = pick(std::vector<double>{0.0, -1.0, -0.25}), hi = pick(std::vector<double>{6.0, 1.0, 0.5});
        return emit(op::clip(x.expr, lo, hi), std::max(-lo, hi), lo >= 0);
      }
    }
  }

  // A reshape to a random shape of as many elements (the prime factors of the count spread over
  // 0 to 5 axes, with 1s), or a channel shuffle: (N, G, C / G, H, W), its two group axes
  // swapped, back to (N, C, H, W) — on values of every layout the partition gives them.
  void reshape() {
    GraphValue x = operand(0, 5);
    const Ints& s = x.shape;
    if (s.size() == 4 && chance(0.35)) {
      for (int64_t g : {2, 3, 4})
        if (s[1] % g == 0 && s[1] > g) {
          std::vector<PrimExpr> split = {int_imm(s[0]), int_imm(g), int_imm(s[1] / g), int_imm(s[2]), int_imm(s[3])};
          GraphValue y = emit(op::reshape(x.expr, split), x.bound, x.nonneg);
          GraphValue t = emit(op::permute_dims(y.expr, Ints{0, 2, 1, 3, 4}), x.bound, x.nonneg);
          std::vector<PrimExpr> back;
          for (int64_t d : s) back.push_back(int_imm(d));
          emit(op::reshape(t.expr, back), x.bound, x.nonneg);
          return;
        }
    }
    Ints factors;
    int64_t n = numel(s);
    for (int64_t p = 2; p * p <= n; ++p)
      while (n % p == 0) factors.push_back(p), n /= p;
    if (n > 1) factors.push_back(n);
    Ints out(size_t(uniform(factors.empty() && numel(s) == 1 ? 0 : 1, 5)), 1);
    for (int64_t f : factors) out[size_t(uniform(0, int64_t(out.size()) - 1))] *= f;
    if (numel(s) == 0) out[size_t(uniform(0, int64_t(out.size()) - 1))] = 0;  // still empty
    std::vector<PrimExpr> shape;
    for (int64_t d : out) shape.push_back(int_imm(d));
    emit(op::reshape(x.expr, shape), x.bound, x.nonneg);
  }

  // A unit-stride slice along one or two axes (starts from the front or, negative, the back),
  // sometimes with an explicit stride of 1.
  void slice() {
    GraphValue x = operand(1, 5, false);
    const int64_t nd = int64_t(x.shape.size());
    Ints axes = {uniform(0, nd - 1)};
    if (nd > 1 && chance(0.3)) axes.push_back((axes[0] + 1) % nd);
    std::vector<PrimExpr> begin, end, strides;
    for (int64_t a : axes) {
      int64_t d = x.shape[size_t(a)], b = uniform(0, d - 1), e = uniform(b + 1, d);
      begin.push_back(int_imm(chance(0.3) ? b - d : b));
      end.push_back(int_imm(e));
      strides.push_back(int_imm(1));
    }
    auto st = chance(0.3) ? std::optional<std::vector<PrimExpr>>(strides) : std::nullopt;
    emit(op::strided_slice(x.expr, axes, begin, end, st), x.bound, x.nonneg);
  }

  // A quotient by a divisor kept in [0.5, 2] (a broadcast one, a scalar, a constant).
  void divide() {
    GraphValue a = operand(0, 5);
    Ints bs = chance(0.4) ? Ints{} : a.shape;
    if (!bs.empty())
      for (auto& d : bs)
        if (chance(0.4)) d = 1;
    GraphValue b = fresh(bs, 0.5);
    GraphValue d = emit(op::clip(b.expr, 0.5, 2.0), 2.0, true);
    emit(op::divide(a.expr, d.expr), a.bound * 2, a.nonneg);
  }

  /// A random permutation of a 0-d to 5-d operand's axes.
  void permute() {
    GraphValue x = operand(0, 5);
    Ints axes(x.shape.size());
    for (size_t k = 0; k < axes.size(); ++k) axes[k] = int64_t(k);
    for (size_t k = axes.size(); k > 1; --k) std::swap(axes[k - 1], axes[size_t(uniform(0, int64_t(k) - 1))]);
    emit(op::permute_dims(x.expr, axes), x.bound, x.nonneg);
  }

  void unary() {
    GraphValue x = operand(0, 5);
    switch (uniform(0, 4)) {
      case 0: activation(x); return;
      case 1:
        if (x.bound <= 4) emit(op::exp(x.expr), std::exp(x.bound), true);
        else emit(op::tanh(x.expr), 1);
        return;
      case 2:
        if (!x.nonneg) x = emit(op::abs(x.expr), x.bound, true);
        emit(op::sqrt(x.expr), std::sqrt(x.bound) + 1, true);
        return;
      case 3: emit(op::abs(x.expr), x.bound, true); return;
      default: emit(op::nn::relu(x.expr), x.bound, true); return;
    }
  }

  // Broadcasting of every kind: equal shapes, the second operand a lower-rank or 1-padded
  // version of the first (bias-like, (1, C, 1, 1)-like, 0-d scalars), the first broadcast
  // against a larger second, and both broadcast at once; constants or parameters, either order.
  void binary() {
    GraphValue a = operand(0, 5);
    const Ints& as = a.shape;
    Ints bs;
    switch (uniform(0, 4)) {
      case 0: bs = as; break;
      case 1: {
        size_t drop = size_t(uniform(0, int64_t(as.size())));
        bs.assign(as.begin() + drop, as.end());
        for (auto& d : bs)
          if (chance(0.5)) d = 1;
        break;
      }
      case 2: bs = chance(0.7) ? Ints{} : Ints(size_t(uniform(1, 4)), 1); break;  // scalars
      case 3: {  // a broadcast against a larger b
        for (int64_t d : as) bs.push_back(d == 1 && chance(0.6) ? dim() : d);
        while (bs.size() < 5 && chance(0.3)) bs.insert(bs.begin(), dim());
        break;
      }
      default: {  // both broadcast: where a has d, b has d or 1; where a has 1, b has anything
        for (int64_t d : as) bs.push_back(d == 1 ? dim() : (chance(0.5) ? 1 : d));
        if (bs.size() < 5 && chance(0.3)) bs.insert(bs.begin(), dim());
        break;
      }
    }
    if (numel(bs) > 4096) bs = as;  // keep tensors small (shrinking dims could break broadcasting)
    GraphValue b;
    bool reused = false;
    for (const auto& v : values())
      if (v.shape == bs && v.dtype == F32 && !v.symbolic && v.expr.get() != a.expr.get() && chance(0.4)) {
        b = v, reused = true;
        break;
      }
    if (!reused) b = fresh(bs, bs.size() <= 1 ? 0.7 : 0.35);
    if (chance(0.5)) std::swap(a, b);
    if (chance(0.5) && a.bound * b.bound < 1e3) emit(op::multiply(a.expr, b.expr), a.bound * b.bound);
    else emit(op::add(a.expr, b.expr), a.bound + b.bound);
  }

  // conv2d with groups (1, depthwise, others), dilation, strides, symmetric and asymmetric
  // padding, constant or parameter weights; then optionally a bias, a residual, an activation.
  void conv() {
    GraphValue x = operand4d();
    const int64_t C = x.shape[1], H = x.shape[2], W = x.shape[3];
    Ints group_options = {1, 1};
    if (C > 1) group_options.push_back(C);
    for (int64_t g = 2; g < C; ++g)
      if (C % g == 0) group_options.push_back(g);
    int64_t groups = pick(group_options);
    int64_t O = groups == 1 ? pick(Ints{1, 2, 3, 4, 5, 8, 12, 16}) : groups * pick(Ints{1, 1, 2, 3});
    Ints kernel, strides, dilation, padding;
    for (int attempt = 0;; ++attempt) {
      kernel = {pick(Ints{1, 1, 2, 3, 3, 3, 5}), pick(Ints{1, 1, 2, 3, 3, 3, 5})};
      if (chance(0.7)) kernel[1] = kernel[0];
      strides = {pick(Ints{1, 1, 1, 2, 3}), pick(Ints{1, 1, 1, 2, 3})};
      if (chance(0.7)) strides[1] = strides[0];
      dilation = chance(0.2) ? Ints{pick(Ints{1, 2, 3}), pick(Ints{1, 2})} : Ints{1, 1};
      int64_t p = uniform(0, 2);
      padding = chance(0.25) ? Ints{uniform(0, 2), uniform(0, 2), uniform(0, 2), uniform(0, 2)} : Ints{p, p, p, p};
      if (attempt > 20) kernel = {1, 1}, dilation = {1, 1};
      bool fits_h = H + padding[0] + padding[2] >= dilation[0] * (kernel[0] - 1) + 1;
      bool fits_w = W + padding[1] + padding[3] >= dilation[1] * (kernel[1] - 1) + 1;
      if (fits_h && fits_w) break;
    }
    const int64_t fan_in = C / groups * kernel[0] * kernel[1];
    Ints ws = {O, C / groups, kernel[0], kernel[1]};
    GraphValue w = fresh(ws, 0.8, 1.0 / std::sqrt(double(fan_in)));
    GraphValue y = emit(op::nn::conv2d(x.expr, w.expr, strides, padding, dilation, groups),
                        x.bound * std::sqrt(double(fan_in)));
    conv_epilogue(y, O);
  }

  void conv_epilogue(GraphValue y, int64_t O) {
    if (chance(0.6)) {
      Ints bs = pick(std::vector<Ints>{{1, O, 1, 1}, {O, 1, 1}});
      GraphValue b = fresh(bs, 0.8);
      y = emit(chance(0.8) ? op::add(y.expr, b.expr) : op::add(b.expr, y.expr), y.bound + 1);
    }
    if (chance(0.3)) {
      GraphValue r;
      bool reused = false;
      for (const auto& v : values())
        if (v.shape == y.shape && v.dtype == F32 && v.expr.get() != y.expr.get() && chance(0.5)) {
          r = v, reused = true;
          break;
        }
      if (!reused) r = fresh(y.shape, 0.2);
      y = emit(chance(0.7) ? op::add(y.expr, r.expr) : op::add(r.expr, y.expr), y.bound + r.bound);
    }
    if (chance(0.6)) activation(y);
  }

  // A grouped convolution of 8 channels per group (oneDNN picks a blocked layout for it, as
  // in RegNet) times a gate: per channel (squeeze-excitation), per sample and channel, a
  // scalar, the whole tensor, or spatial.
  void gated_conv() {
    const int64_t n = pick(Ints{1, 1, 2}), c = pick(Ints{16, 24, 32}), h = uniform(3, 9), w = uniform(3, 9);
    GraphValue x = param({n, c, h, w});
    GraphValue k = constant({c, 8, 3, 3}, 1.0 / std::sqrt(72.0));
    GraphValue y = emit(op::nn::conv2d(x.expr, k.expr, {1, 1}, {1, 1, 1, 1}, {1, 1}, c / 8), 4);
    if (chance(0.5)) y = emit(op::nn::relu(y.expr), 4, true);
    Ints gate = pick(std::vector<Ints>{{1, c, 1, 1}, {1, c, 1, 1}, {n, c, 1, 1}, {}, {n, c, h, w}, {1, 1, h, w}});
    GraphValue g = chance(0.3) ? constant(gate) : emit(op::sigmoid(param(gate).expr), 1, true);
    emit(chance(0.8) ? op::multiply(y.expr, g.expr) : op::multiply(g.expr, y.expr), 4);
  }

  // Max / average pooling with any kernel, stride, padding, dilation, ceil_mode and
  // count_include_pad; adaptive average pooling to sizes that divide the input and that do not.
  void pool() {
    GraphValue x = operand4d();
    const int64_t H = x.shape[2], W = x.shape[3];
    if (chance(0.15)) {  // a mean: over the map (a global pool, offloaded) or other axes (not)
      Ints axes = pick(std::vector<Ints>{{2, 3}, {-1, -2}, {3, 2}, {1}, {1, 2, 3}});
      emit(op::mean(x.expr, axes, chance(0.5)), x.bound, x.nonneg);
      return;
    }
    if (chance(0.3)) {
      std::optional<Ints> size;
      switch (uniform(0, 4)) {
        case 0: break;  // the input's size
        case 1: size = chance(0.5) ? Ints{1} : Ints{1, 1}; break;
        case 2: {
          Ints dh, dw;
          for (int64_t d = 1; d <= H; ++d)
            if (H % d == 0) dh.push_back(d);
          for (int64_t d = 1; d <= W; ++d)
            if (W % d == 0) dw.push_back(d);
          size = Ints{pick(dh), pick(dw)};
          break;
        }
        default: size = Ints{uniform(1, H + 2), uniform(1, W + 2)}; break;
      }
      emit(op::nn::adaptive_avg_pool2d(x.expr, size), x.bound, x.nonneg);
      return;
    }
    bool is_max = chance(0.5);
    Ints kernel, strides, padding, dilation;
    bool ceil_mode = false, include_pad = false;
    for (int attempt = 0;; ++attempt) {
      kernel = {uniform(1, 4), uniform(1, 4)};
      if (chance(0.6)) kernel[1] = kernel[0];
      strides = chance(0.5) ? kernel : Ints{uniform(1, 3), uniform(1, 3)};
      int64_t p = uniform(0, 2);
      padding = chance(0.2) ? Ints{uniform(0, 2), uniform(0, 2), uniform(0, 2), uniform(0, 2)} : Ints{p, p, p, p};
      dilation = chance(0.15) ? Ints{2, pick(Ints{1, 2})} : Ints{1, 1};
      ceil_mode = chance(0.3);
      include_pad = !is_max && chance(0.5);
      if (attempt > 20) kernel = {1, 1}, dilation = {1, 1};
      auto fits = [&](int64_t in, int k) {
        return in + padding[size_t(k)] + padding[size_t(k) + 2] - dilation[size_t(k)] * (kernel[size_t(k)] - 1) - 1 +
                   (ceil_mode ? strides[size_t(k)] - 1 : 0) >= 0;
      };
      if (fits(H, 0) && fits(W, 1)) break;
    }
    Expr call = is_max ? op::nn::max_pool2d(x.expr, kernel, strides, padding, dilation, ceil_mode, include_pad)
                       : op::nn::avg_pool2d(x.expr, kernel, strides, padding, dilation, ceil_mode, include_pad);
    emit(call, x.bound, x.nonneg);
  }

  void softmax() {
    GraphValue x = operand(1, 5);
    int64_t r = int64_t(x.shape.size());
    emit(op::nn::softmax(x.expr, uniform(-r, r - 1)), 1, true);
  }

  // Over the last axis (written -1 or positively), the last two, or another one.
  void layer_norm() {
    GraphValue x = operand(1, 5, /*allow_empty=*/false);
    int64_t r = int64_t(x.shape.size());
    Ints axes = {-1};
    if (chance(0.2)) axes = {r - 1};
    if (r >= 2 && chance(0.2)) axes = chance(0.5) ? Ints{-2, -1} : Ints{r - 2, r - 1};
    Ints norm_shape;
    for (int64_t a : axes) norm_shape.push_back(x.shape[size_t(a < 0 ? a + r : a)]);
    GraphValue g = fresh(norm_shape, 0.8), b = fresh(norm_shape, 0.8);
    double inner = double(numel(norm_shape));
    emit(op::nn::layer_norm(x.expr, g.expr, b.expr, axes, pick(std::vector<double>{1e-5, 1e-3}), chance(0.85),
                            chance(0.85)),
         2 * std::sqrt(inner) + 2);
  }

  // 1-d to 4-d operands with broadcast batch dimensions; the weight a constant or a parameter,
  // sometimes transposed by permute_dims; then optionally a bias of any shape and an activation.
  void matmul() {
    GraphValue a;
    bool reuse = chance(0.6);
    if (reuse) {
      std::vector<GraphValue> ok;
      for (const auto& v : values())
        if (v.dtype == F32 && !v.symbolic && !v.shape.empty() && v.shape.size() <= 4 && numel(v.shape) > 0)
          ok.push_back(v);
      if (ok.empty()) reuse = false;
      else a = chance(0.6) ? ok.back() : pick(ok);
    }
    if (!reuse) a = fresh(shape(int(pick(Ints{1, 2, 2, 3, 3, 4}))), 0.1);
    const Ints& as = a.shape;
    const int64_t K = as.back(), N = dim();
    int rb = int(pick(Ints{1, 2, 2, 2, 3, 4}));
    Ints bs;
    if (rb == 1) {
      bs = {K};
    } else {
      // b's batch dimensions: broadcast-compatible with a's, right-aligned.
      size_t a_batch = as.size() >= 2 ? as.size() - 2 : 0;
      for (int k = 0; k < rb - 2; ++k) {
        int64_t from_a = (size_t(k) + a_batch >= size_t(rb - 2)) ? as[a_batch - size_t(rb - 2 - k)] : -1;
        bs.push_back(from_a <= 1 ? pick(Ints{1, 2, 3}) : (chance(0.3) ? 1 : from_a));
      }
      bs.push_back(K);
      bs.push_back(N);
    }
    GraphValue b;
    double wscale = 1.0 / std::sqrt(double(K));
    if (rb >= 2 && chance(0.35)) {
      // The weight stored transposed (last two axes swapped) and permuted back.
      Ints src = bs;
      std::swap(src[src.size() - 1], src[src.size() - 2]);
      GraphValue s = fresh(src, 0.6, wscale);
      std::optional<Ints> axes;
      if (rb > 2 || chance(0.5)) {
        axes = Ints();
        for (int k = 0; k < rb; ++k) axes->push_back(k);
        std::swap((*axes)[size_t(rb - 1)], (*axes)[size_t(rb - 2)]);
      }
      b = emit(op::permute_dims(s.expr, axes), wscale);
    } else {
      b = fresh(bs, 0.6, wscale);
    }
    GraphValue m = emit(op::matmul(a.expr, b.expr), a.bound * std::sqrt(double(K)));
    if (chance(0.5) && !m.shape.empty()) {
      const Ints& ms = m.shape;
      std::vector<Ints> options = {{ms.back()}, {1, ms.back()}, ms, {}};
      if (ms.size() >= 2) options.push_back({ms[ms.size() - 2], 1});
      if (ms.size() >= 2) options.push_back({1, 1, ms.back()});
      GraphValue bias = fresh(pick(options), 0.7);
      m = emit(chance(0.8) ? op::add(m.expr, bias.expr) : op::add(bias.expr, m.expr), m.bound + 1);
    }
    if (chance(0.5)) activation(m);
  }

  // concat of 1 to 5 tensors of one rank along any axis: values already in the graph (conv
  // outputs, in oneDNN's blocked layouts) and new ones, channel counts that are multiples of
  // the blocks and not.
  void concat() {
    GraphValue x = chance(0.5) ? operand4d() : operand(1, 5, /*allow_empty=*/false);
    const int64_t rank = int64_t(x.shape.size());
    if (rank == 0) x = fresh({3, 4});
    const int64_t axis = uniform(0, int64_t(x.shape.size()) - 1);
    std::vector<Expr> parts = {x.expr};
    double bound = x.bound;
    const int64_t count = uniform(1, 5);
    for (int64_t k = 1; k < count; ++k) {
      Ints s = x.shape;
      s[size_t(axis)] = pick(Ints{1, 3, 8, 16, s[size_t(axis)]});
      GraphValue other;
      bool reused = false;
      for (const auto& v : values())
        if (v.shape == s && v.dtype == F32 && !v.symbolic && chance(0.5)) {
          other = v, reused = true;
          break;
        }
      if (!reused) other = fresh(s, 0.2);
      if (chance(0.3) && s.size() == 4) other = emit(op::nn::relu(other.expr), other.bound, true);
      parts.push_back(other.expr);
      bound = std::max(bound, other.bound);
    }
    emit(op::concat(parts, chance(0.2) ? axis - int64_t(x.shape.size()) : axis), bound);
  }

  // Inference batch_norm of a 2-d to 5-d tensor (constant or computed statistics, with and
  // without scale and shift), often after a concat or a convolution, then maybe a ReLU.
  void batch_norm() {
    GraphValue x = chance(0.6) ? operand4d() : operand(2, 5, /*allow_empty=*/false);
    if (x.shape.size() < 2) x = fresh({2, 5});
    const int64_t c = x.shape[1];
    GraphValue g = fresh({c}, 0.8), b = fresh({c}, 0.8), mean = fresh({c}, 0.8);
    // A variance of at least 0.5: |v| + 0.5, of a constant or a parameter.
    GraphValue var = emit(op::abs(fresh({c}, 0.8).expr), 1, true);
    var = emit(op::add(var.expr, constant_scalar(0.5)), 1.5, true);
    Var bn = emit_tuple(op::nn::batch_norm(x.expr, g.expr, b.expr, mean.expr, var.expr, 1,
                                           pick(std::vector<double>{1e-5, 1e-3}), chance(0.85), chance(0.85), 0.1,
                                           /*training=*/false));
    GraphValue y = emit(make<TupleGetItemNode>(bn, 0), 2 * (x.bound + 1) * 2 + 1);
    if (chance(0.5)) emit(op::nn::relu(y.expr), y.bound, true);
  }

  // Constant (any value), edge and reflect padding of 1-d to 5-d tensors, widths of 0 to 2 on
  // either side (all zero: a copy), often before a convolution.
  void pad() {
    GraphValue x = chance(0.5) ? operand4d() : operand(1, 5, /*allow_empty=*/false);
    if (x.shape.empty()) x = fresh({4, 3});
    const std::string mode = pick(std::vector<std::string>{"constant", "constant", "edge", "reflect"});
    Ints widths;
    for (int64_t d : x.shape) {
      const int64_t most = mode == "reflect" ? std::min<int64_t>(2, d - 1) : 2;
      widths.push_back(chance(0.4) ? 0 : uniform(0, most));
      widths.push_back(chance(0.4) ? 0 : uniform(0, most));
    }
    if (chance(0.1)) std::fill(widths.begin(), widths.end(), 0);
    GraphValue y = emit(op::nn::pad(x.expr, widths, pick(std::vector<double>{0.0, 0.0, -1.5}), mode), x.bound + 1.5);
    if (y.shape.size() == 4 && chance(0.4)) {
      const int64_t cin = y.shape[1];
      GraphValue w = constant({4, cin, 3, 3}, 1.0 / std::sqrt(9.0 * double(cin)));
      if (y.shape[2] >= 3 && y.shape[3] >= 3)
        emit(op::nn::conv2d(y.expr, w.expr, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1), y.bound * 3);
    }
  }

  // Hard-swish and hard-sigmoid as the ONNX importer spells them (x * clip(x / 6 + 0.5, 0, 1);
  // clip(alpha x + beta, 0, 1)), often after a convolution, and other arithmetic by constant
  // scalars (eltwise linear post-ops), some of which must not fuse (other constants).
  void hard_activation() {
    GraphValue x;
    if (chance(0.6)) {
      GraphValue in = operand4d();
      const int64_t c = in.shape[1], o = pick(Ints{4, 8, 16});
      GraphValue w = constant({o, c, 1, 1}, 1.0 / std::sqrt(double(c)));
      x = emit(op::nn::conv2d(in.expr, w.expr, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1), in.bound * 2);
      if (chance(0.5)) x = emit(op::add(x.expr, constant({1, o, 1, 1}).expr), x.bound + 1);
    } else {
      x = operand(0, 4, /*allow_empty=*/false);
    }
    auto scalar = [&](double v) { return chance(0.8) ? constant_scalar(v) : constant({1, 1}, std::fabs(v)).expr; };
    switch (uniform(0, 3)) {
      case 0: {  // hard-swish
        Expr h = emit(op::multiply(x.expr, constant_scalar(1.0 / 6.0)), x.bound / 6).expr;
        h = emit(op::add(h, constant_scalar(0.5)), x.bound / 6 + 0.5).expr;
        h = emit(op::clip(h, 0.0, 1.0), 1, true).expr;
        emit(chance(0.5) ? op::multiply(x.expr, h) : op::multiply(h, x.expr), x.bound);
        return;
      }
      case 1: {  // hard-sigmoid
        double alpha = pick(std::vector<double>{0.2, 1.0 / 6.0}), beta = 0.5;
        Expr h = emit(op::multiply(x.expr, constant_scalar(alpha)), x.bound * alpha).expr;
        h = emit(op::add(h, constant_scalar(beta)), x.bound * alpha + beta).expr;
        emit(op::clip(h, 0.0, 1.0), 1, true);
        return;
      }
      case 2: {  // almost hard-swish: another offset, or x times a clip of something else
        Expr h = emit(op::multiply(x.expr, constant_scalar(1.0 / 6.0)), x.bound / 6).expr;
        h = emit(op::add(h, constant_scalar(pick(std::vector<double>{0.25, 0.5}))), x.bound / 6 + 0.5).expr;
        h = emit(op::clip(h, 0.0, pick(std::vector<double>{1.0, 2.0})), 2, true).expr;
        GraphValue other = chance(0.5) ? x : fresh(x.shape, 0.3);
        emit(op::multiply(other.expr, h), 2 * other.bound);
        return;
      }
      default: {  // a chain of scalar arithmetic
        GraphValue y = x;
        for (int k = int(uniform(1, 3)); k > 0; --k) {
          double c = pick(std::vector<double>{2.0, -0.5, 0.25, 3.0});
          y = chance(0.5) ? emit(op::multiply(y.expr, scalar(c)), y.bound * std::fabs(c))
                          : emit(op::add(scalar(c), y.expr), y.bound + std::fabs(c));
        }
        if (chance(0.5)) activation(y);
        return;
      }
    }
  }

  // resize2d of every method oneDNN's resampling takes and some it does not (cubic, other
  // coordinate modes, nearest by factors that are not integers), to sizes up and down.
  void resize() {
    GraphValue x = operand4d();
    const int64_t h = x.shape[2], w = x.shape[3];
    Ints size = pick(std::vector<Ints>{{2 * h, 2 * w}, {3 * h, w}, {h + 3, std::max<int64_t>(1, w - 1)},
                                       {1, 1}, {h, w}, {2 * h, 2 * w}});
    std::string method = pick(std::vector<std::string>{"linear", "linear", "nearest_neighbor", "nearest_neighbor", "cubic"});
    std::string mode = method == "linear"
                           ? pick(std::vector<std::string>{"half_pixel", "half_pixel", "pytorch_half_pixel", "align_corners"})
                           : pick(std::vector<std::string>{"asymmetric", "asymmetric", "half_pixel"});
    std::string rounding = method == "nearest_neighbor" ? pick(std::vector<std::string>{"floor", "floor", "round"}) : "";
    Expr shape = make<ShapeExprNode>(std::vector<PrimExpr>{int_imm(size[0]), int_imm(size[1])});
    emit(op::make_call("relax.image.resize2d", {x.expr, shape},
                       {{"method", method}, {"coordinate_transformation_mode", mode}, {"rounding_method", rounding}}),
         x.bound * (method == "cubic" ? 1.5 : 1.0));
  }

  Expr constant_scalar(double v) {
    Tensor t = Tensor::empty({}, F32);
    t.data_as<float>()[0] = float(v);
    return make<ConstantNode>(t);
  }

  // float64 / int32 tensors: the host's.
  GraphValue other_dtype() {
    DataType dt = chance(0.5) ? DataType::Float(64) : DataType::Int(32);
    Ints s = shape(int(uniform(1, 3)));
    GraphValue x = param(s, dt), y = param(s, dt);
    GraphValue v = emit(chance(0.5) ? op::add(x.expr, y.expr) : op::multiply(x.expr, y.expr), 2);
    if (chance(0.5)) v = emit(dt == DataType::Int(32) ? op::abs(v.expr) : op::nn::relu(v.expr), 2);
    return v;
  }

  // A symbolic batch dimension: shapes unknown at compile time stay on the host.
  Case symbolic_case() {
    Ints s = {uniform(1, 4), pick(Ints{3, 8, 16})};
    GraphValue x = symbolic_param(s, 0);
    GraphValue v = emit(op::add(x.expr, constant({s[1]}).expr), 2);
    switch (uniform(0, 3)) {
      case 0: v = emit(op::nn::relu(v.expr), 2, true); break;
      case 1: v = emit(op::nn::softmax(v.expr), 1, true); break;
      case 2: v = emit(op::matmul(v.expr, constant({s[1], 5}, 0.3).expr), 2); break;
      default: v = emit(op::multiply(v.expr, v.expr), 4); break;
    }
    return finish({v});
  }
};

TEST(DnnlDifferential, RandomGraphsMatchTheHostAfterExportAndReload) {
  auto targets = [](DnnlGraph& gen) {
    int64_t winograd = gen.pick(std::vector<int64_t>{1, 1, 0, 2, 3, 4});  // 3: oneDNN's Winograd (AVX-512)
    return std::vector<codegen::Target>{codegen::Target("dnnl", {{"num_threads", 2}, {"winograd", winograd}})};
  };
  // DNNL_VERBOSE's execution lines name each primitive's implementation: none may be
  // oneDNN's reference kernel (what the check offloads runs on a fast path).
  auto no_reference_kernels = [](uint32_t seed, const std::function<void()>& check, testing::DifferentialStats& stats) {
    for (const auto& line : verbose_exec_lines(check))
      if (is_reference_kernel(line)) {
        ADD_FAILURE() << "seed " << seed << " ran oneDNN's reference kernel: " << line;
        ++stats.failures;
      }
  };
  testing::DifferentialStats stats =
      testing::run_random_graphs<DnnlGraph>("dnnl", 400, targets, no_reference_kernels);
  // The graphs reach the whole table, and most give the backend something.
  EXPECT_GE(stats.offloading_cases, stats.cases * 3 / 4) << stats.summary();
  for (const char* name : {"dnnl.relu", "dnnl.gelu", "dnnl.sigmoid", "dnnl.tanh", "dnnl.exp", "dnnl.sqrt",
                           "dnnl.abs", "dnnl.clip", "dnnl.add", "dnnl.multiply", "dnnl.max_pool2d",
                           "dnnl.avg_pool2d", "dnnl.adaptive_avg_pool2d", "dnnl.softmax", "dnnl.layer_norm",
                           "dnnl.matmul", "dnnl.matmul_bias", "dnnl.conv2d", "dnnl.conv2d_bias",
                           "dnnl.conv2d_bias_add_relu", "dnnl.concat_1", "dnnl.concat_2", "dnnl.concat_3",
                           "dnnl.batch_norm", "dnnl.batch_norm_relu", "dnnl.pad", "dnnl.resize2d", "dnnl.reshape",
                           "dnnl.strided_slice", "dnnl.divide", "dnnl.mean"})
    EXPECT_GT(stats.composites[name], 0) << name << " never matched: " << stats.summary();
}

}  // namespace
}  // namespace partita::backend::dnnl
