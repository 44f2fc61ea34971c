// R.to_vdevice and R.hint_on_device on the host. The host runtime has CPU memory only, so
// to_vdevice between CPU devices is a copy, and a destination on any other device is refused
// (the device runtime moves such tensors; this kernel must not pretend it did). hint_on_device
// means nothing at run time (RealizeVDevice turns it into to_vdevice or removes it); if one is
// left, the value passes through unchanged.
#include <cstring>

#include "common.h"

namespace partita::runtime::kernels {
namespace {

constexpr int64_t kDLCPU = 1;

void copy_bytes(const Tensor& in, Tensor& out) {
  if (in.nbytes() != out.nbytes() || in.dtype() != out.dtype())
    throw_error("ValueError", "device copy: the output does not match the input (" +
                                  in.dtype().str() + ", " + std::to_string(in.nbytes()) +
                                  " bytes)");
  if (in.nbytes() != 0) std::memcpy(out.data(), in.data(), size_t(in.nbytes()));
}

void k_to_vdevice(std::span<const Tensor> in, const KernelAttrs& attrs, std::span<Tensor> out) {
  // The lowering passes the destination as [DLPack device type, device id].
  std::vector<int64_t> dst = attrs.get_ints("dst_vdevice");
  if (dst.size() != 2)
    throw_error("ValueError",
                "relax.to_vdevice: attribute 'dst_vdevice' must be [device type, device id]");
  if (dst[0] != kDLCPU)
    throw_error("RuntimeError",
                "relax.to_vdevice: the destination is device type " + std::to_string(dst[0]) +
                    " id " + std::to_string(dst[1]) +
                    ", but the host kernel copies only between CPU devices (device type 1)");
  copy_bytes(in[0], out[0]);
}

void k_hint_on_device(std::span<const Tensor> in, const KernelAttrs&, std::span<Tensor> out) {
  copy_bytes(in[0], out[0]);
}

}  // namespace

PARTITA_REGISTER_KERNEL("relax.to_vdevice", k_to_vdevice);
PARTITA_REGISTER_KERNEL("relax.hint_on_device", k_hint_on_device);

}  // namespace partita::runtime::kernels
