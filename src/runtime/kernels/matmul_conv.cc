// matmul (numpy semantics: 1-D operands, broadcast batch dims) and conv2d (NCHW/OIHW, groups,
// strides, padding, dilation) as im2col + blocked GEMM.
#include <algorithm>
#include <cstring>

#include "common.h"

namespace partita::runtime::kernels {
namespace {

/// Computes into `out` of the operands' dtype.
void matmul_same(const Tensor& a, const Tensor& b, Tensor& out) {
  std::vector<int64_t> as = a.shape(), bs = b.shape();
  if (as.size() == 1) as.insert(as.begin(), 1);
  if (bs.size() == 1) bs.push_back(1);
  int64_t M = as[as.size() - 2], K = as.back(), N = bs.back();
  if (bs[bs.size() - 2] != K)
    throw_error("ValueError", "matmul: reduction dimensions differ (" + std::to_string(K) + " vs " +
                                  std::to_string(bs[bs.size() - 2]) + ")");
  std::vector<int64_t> abatch(as.begin(), as.end() - 2), bbatch(bs.begin(), bs.end() - 2);
  size_t nb = std::max(abatch.size(), bbatch.size());
  std::vector<int64_t> batch(nb);
  for (size_t i = 0; i < nb; ++i) {
    int64_t x = i + abatch.size() >= nb ? abatch[i + abatch.size() - nb] : 1;
    int64_t y = i + bbatch.size() >= nb ? bbatch[i + bbatch.size() - nb] : 1;
    batch[i] = x == 1 ? y : x;  // numpy broadcasting: 1 stretches, also to 0
  }
  auto sa = bcast_strides(abatch, batch), sb = bcast_strides(bbatch, batch);
  int64_t nbatch = 1;
  for (int64_t d : batch) nbatch *= d;
  dispatch(a.dtype(), "matmul", [&](auto tag) {
    using T = decltype(tag);
    const T* pa = a.data_as<T>();
    const T* pb = b.data_as<T>();
    T* po = out.data_as<T>();
    std::vector<int64_t> idx(nb, 0);
    for (int64_t t = 0; t < nbatch; ++t) {
      int64_t oa = 0, ob = 0, rem = t;
      for (size_t d = nb; d-- > 0;) {
        int64_t i = rem % batch[d];
        rem /= batch[d];
        oa += i * sa[d];
        ob += i * sb[d];
      }
      gemm<T>(M, N, K, pa + oa * M * K, K, pb + ob * K * N, N, po + t * M * N, N);
    }
  });
}

void k_matmul(std::span<const Tensor> in, const KernelAttrs&, std::span<Tensor> out) {
  if (!(in[0].dtype() == in[1].dtype())) throw_error("TypeError", "matmul: operand dtypes differ");
  if (out[0].dtype() == in[0].dtype()) return matmul_same(in[0], in[1], out[0]);
  Tensor tmp = Tensor::empty(out[0].shape(), in[0].dtype());
  matmul_same(in[0], in[1], tmp);
  convert(tmp, out[0]);
}

void conv_same(const Tensor& x, const Tensor& w, const KernelAttrs& attrs, Tensor& y) {
  if (attrs.get_string("data_layout", "NCHW") != "NCHW" || attrs.get_string("kernel_layout", "OIHW") != "OIHW" ||
      attrs.get_string("out_layout", "NCHW") != "NCHW")
    throw_error("ValueError", "conv2d: only NCHW data and OIHW kernel layouts are supported on the host");
  auto st = attrs.get_ints("strides", {1, 1});
  auto pad = attrs.get_ints("padding", {0, 0, 0, 0});
  auto dil = attrs.get_ints("dilation", {1, 1});
  if (st.size() == 1) st = {st[0], st[0]};
  if (dil.size() == 1) dil = {dil[0], dil[0]};
  if (pad.size() == 1) pad = {pad[0], pad[0], pad[0], pad[0]};
  if (pad.size() == 2) pad = {pad[0], pad[1], pad[0], pad[1]};
  int64_t groups = attrs.get_int("groups", 1);
  int64_t N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
  int64_t O = w.shape()[0], CG = w.shape()[1], KH = w.shape()[2], KW = w.shape()[3];
  int64_t OH = y.shape()[2], OW = y.shape()[3];
  if (groups <= 0 || C != CG * groups || O % groups != 0)
    throw_error("ValueError", "conv2d: channels do not match groups");
  int64_t OG = O / groups, KK = CG * KH * KW, P = OH * OW;
  dispatch(x.dtype(), "conv2d", [&](auto tag) {
    using T = decltype(tag);
    std::vector<T> col(size_t(KK * P));
    const T* px = x.data_as<T>();
    const T* pw = w.data_as<T>();
    T* py = y.data_as<T>();
    for (int64_t n = 0; n < N; ++n)
      for (int64_t g = 0; g < groups; ++g) {
        // im2col: rows (c, kh, kw), columns output pixels.
        for (int64_t c = 0; c < CG; ++c)
          for (int64_t kh = 0; kh < KH; ++kh)
            for (int64_t kw = 0; kw < KW; ++kw) {
              T* row = col.data() + ((c * KH + kh) * KW + kw) * P;
              const T* src = px + ((n * C + g * CG + c) * H) * W;
              for (int64_t oh = 0; oh < OH; ++oh) {
                int64_t ih = oh * st[0] - pad[0] + kh * dil[0];
                T* r = row + oh * OW;
                if (ih < 0 || ih >= H) {
                  std::fill_n(r, OW, T(0));
                  continue;
                }
                for (int64_t ow = 0; ow < OW; ++ow) {
                  int64_t iw = ow * st[1] - pad[1] + kw * dil[1];
                  r[ow] = (iw < 0 || iw >= W) ? T(0) : src[ih * W + iw];
                }
              }
            }
        gemm<T>(OG, P, KK, pw + g * OG * KK, KK, col.data(), P, py + (n * O + g * OG) * P, P);
      }
  });
}

void k_conv2d(std::span<const Tensor> in, const KernelAttrs& attrs, std::span<Tensor> out) {
  if (!(in[0].dtype() == in[1].dtype())) throw_error("TypeError", "conv2d: data and weight dtypes differ");
  if (in[0].ndim() != 4 || in[1].ndim() != 4) throw_error("ValueError", "conv2d: data and weight must be 4-D");
  if (out[0].dtype() == in[0].dtype()) return conv_same(in[0], in[1], attrs, out[0]);
  Tensor tmp = Tensor::empty(out[0].shape(), in[0].dtype());
  conv_same(in[0], in[1], attrs, tmp);
  convert(tmp, out[0]);
}

}  // namespace

PARTITA_REGISTER_KERNEL("relax.matmul", k_matmul);
PARTITA_REGISTER_KERNEL("relax.nn.conv2d", k_conv2d);

}  // namespace partita::runtime::kernels
