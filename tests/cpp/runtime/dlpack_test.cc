// DLPack interop: export shares the buffer and keeps it alive; import shares compact, aligned CPU
// memory and calls the producer's deleter exactly once; everything else is a clear error or,
// when asked for, a copy.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <vector>

#include "partita/runtime/dlpack.h"
#include "partita/support/error.h"

using namespace partita;
using namespace partita::runtime;

namespace {

// A producer-side tensor: owns its storage and counts deleter calls.
struct Producer {
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
  alignas(64) float storage[64];
  int* deleted;
};

DLManagedTensor* make_producer(int* deleted, std::vector<int64_t> shape, std::vector<int64_t> strides = {},
                               size_t byte_offset = 0, DLDataType dtype = {kDLFloat, 32, 1},
                               DLDeviceType device = kDLCPU) {
  auto* p = new Producer{std::move(shape), std::move(strides), {}, deleted};
  std::iota(p->storage, p->storage + 64, 0.0f);
  auto* m = new DLManagedTensor{};
  m->dl_tensor.data = p->storage;
  m->dl_tensor.device = {device, 0};
  m->dl_tensor.ndim = int(p->shape.size());
  m->dl_tensor.dtype = dtype;
  m->dl_tensor.shape = p->shape.data();
  m->dl_tensor.strides = p->strides.empty() ? nullptr : p->strides.data();
  m->dl_tensor.byte_offset = byte_offset;
  m->manager_ctx = p;
  m->deleter = [](DLManagedTensor* self) {
    auto* prod = static_cast<Producer*>(self->manager_ctx);
    ++*prod->deleted;
    delete prod;
    delete self;
  };
  return m;
}

template <class F>
std::string error_of(F&& f, std::string* kind = nullptr) {
  try {
    f();
  } catch (const Error& e) {
    if (kind) *kind = e.kind();
    return e.what();
  }
  return "";
}

}  // namespace

TEST(DLPack, ExportSharesBufferAndKeepsItAlive) {
  Tensor t = Tensor::empty({2, 3}, DataType::Float(32));
  for (int i = 0; i < 6; ++i) t.data_as<float>()[i] = float(i);
  std::weak_ptr<uint8_t> weak = t.buffer();
  DLManagedTensor* m = to_dlpack(t);
  EXPECT_EQ(m->dl_tensor.data, t.data());
  EXPECT_EQ(m->dl_tensor.device.device_type, kDLCPU);
  ASSERT_EQ(m->dl_tensor.ndim, 2);
  EXPECT_EQ(m->dl_tensor.shape[0], 2);
  EXPECT_EQ(m->dl_tensor.shape[1], 3);
  EXPECT_EQ(m->dl_tensor.strides[0], 3);
  EXPECT_EQ(m->dl_tensor.strides[1], 1);
  EXPECT_EQ(m->dl_tensor.dtype.code, kDLFloat);
  EXPECT_EQ(m->dl_tensor.dtype.bits, 32);
  t = Tensor();
  ASSERT_FALSE(weak.expired());  // the managed tensor holds the buffer
  EXPECT_EQ(static_cast<float*>(m->dl_tensor.data)[5], 5.0f);
  m->deleter(m);
  EXPECT_TRUE(weak.expired());
}

TEST(DLPack, RoundTripSharesMemory) {
  Tensor t = Tensor::empty({4}, DataType::Int(64));
  for (int i = 0; i < 4; ++i) t.data_as<int64_t>()[i] = 10 * i;
  std::weak_ptr<uint8_t> weak = t.buffer();
  Tensor back = from_dlpack(to_dlpack(t));
  EXPECT_EQ(back.data(), t.data());
  EXPECT_EQ(back.shape(), t.shape());
  EXPECT_EQ(back.dtype(), DataType::Int(64));
  t = Tensor();
  EXPECT_FALSE(weak.expired());
  EXPECT_EQ(back.data_as<int64_t>()[3], 30);
  back = Tensor();
  EXPECT_TRUE(weak.expired());
}

TEST(DLPack, ImportSharesAndCallsDeleterOnce) {
  int deleted = 0;
  DLManagedTensor* m = make_producer(&deleted, {2, 4});
  void* data = m->dl_tensor.data;
  {
    Tensor t = from_dlpack(m);
    EXPECT_EQ(t.data(), data);
    EXPECT_EQ(t.shape(), (std::vector<int64_t>{2, 4}));
    EXPECT_EQ(t.data_as<float>()[7], 7.0f);
    Tensor copy_of_handle = t;  // shares the buffer: still one deleter call in the end
    t = Tensor();
    EXPECT_EQ(deleted, 0);
    EXPECT_EQ(copy_of_handle.data_as<float>()[1], 1.0f);
  }
  EXPECT_EQ(deleted, 1);
}

