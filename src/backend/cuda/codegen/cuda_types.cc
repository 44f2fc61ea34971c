#include "cuda_types.h"

#include <bit>
#include <cmath>
#include <algorithm>
#include <cstdio>
#include <limits>

namespace partita::backend::cuda {
namespace {

bool is_f16(DataType t) { return t == DataType::Float(16); }
bool is_bf16(DataType t) { return t == DataType::BFloat16(); }
bool float_compute(DataType t) { return is_f16(t) || is_bf16(t) || t == DataType::Float(32); }

std::string int_type(DataType t) {
  const char* s = t.code() == DataType::Code::Int ? "pt_i" : "pt_u";
  return s + std::to_string(t.bits());
}

}  // namespace

bool dtype_supported(DataType t) {
  if (t.lanes() != 1) return false;
  if (t.is_bool()) return true;
  if (t.code() == DataType::Code::Float) return t.bits() == 16 || t.bits() == 32 || t.bits() == 64;
  if (t.code() == DataType::Code::BFloat) return t.bits() == 16;
  if (t.is_int() || t.is_uint()) return t.bits() == 8 || t.bits() == 16 || t.bits() == 32 || t.bits() == 64;
  return false;
}

std::string storage_type(DataType t) {
  if (is_f16(t)) return "__half";
  if (is_bf16(t)) return "__nv_bfloat16";
  if (t == DataType::Float(32)) return "float";
  if (t == DataType::Float(64)) return "double";
  if (t.is_bool()) return "pt_u8";
  return int_type(t);
}

std::string compute_type(DataType t) {
  if (float_compute(t)) return "float";
  if (t == DataType::Float(64)) return "double";
  if (t.is_bool()) return "bool";
  return int_type(t);
}

std::string accumulate_type(DataType t) {
  if (float_compute(t)) return "float";
  if (t == DataType::Float(64)) return "double";
  if (t.is_int()) return "pt_i64";
  return "pt_u64";  // unsigned and bool
}

std::string load_expr(DataType t, const std::string& stored) {
  if (is_f16(t)) return "__half2float(" + stored + ")";
  if (is_bf16(t)) return "__bfloat162float(" + stored + ")";
  if (t.is_bool()) return "(" + stored + " != 0)";
  return stored;
}

std::string store_expr(DataType t, const std::string& value) {
  if (is_f16(t)) return "__float2half_rn(" + value + ")";
  if (is_bf16(t)) return "__float2bfloat16_rn(" + value + ")";
  if (t.is_bool()) return "(pt_u8)(" + value + ")";
  return value;
}

std::string convert_expr(DataType from, DataType to, const std::string& value) {
  if (from == to) return value;
  if (to.is_bool()) return "(" + value + " != 0)";
  if (is_f16(to) || is_bf16(to)) {
    // Round once: from float-computed values through float, from doubles and integers through
    // double (exact for every integer a 16-bit float can tell apart).
    bool via_float = float_compute(from) || from.is_bool();
    std::string narrow = is_f16(to) ? (via_float ? "__float2half_rn" : "__double2half")
                                     : (via_float ? "__float2bfloat16_rn" : "__double2bfloat16");
    std::string widen = is_f16(to) ? "__half2float" : "__bfloat162float";
    std::string arg = via_float ? "(float)(" + value + ")" : "(double)(" + value + ")";
    return widen + "(" + narrow + "(" + arg + "))";
  }
  return "(" + compute_type(to) + ")(" + value + ")";
}

std::string float_literal(DataType t, double v) {
  char buf[64];
  if (t == DataType::Float(64)) {
    if (!std::isfinite(v))
      return "__longlong_as_double(" + std::to_string(std::bit_cast<int64_t>(v)) + "LL)";
    std::snprintf(buf, sizeof buf, "%a", v);
    return buf;
  }
  if (float_compute(t)) {
    float f = float(v);
    if (!std::isfinite(f)) return "__int_as_float(" + std::to_string(std::bit_cast<int32_t>(f)) + ")";
    std::snprintf(buf, sizeof buf, "%af", double(f));
    return buf;
  }
  if (t.is_bool()) return v != 0 ? "true" : "false";
  // Integers: the value converted as C++ converts a double (truncation), within range.
  if (std::isnan(v)) return int_literal(t, 0);
  return int_literal(t, int64_t(std::trunc(std::clamp(v, -9.2e18, 9.2e18))));
}

std::string int_literal(DataType t, int64_t v) {
  if (t.is_bool()) return v ? "true" : "false";
  if (float_compute(t) || t == DataType::Float(64)) return float_literal(t, double(v));
  if (t.is_uint()) return "(" + compute_type(t) + ")" + std::to_string(uint64_t(v)) + "ULL";
  if (v == std::numeric_limits<int64_t>::min()) return "(" + compute_type(t) + ")(-9223372036854775807LL - 1)";
  return "(" + compute_type(t) + ")" + std::to_string(v) + "LL";
}

std::string lowest_literal(DataType t) {
  if (float_compute(t) || t == DataType::Float(64)) return float_literal(t, -INFINITY);
  if (t.is_bool()) return "false";
  if (t.is_uint()) return int_literal(t, 0);
  return int_literal(t, t.bits() == 64 ? std::numeric_limits<int64_t>::min() : -(int64_t(1) << (t.bits() - 1)));
}

std::string highest_literal(DataType t) {
  if (float_compute(t) || t == DataType::Float(64)) return float_literal(t, INFINITY);
  if (t.is_bool()) return "true";
  if (t.is_uint())
    return "(" + compute_type(t) + ")" + std::to_string(t.bits() == 64 ? ~uint64_t(0) : (uint64_t(1) << t.bits()) - 1) +
           "ULL";
  return int_literal(t, t.bits() == 64 ? std::numeric_limits<int64_t>::max() : (int64_t(1) << (t.bits() - 1)) - 1);
}

std::string math_fn(DataType t, const std::string& name) {
  return t == DataType::Float(64) ? name : name + "f";
}

}  // namespace partita::backend::cuda
