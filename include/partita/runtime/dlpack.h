// DLPack interop for runtime tensors (DLPack v0.6, Debian's libdlpack-dev).
//
// Export (`to_dlpack`) always shares the buffer. Import (`from_dlpack`) shares the producer's
// memory when it can be used as-is by our kernels, and otherwise fails with a clear Error or,
// when asked for, copies. Bool has no code in DLPack 0.6: we export it as uint8 (8 bits, the
// way it is stored) and accept kDLBool (code 6, DLPack >= 0.8) on import.
#pragma once

#include <dlpack/dlpack.h>

#include <cstddef>

#include "partita/runtime/tensor.h"

namespace partita::runtime {

/// DLPack's device for ours and back (the kinds are DLPack's device types).
DLDevice to_dlpack_device(Device device);
Device from_dlpack_device(DLDevice device);

/// DLPack's data type of `t`. Throws Error("TypeError") for types DLPack cannot name (void).
DLDataType to_dlpack_dtype(DataType t);
/// Our data type for a DLPack one. Throws Error("TypeError") naming the unsupported type
/// (vector lanes, complex, unknown widths).
DataType from_dlpack_dtype(DLDataType t);

/// The alignment (bytes) the runtime kernels need of a tensor's data pointer: the natural
/// alignment of one element. (Tensor::empty gives 64; kernels never assume more than this.)
size_t required_alignment(DataType t);

/// A DLManagedTensor sharing `t`'s buffer (compact row-major, explicit strides, on `t`'s
/// device). Its
/// manager context keeps a reference to the buffer; its deleter releases that reference and
/// frees the struct. Throws Error("ValueError") for an undefined tensor.
DLManagedTensor* to_dlpack(const Tensor& t);

/// What `from_dlpack` does with memory it cannot share.
enum class DLPackCopy {
  kNever,     ///< throw Error("ValueError") naming the reason (strides, alignment)
  kIfNeeded,  ///< copy into a fresh 64-byte aligned tensor and release the producer at once
};

/// A Tensor over a DLPack tensor. Shares the memory when it is in CPU, CUDA or pinned host
/// memory (kDLCPU, kDLCUDA, kDLCUDAHost; the tensor keeps that device), of a supported
/// dtype, compact row-major (null strides, or strides that equal the row-major ones; strides of
/// size-1 dimensions are ignored) and its data pointer (plus byte_offset) is aligned to
/// `required_alignment`. The returned tensor then owns `managed`: its deleter is called once,
/// when the last reference to the buffer goes.
///
/// Ownership: on success `managed` belongs to the result (or, after a copy, has already been
/// deleted). On failure (an Error is thrown) the caller still owns it and must delete it.
/// Other devices and unsupported dtypes are always errors (Error "ValueError" / "TypeError").
/// Copies of CUDA memory go through the CUDA device API on the current stream; a strided CUDA
/// tensor is gathered through host memory. No stream synchronization happens here: a Python
/// consumer asks the producer for it through __dlpack__(stream=...) (src/python/bind_tensor.cc).
Tensor from_dlpack(DLManagedTensor* managed, DLPackCopy copy = DLPackCopy::kNever);

/// True when `from_dlpack` can share this tensor's memory without copying.
bool can_share_dlpack(const DLTensor& t);

}  // namespace partita::runtime