TEST(DLPack, ImportAcceptsExplicitCompactStridesAndOffset) {
  int deleted = 0;
  // Size-1 dimension with an arbitrary stride is still compact; byte_offset of 4 floats.
  DLManagedTensor* m = make_producer(&deleted, {2, 1, 3}, {3, 99, 1}, 4 * sizeof(float));
  {
    Tensor t = from_dlpack(m);
    EXPECT_EQ(t.data_as<float>()[0], 4.0f);
    EXPECT_EQ(t.data_as<float>()[5], 9.0f);
  }
  EXPECT_EQ(deleted, 1);
}

TEST(DLPack, RejectsNonCompactStridesUnlessCopyAllowed) {
  int deleted = 0;
  // A transposed 3x2 view of a 2x3 row-major matrix.
  DLManagedTensor* m = make_producer(&deleted, {3, 2}, {1, 3});
  EXPECT_FALSE(can_share_dlpack(m->dl_tensor));
  std::string kind;
  std::string msg = error_of([&] { from_dlpack(m); }, &kind);
  EXPECT_EQ(kind, "ValueError");
  EXPECT_NE(msg.find("strides"), std::string::npos) << msg;
  EXPECT_EQ(deleted, 0);  // on failure the caller still owns it
  Tensor t = from_dlpack(m, DLPackCopy::kIfNeeded);
  EXPECT_EQ(deleted, 1);  // copied, producer released at once
  std::vector<float> got(t.data_as<float>(), t.data_as<float>() + 6);
  EXPECT_EQ(got, (std::vector<float>{0, 3, 1, 4, 2, 5}));
}

TEST(DLPack, RejectsMisalignedUnlessCopyAllowed) {
  int deleted = 0;
  DLManagedTensor* m = make_producer(&deleted, {3}, {}, 2);  // float data at 2 bytes past a float
  std::string msg = error_of([&] { from_dlpack(m); });
  EXPECT_NE(msg.find("aligned"), std::string::npos) << msg;
  EXPECT_EQ(deleted, 0);
  Tensor t = from_dlpack(m, DLPackCopy::kIfNeeded);
  EXPECT_EQ(deleted, 1);
  float expected[3];
  Producer ref{};
  std::iota(ref.storage, ref.storage + 64, 0.0f);
  std::memcpy(expected, reinterpret_cast<uint8_t*>(ref.storage) + 2, sizeof(expected));
  EXPECT_EQ(std::memcmp(t.data(), expected, sizeof(expected)), 0);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data()) % 64, 0u);
}

TEST(DLPack, RejectsUnsupportedDevicesAndDtypes) {
  int deleted = 0;
  DLManagedTensor* gpu = make_producer(&deleted, {2}, {}, 0, {kDLFloat, 32, 1}, kDLVulkan);
  std::string kind;
  std::string msg = error_of([&] { from_dlpack(gpu, DLPackCopy::kIfNeeded); }, &kind);
  EXPECT_EQ(kind, "ValueError");
  EXPECT_NE(msg.find("vulkan"), std::string::npos) << msg;
  EXPECT_NE(msg.find("CPU (kDLCPU), CUDA (kDLCUDA)"), std::string::npos) << msg;
  gpu->deleter(gpu);

  DLManagedTensor* vec = make_producer(&deleted, {2}, {}, 0, {kDLFloat, 32, 4});
  msg = error_of([&] { from_dlpack(vec); }, &kind);
  EXPECT_EQ(kind, "TypeError");
  EXPECT_NE(msg.find("lanes 4"), std::string::npos) << msg;
  vec->deleter(vec);

  DLManagedTensor* cplx = make_producer(&deleted, {2}, {}, 0, {kDLComplex, 64, 1});
  EXPECT_EQ(error_of([&] { from_dlpack(cplx); }, &kind).empty(), false);
  EXPECT_EQ(kind, "TypeError");
  cplx->deleter(cplx);
  EXPECT_EQ(deleted, 3);
  EXPECT_EQ(error_of([&] { from_dlpack(nullptr); }, &kind).empty(), false);
  EXPECT_EQ(error_of([&] { to_dlpack(Tensor()); }, &kind).empty(), false);
}

