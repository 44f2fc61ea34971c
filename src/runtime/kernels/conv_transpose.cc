// conv2d_transpose on the host: NCHW data, IOHW weight, groups, strides, dilation, padding,
// output_padding (the output's size comes from the VM). Each input element scatters its
// products with the kernel into the output, which is the adjoint of conv2d's gather.
#include <cstring>

#include "common.h"

namespace partita::runtime::kernels {
namespace {

std::vector<int64_t> sized(const KernelAttrs& attrs, const char* name, size_t n, int64_t dflt) {
  std::vector<int64_t> v = attrs.get_ints(name, std::vector<int64_t>(n, dflt));
  if (v.size() == 1) v.assign(n, v[0]);
  if (v.size() == 2 && n == 4) v = {v[0], v[1], v[0], v[1]};
  if (v.size() != n) throw_error("ValueError", std::string("conv2d_transpose: attribute '") + name + "' has the wrong length");
  return v;
}

void k_conv2d_transpose(std::span<const Tensor> in, const KernelAttrs& attrs, std::span<Tensor> out) {
  const Tensor &x = in[0], &w = in[1];
  Tensor& y = out[0];
  if (x.ndim() != 4 || w.ndim() != 4) throw_error("ValueError", "conv2d_transpose: data and weight must be 4-D");
  if (!(x.dtype() == w.dtype())) throw_error("TypeError", "conv2d_transpose: data and weight dtypes differ");
  if (attrs.get_string("data_layout", "NCHW") != "NCHW" || attrs.get_string("kernel_layout", "IOHW") != "IOHW")
    throw_error("ValueError", "conv2d_transpose: only NCHW data and IOHW kernels are supported on the host");
  auto strides = sized(attrs, "strides", 2, 1), dil = sized(attrs, "dilation", 2, 1);
  auto pad = sized(attrs, "padding", 4, 0);
  const int64_t groups = attrs.get_int("groups", 1);
  const int64_t n = x.shape()[0], ci = x.shape()[1], ih = x.shape()[2], iw = x.shape()[3];
  const int64_t og = w.shape()[1], kh = w.shape()[2], kw = w.shape()[3];
  const int64_t co = y.shape()[1], oh = y.shape()[2], ow = y.shape()[3];
  if (groups <= 0 || ci % groups != 0 || w.shape()[0] != ci || co != og * groups)
    throw_error("ValueError", "conv2d_transpose: channels do not match the weight and groups");
  const int64_t ig = ci / groups;
  dispatch_float(x.dtype(), "conv2d_transpose", [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data_as<T>();
    const T* pw = w.data_as<T>();
    std::vector<double> acc(size_t(oh * ow));
    for (int64_t b = 0; b < n; ++b)
      for (int64_t g = 0; g < groups; ++g)
        for (int64_t o = 0; o < og; ++o) {
          std::fill(acc.begin(), acc.end(), 0.0);
          for (int64_t i = 0; i < ig; ++i) {
            const int64_t c = g * ig + i;
            const T* plane = px + (b * ci + c) * ih * iw;
            const T* kernel = pw + (c * og + o) * kh * kw;
            for (int64_t p = 0; p < kh; ++p)
              for (int64_t q = 0; q < kw; ++q) {
                const double k = double(kernel[p * kw + q]);
                for (int64_t r = 0; r < ih; ++r) {
                  const int64_t yr = r * strides[0] - pad[0] + p * dil[0];
                  if (yr < 0 || yr >= oh) continue;
                  for (int64_t s = 0; s < iw; ++s) {
                    const int64_t yc = s * strides[1] - pad[1] + q * dil[1];
                    if (yc >= 0 && yc < ow) acc[size_t(yr * ow + yc)] += k * double(plane[r * iw + s]);
                  }
                }
              }
          }
          T* dst = y.data_as<T>() + (b * co + g * og + o) * oh * ow;
          for (int64_t e = 0; e < oh * ow; ++e) dst[e] = T(acc[size_t(e)]);
        }
  });
}

}  // namespace

PARTITA_REGISTER_KERNEL("relax.nn.conv2d_transpose", k_conv2d_transpose);

}  // namespace partita::runtime::kernels
