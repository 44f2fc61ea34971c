// Shared helpers of the host kernels: dtype dispatch, broadcasting strides, axes.
#pragma once

#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "partita/runtime/half.h"
#include "partita/runtime/kernel.h"
#include "partita/support/error.h"

namespace partita::runtime::kernels {

[[noreturn]] inline void unsupported(const char* op, DataType dt) {
  throw_error("TypeError", std::string(op) + ": dtype " + dt.str() + " is not supported on the host");
}

/// Calls f(T{}) with the C++ type of `dt`. bool and uint8 are both uint8_t. Only types with C++
/// arithmetic: float16/bfloat16 are not here (see dispatch_with_float16).
template <class F>
void dispatch(DataType dt, const char* op, F&& f) {
  if (dt.lanes() != 1) unsupported(op, dt);
  switch (dt.code()) {
    case DataType::Code::Float:
      if (dt.bits() == 32) return f(float{});
      if (dt.bits() == 64) return f(double{});
      break;
    case DataType::Code::Int:
      if (dt.bits() == 32) return f(int32_t{});
      if (dt.bits() == 64) return f(int64_t{});
      if (dt.bits() == 8) return f(int8_t{});
      if (dt.bits() == 16) return f(int16_t{});
      break;
    case DataType::Code::UInt:
      if (dt.bits() == 1 || dt.bits() == 8) return f(uint8_t{});
      if (dt.bits() == 16) return f(uint16_t{});
      if (dt.bits() == 32) return f(uint32_t{});
      if (dt.bits() == 64) return f(uint64_t{});
      break;
    default: break;
  }
  unsupported(op, dt);
}

/// Like dispatch, plus float16 and bfloat16 as the storage types Half and BFloat16. They have
/// no arithmetic, so only kernels written for them (converting through float) use this.
template <class F>
void dispatch_with_float16(DataType dt, const char* op, F&& f) {
  if (dt == DataType::Float(16)) return f(Half{});
  if (dt == DataType::BFloat16()) return f(BFloat16{});
  dispatch(dt, op, f);
}

/// Like dispatch, floats only.
template <class F>
void dispatch_float(DataType dt, const char* op, F&& f) {
  if (dt == DataType::Float(32)) return f(float{});
  if (dt == DataType::Float(64)) return f(double{});
  unsupported(op, dt);
}

/// Like dispatch_float, plus float16 and bfloat16 (storage types: read and write their elements
/// with load_real / store_real, computing in double).
template <class F>
void dispatch_float_with_float16(DataType dt, const char* op, F&& f) {
  if (dt == DataType::Float(16)) return f(Half{});
  if (dt == DataType::BFloat16()) return f(BFloat16{});
  dispatch_float(dt, op, f);
}

/// Element i of a floating-point tensor of any storage type, exactly, as double.
template <class T>
double load_real(const T* p, int64_t i) {
  if constexpr (is_float16_storage_v<T>) return double(p[i].to_float());
  else return double(p[i]);
}

/// Stores `v` into element i, rounded once to the storage type.
template <class T>
void store_real(T* p, int64_t i, double v) {
  if constexpr (is_float16_storage_v<T>) p[i] = T::from(v);
  else p[i] = T(v);
}

inline std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size());
  int64_t acc = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    s[i] = acc;
    acc *= shape[i];
  }
  return s;
}

/// Element strides of `shape` broadcast (right-aligned) to `out`; 0 on broadcast dims.
inline std::vector<int64_t> bcast_strides(const std::vector<int64_t>& shape, const std::vector<int64_t>& out) {
  std::vector<int64_t> s(out.size(), 0);
  auto cs = contiguous_strides(shape);
  size_t off = out.size() - shape.size();
  for (size_t i = 0; i < shape.size(); ++i) s[off + i] = shape[i] == 1 ? 0 : cs[i];
  return s;
}

inline int normalize_axis(int64_t axis, int ndim, const char* op) {
  if (axis < -ndim || axis >= std::max(ndim, 1))
    throw_error("ValueError", std::string(op) + ": axis " + std::to_string(axis) + " out of range for rank " +
                                  std::to_string(ndim));
  return int(axis < 0 ? axis + ndim : axis);
}

/// Iterates every index of `out_shape`; for each run along the last axis calls
/// run(offsets of each operand at the run start, inner strides, length, output offset).
template <size_t N, class F>
void for_each_run(const std::vector<int64_t>& out_shape, const std::vector<int64_t> (&strides)[N], F&& run) {
  int nd = int(out_shape.size());
  int64_t total = 1;
  for (int64_t d : out_shape) total *= d;
  if (total == 0) return;
  if (nd == 0) {
    int64_t offs[N] = {};
    int64_t inner[N] = {};
    run(offs, inner, int64_t(1), int64_t(0));
    return;
  }
  int64_t len = out_shape[size_t(nd - 1)];
  int64_t inner[N];
  for (size_t k = 0; k < N; ++k) inner[k] = strides[k][size_t(nd - 1)];
  std::vector<int64_t> idx(size_t(nd), 0);
  int64_t offs[N] = {};
  for (int64_t o = 0; o < total; o += len) {
    run(offs, inner, len, o);
    // advance the odometer over the outer dims
    for (int d = nd - 2; d >= 0; --d) {
      if (++idx[size_t(d)] < out_shape[size_t(d)]) {
        for (size_t k = 0; k < N; ++k) offs[k] += strides[k][size_t(d)];
        break;
      }
      for (size_t k = 0; k < N; ++k) offs[k] -= strides[k][size_t(d)] * (out_shape[size_t(d)] - 1);
      idx[size_t(d)] = 0;
    }
  }
}

/// y = GEMM: C[M,N] = A[M,K] * B[K,N] (row-major with leading dims), blocked for cache.
template <class T>
void gemm(int64_t M, int64_t N, int64_t K, const T* A, int64_t lda, const T* B, int64_t ldb, T* C, int64_t ldc) {
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) C[i * ldc + j] = T(0);
  constexpr int64_t KB = 256, NB = 512, MB = 64;
  for (int64_t k0 = 0; k0 < K; k0 += KB) {
    int64_t k1 = std::min(K, k0 + KB);
    for (int64_t j0 = 0; j0 < N; j0 += NB) {
      int64_t j1 = std::min(N, j0 + NB);
      for (int64_t i0 = 0; i0 < M; i0 += MB) {
        int64_t i1 = std::min(M, i0 + MB);
        for (int64_t i = i0; i < i1; ++i) {
          T* __restrict c = C + i * ldc;
          int64_t k = k0;
          for (; k + 4 <= k1; k += 4) {
            T a0 = A[i * lda + k], a1 = A[i * lda + k + 1], a2 = A[i * lda + k + 2], a3 = A[i * lda + k + 3];
            const T* __restrict b0 = B + k * ldb;
            const T* __restrict b1 = b0 + ldb;
            const T* __restrict b2 = b1 + ldb;
            const T* __restrict b3 = b2 + ldb;
            for (int64_t j = j0; j < j1; ++j) c[j] += a0 * b0[j] + a1 * b1[j] + a2 * b2[j] + a3 * b3[j];
          }
          for (; k < k1; ++k) {
            T a = A[i * lda + k];
            const T* __restrict b = B + k * ldb;
            for (int64_t j = j0; j < j1; ++j) c[j] += a * b[j];
          }
        }
      }
    }
  }
}

/// Converts every element of `in` to `out`'s dtype (same element count).
void convert(const Tensor& in, Tensor& out);

}  // namespace partita::runtime::kernels
