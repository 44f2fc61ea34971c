// DLPack export/import of runtime tensors. See include/partita/runtime/dlpack.h for the rules.
#include "partita/runtime/dlpack.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "partita/runtime/device_api.h"
#include "partita/support/error.h"

namespace partita::runtime {

namespace {

// Device kinds are DLPack's device types, so conversions are casts.
static_assert(int32_t(DeviceKind::kCPU) == kDLCPU && int32_t(DeviceKind::kCUDA) == kDLCUDA &&
              int32_t(DeviceKind::kCUDAHost) == kDLCUDAHost && int32_t(DeviceKind::kOpenCL) == kDLOpenCL &&
              int32_t(DeviceKind::kVulkan) == kDLVulkan && int32_t(DeviceKind::kMetal) == kDLMetal &&
              int32_t(DeviceKind::kVPI) == kDLVPI && int32_t(DeviceKind::kROCM) == kDLROCM &&
              int32_t(DeviceKind::kROCMHost) == kDLROCMHost && int32_t(DeviceKind::kExtDev) == kDLExtDev &&
              int32_t(DeviceKind::kCUDAManaged) == kDLCUDAManaged);

// kDLBool arrived in DLPack 0.8; 0.6 has no name for it, but producers may already send it.
constexpr uint8_t kDLBoolCode = 6;

std::string dl_dtype_str(DLDataType t) {
  return "DLPack dtype (code " + std::to_string(int(t.code)) + ", bits " + std::to_string(int(t.bits)) +
         ", lanes " + std::to_string(int(t.lanes)) + ")";
}

// The manager context of tensors we export: owns the shape/stride arrays and a buffer reference.
struct ExportContext {
  DLManagedTensor managed{};
  std::shared_ptr<uint8_t> buffer;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
};

void delete_export(DLManagedTensor* self) {
  delete static_cast<ExportContext*>(self->manager_ctx);
}

int64_t dl_numel(const DLTensor& t) {
  int64_t n = 1;
  for (int i = 0; i < t.ndim; ++i) n *= t.shape[i];
  return n;
}

bool compact_strides(const DLTensor& t) {
  if (!t.strides) return true;
  int64_t expected = 1;
  for (int i = t.ndim - 1; i >= 0; --i) {
    // A size-1 dimension is never stepped over, so any stride is fine (numpy and torch give
    // such dimensions arbitrary strides).
    if (t.shape[i] != 1 && t.strides[i] != expected) return false;
    expected *= t.shape[i];
  }
  return true;
}

const uint8_t* first_byte(const DLTensor& t) {
  return static_cast<const uint8_t*>(t.data) + t.byte_offset;
}

// Copies a strided tensor into compact row-major `dst`, one element (`elem` bytes) at a time.
/// Memory the runtime can hold a tensor in: host memory, and CUDA device or pinned memory.
bool importable_device(DLDevice d) {
  return d.device_type == kDLCPU || d.device_type == kDLCUDA || d.device_type == kDLCUDAHost;
}

void strided_copy(const DLTensor& t, size_t elem, int dim, const uint8_t* src, uint8_t*& dst) {
  if (dim == t.ndim) {
    std::memcpy(dst, src, elem);
    dst += elem;
    return;
  }
  int64_t step = t.strides[dim] * int64_t(elem);
  for (int64_t i = 0; i < t.shape[dim]; ++i) strided_copy(t, elem, dim + 1, src + i * step, dst);
}

// The element range [lo, hi) a strided tensor touches, relative to its first element.
std::pair<int64_t, int64_t> element_extent(const DLTensor& t) {
  int64_t lo = 0, hi = 1;
  for (int i = 0; i < t.ndim; ++i) {
    int64_t reach = t.strides[i] * (t.shape[i] - 1);
    (reach < 0 ? lo : hi) += reach;
  }
  return {lo, hi};
}

}  // namespace

Device from_dlpack_device(DLDevice d) { return Device{DeviceKind(d.device_type), d.device_id}; }
DLDevice to_dlpack_device(Device d) { return DLDevice{DLDeviceType(d.kind), d.id}; }

DLDataType to_dlpack_dtype(DataType t) {
  if (t.is_void()) throw_error("TypeError", "a tensor without a dtype cannot be exported to DLPack");
  if (t.is_bool()) return DLDataType{kDLUInt, 8, 1};  // DLPack 0.6 has no bool: stored as bytes
  uint8_t code = 0;
  switch (t.code()) {
    case DataType::Code::Int: code = kDLInt; break;
    case DataType::Code::UInt: code = kDLUInt; break;
    case DataType::Code::Float: code = kDLFloat; break;
    case DataType::Code::BFloat: code = kDLBfloat; break;
    default: throw_error("TypeError", "dtype '" + t.str() + "' has no DLPack equivalent");
  }
  return DLDataType{code, uint8_t(t.bits()), uint16_t(t.lanes())};
}

DataType from_dlpack_dtype(DLDataType t) {
  auto unsupported = [&]() -> DataType {
    throw_error("TypeError", "unsupported " + dl_dtype_str(t) +
                                 ": expected float16/32/64, bfloat16, int8..64, uint8..64 or bool");
  };
  if (t.lanes != 1) return unsupported();
  bool int_bits = t.bits == 8 || t.bits == 16 || t.bits == 32 || t.bits == 64;
  switch (t.code) {
    case kDLInt: return int_bits ? DataType::Int(t.bits) : unsupported();
    case kDLUInt: return int_bits ? DataType::UInt(t.bits) : unsupported();
    case kDLFloat:
      return t.bits == 16 || t.bits == 32 || t.bits == 64 ? DataType::Float(t.bits) : unsupported();
    case kDLBfloat: return t.bits == 16 ? DataType::BFloat16() : unsupported();
    case kDLBoolCode: return t.bits == 8 ? DataType::Bool() : unsupported();
    default: return unsupported();
  }
}

size_t required_alignment(DataType t) { return size_t(t.bytes()); }

DLManagedTensor* to_dlpack(const Tensor& t) {
  if (!t.defined()) throw_error("ValueError", "cannot export an undefined tensor to DLPack");
  auto ctx = new ExportContext;
  ctx->buffer = t.buffer();
  ctx->shape = t.shape();
  ctx->strides.resize(ctx->shape.size());
  int64_t stride = 1;
  for (size_t i = ctx->shape.size(); i-- > 0;) {
    ctx->strides[i] = stride;
    stride *= ctx->shape[i];
  }
  DLTensor& d = ctx->managed.dl_tensor;
  d.data = t.data();
  d.device = to_dlpack_device(t.device());
  d.ndim = t.ndim();
  try {
    d.dtype = to_dlpack_dtype(t.dtype());
  } catch (...) {
    delete ctx;
    throw;
  }
  d.shape = ctx->shape.data();
  d.strides = ctx->strides.data();
  d.byte_offset = 0;
  ctx->managed.manager_ctx = ctx;
  ctx->managed.deleter = delete_export;
  return &ctx->managed;
}

bool can_share_dlpack(const DLTensor& t) {
  if (!importable_device(t.device)) return false;
  DataType dtype;
  try {
    dtype = from_dlpack_dtype(t.dtype);
  } catch (const Error&) {
    return false;
  }
  auto addr = reinterpret_cast<uintptr_t>(first_byte(t));
  return compact_strides(t) && addr % required_alignment(dtype) == 0 && (t.data || dl_numel(t) == 0);
}

Tensor from_dlpack(DLManagedTensor* managed, DLPackCopy copy) {
  if (!managed) throw_error("ValueError", "from_dlpack: null DLManagedTensor");
  const DLTensor& t = managed->dl_tensor;
  if (!importable_device(t.device))
    throw_error("ValueError", "from_dlpack: tensor is on device type " + std::to_string(int(t.device.device_type)) + " (" +
                                  device_kind_name(DeviceKind(t.device.device_type)) +
                                  "), but the runtime holds tensors in CPU (kDLCPU), CUDA (kDLCUDA) and pinned host "
                                  "(kDLCUDAHost) memory only");
  Device device = from_dlpack_device(t.device);
  DataType dtype = from_dlpack_dtype(t.dtype);
  if (t.ndim < 0 || (t.ndim > 0 && !t.shape))
    throw_error("ValueError", "from_dlpack: malformed tensor (ndim " + std::to_string(t.ndim) + ")");
  std::vector<int64_t> shape(t.shape, t.shape + t.ndim);
  for (int64_t d : shape)
    if (d < 0) throw_error("ValueError", "from_dlpack: negative dimension " + std::to_string(d));
  int64_t numel = dl_numel(t);
  if (numel > 0 && !t.data) throw_error("ValueError", "from_dlpack: null data pointer for a non-empty tensor");

  auto release = [managed] {
    if (managed->deleter) managed->deleter(managed);
  };
  if (numel == 0) {
    // Nothing to share; an empty buffer of our own avoids a null (undefined-looking) buffer.
    Tensor out = Tensor::empty(std::move(shape), dtype, device);
    release();
    return out;
  }
  if (can_share_dlpack(t)) {
    auto* data = const_cast<uint8_t*>(first_byte(t));
    std::shared_ptr<uint8_t> buffer(data, [managed](uint8_t*) {
      if (managed->deleter) managed->deleter(managed);
    });
    return Tensor::from_buffer(std::move(shape), dtype, std::move(buffer), device);
  }
  bool compact = compact_strides(t);
  if (copy == DLPackCopy::kNever) {
    std::string why = compact ? "its data pointer is not aligned to " + std::to_string(required_alignment(dtype)) +
                                    " bytes (one " + dtype.str() + " element)"
                              : "its strides are not compact row-major";
    throw_error("ValueError", "from_dlpack: cannot share the tensor's memory without copying: " + why);
  }
  Tensor out = Tensor::empty(shape, dtype, device);
  size_t elem = size_t(dtype.bytes());
  if (compact) {
    copy_bytes(first_byte(t), device, out.data(), device, out.nbytes());
  } else if (device.is_host_accessible()) {
    auto* dst = out.data_as<uint8_t>();
    strided_copy(t, elem, 0, first_byte(t), dst);
  } else {
    // No device kernel gathers strided memory yet: bring the touched range to the host,
    // gather there, and upload the compact result.
    auto [lo, hi] = element_extent(t);
    std::vector<uint8_t> staging(size_t(hi - lo) * elem);
    copy_bytes(first_byte(t) + lo * int64_t(elem), device, staging.data(), Device::cpu(), staging.size());
    Tensor host = Tensor::empty(shape, dtype);
    auto* dst = host.data_as<uint8_t>();
    strided_copy(t, elem, 0, staging.data() - lo * int64_t(elem), dst);
    out.copy_from(host);
  }
  release();
  return out;
}

}  // namespace partita::runtime