// Sharing CUDA memory needs no GPU: the pointer is held, never read, and the producer's
// deleter runs when the last reference goes.
TEST(DLPack, SharesCudaMemoryAndExportsTheDevice) {
  int deleted = 0;
  DLManagedTensor* m = make_producer(&deleted, {2, 3}, {}, 0, {kDLFloat, 32, 1}, kDLCUDA);
  m->dl_tensor.device.device_id = 1;
  void* data = m->dl_tensor.data;
  {
    Tensor t = from_dlpack(m);
    EXPECT_EQ(t.device(), (Device{DeviceKind::kCUDA, 1}));
    EXPECT_EQ(t.data(), data);
    DLManagedTensor* back = to_dlpack(t);
    EXPECT_EQ(back->dl_tensor.device.device_type, kDLCUDA);
    EXPECT_EQ(back->dl_tensor.device.device_id, 1);
    EXPECT_EQ(back->dl_tensor.data, data);
    back->deleter(back);
    EXPECT_EQ(deleted, 0);
  }
  EXPECT_EQ(deleted, 1);
  // Pinned host memory (kDLCUDAHost) is shared too and stays marked as such.
  DLManagedTensor* pinned = make_producer(&deleted, {4}, {}, 0, {kDLFloat, 32, 1}, kDLCUDAHost);
  Tensor p = from_dlpack(pinned);
  EXPECT_EQ(p.device().kind, DeviceKind::kCUDAHost);
  EXPECT_TRUE(p.device().is_host_accessible());
  EXPECT_EQ(p.data_as<float>()[3], 3.0f);
  for (DeviceKind k : {DeviceKind::kCPU, DeviceKind::kCUDA, DeviceKind::kCUDAHost, DeviceKind::kCUDAManaged}) {
    Device d{k, 2};
    EXPECT_EQ(from_dlpack_device(to_dlpack_device(d)), d);
  }
}

TEST(DLPack, DtypeMapping) {
  const char* names[] = {"float16", "float32", "float64", "bfloat16", "int8",  "int16",
                         "int32",   "int64",   "uint8",   "uint16",   "uint32", "uint64"};
  for (const char* n : names) {
    DataType t = DataType::parse(n);
    DLDataType d = to_dlpack_dtype(t);
    EXPECT_EQ(d.bits, t.bits()) << n;
    EXPECT_EQ(d.lanes, 1) << n;
    EXPECT_EQ(from_dlpack_dtype(d), t) << n;
  }
  EXPECT_EQ(to_dlpack_dtype(DataType::Float(16)).code, kDLFloat);
  EXPECT_EQ(to_dlpack_dtype(DataType::BFloat16()).code, kDLBfloat);
  EXPECT_EQ(to_dlpack_dtype(DataType::Int(8)).code, kDLInt);
  EXPECT_EQ(to_dlpack_dtype(DataType::UInt(32)).code, kDLUInt);
  // DLPack 0.6 has no bool: exported as its storage (uint8); kDLBool (6) is accepted on import.
  DLDataType b = to_dlpack_dtype(DataType::Bool());
  EXPECT_EQ(b.code, kDLUInt);
  EXPECT_EQ(b.bits, 8);
  EXPECT_EQ(from_dlpack_dtype(DLDataType{6, 8, 1}), DataType::Bool());
  EXPECT_THROW(from_dlpack_dtype(DLDataType{kDLInt, 4, 1}), Error);
  EXPECT_THROW(to_dlpack_dtype(DataType::Void()), Error);
  EXPECT_EQ(required_alignment(DataType::Float(64)), 8u);
  EXPECT_EQ(required_alignment(DataType::Bool()), 1u);
}

TEST(DLPack, BoolTensorRoundTripKeepsBytes) {
  Tensor t = Tensor::empty({3}, DataType::Bool());
  uint8_t v[3] = {1, 0, 1};
  std::memcpy(t.data(), v, 3);
  Tensor back = from_dlpack(to_dlpack(t));
  EXPECT_EQ(back.dtype(), DataType::UInt(8));  // DLPack 0.6 cannot say "bool"
  EXPECT_EQ(back.data(), t.data());
}

TEST(DLPack, EmptyTensor) {
  int deleted = 0;
  DLManagedTensor* m = make_producer(&deleted, {0, 3});
  m->dl_tensor.data = nullptr;
  Tensor t = from_dlpack(m);
  EXPECT_TRUE(t.defined());
  EXPECT_EQ(t.numel(), 0);
  EXPECT_EQ(deleted, 1);
}
