// Element-wise kernels: binary arithmetic, modulo, comparisons and logical operators with numpy
// broadcasting, where, unary math (trigonometric, rounding, predicates), activations, clip,
// astype, dropout (identity at inference).
#include <algorithm>
#include <cstring>
#include <type_traits>

#include "common.h"

namespace partita::runtime::kernels {
namespace {

template <class T, class R, class Op>
void binary_typed(const Tensor& a, const Tensor& b, Tensor& out, Op op) {
  const T* pa = a.data_as<T>();
  const T* pb = b.data_as<T>();
  R* po = out.data_as<R>();
  int64_t n = out.numel();
  if (a.shape() == out.shape() && b.shape() == out.shape()) {
    for (int64_t i = 0; i < n; ++i) po[i] = R(op(pa[i], pb[i]));
    return;
  }
  if (a.shape() == out.shape() && b.numel() == 1) {
    T s = pb[0];
    for (int64_t i = 0; i < n; ++i) po[i] = R(op(pa[i], s));
    return;
  }
  if (b.shape() == out.shape() && a.numel() == 1) {
    T s = pa[0];
    for (int64_t i = 0; i < n; ++i) po[i] = R(op(s, pb[i]));
    return;
  }
  std::vector<int64_t> st[2] = {bcast_strides(a.shape(), out.shape()), bcast_strides(b.shape(), out.shape())};
  for_each_run(out.shape(), st, [&](const int64_t* offs, const int64_t* inner, int64_t len, int64_t o) {
    const T* x = pa + offs[0];
    const T* y = pb + offs[1];
    for (int64_t i = 0; i < len; ++i) po[o + i] = R(op(x[i * inner[0]], y[i * inner[1]]));
  });
}

void check_binary(const char* op, std::span<const Tensor> in) {
  if (in.size() != 2) throw_error("TypeError", std::string(op) + " takes 2 tensors");
  if (!(in[0].dtype() == in[1].dtype()))
    throw_error("TypeError", std::string(op) + ": operand dtypes differ (" + in[0].dtype().str() + " vs " +
                                 in[1].dtype().str() + ")");
}

template <class T>
T floordiv_t(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::floor(a / b);
  } else {
    if (b == 0) throw_error("ValueError", "floor_divide: integer division by zero");
    T q = a / b;
    if constexpr (std::is_signed_v<T>)
      if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
    return q;
  }
}

template <class T>
T div_t(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) return a / b;
  else return floordiv_t(a, b);  // integer divide follows TVM's floor division
}

template <class T>
T power_t(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) return std::pow(a, b);
  else return T(std::pow(double(a), double(b)));
}

// Integer add, subtract and multiply wrap around, as numpy's and TVM's do. Signed overflow is
// undefined behaviour in C++ (found by fuzz_vm_inputs: int64 add), so integers of 4 bytes or
// more compute in their unsigned type and narrower ones in int64 (where uint16 * uint16 cannot
// overflow int either); the conversion back is modular.
template <class T, class F>
T wrapping(T a, T b, F f) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool> && sizeof(T) >= 4) {
    using U = std::make_unsigned_t<T>;
    return T(f(U(a), U(b)));
  } else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    return T(f(int64_t(a), int64_t(b)));
  } else {
    return T(f(a, b));
  }
}

#define ARITH_KERNEL(NAME, EXPR)                                                                 \
  void NAME(std::span<const Tensor> in, const KernelAttrs&, std::span<Tensor> out) {             \
    check_binary(#NAME, in);                                                                     \
    dispatch(in[0].dtype(), #NAME, [&](auto tag) {                                               \
      using T = decltype(tag);                                                                   \
      binary_typed<T, T>(in[0], in[1], out[0], [](T a, T b) -> T { return EXPR; });             \
    });                                                                                          \
  }
ARITH_KERNEL(k_add, wrapping(a, b, [](auto x, auto y) { return x + y; }))
ARITH_KERNEL(k_subtract, wrapping(a, b, [](auto x, auto y) { return x - y; }))
ARITH_KERNEL(k_multiply, wrapping(a, b, [](auto x, auto y) { return x * y; }))
ARITH_KERNEL(k_divide, div_t<T>(a, b))
ARITH_KERNEL(k_floor_divide, floordiv_t<T>(a, b))
ARITH_KERNEL(k_power, power_t<T>(a, b))

/// Python's %: the result has the divisor's sign.
template <class T>
T floor_mod_t(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    T r = std::fmod(a, b);
    return (r != T(0) && ((r < T(0)) != (b < T(0)))) ? T(r + b) : r;
  } else {
    if (b == 0) throw_error("ValueError", "floor_mod: integer division by zero");
    if constexpr (std::is_signed_v<T>) {
      T r = T(a % b);
      return (r != 0 && ((r < 0) != (b < 0))) ? T(r + b) : r;
    } else {
      return T(a % b);
    }
  }
}

/// C's fmod / %: the result has the dividend's sign.
template <class T>
T trunc_mod_t(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::fmod(a, b);
  } else {
    if (b == 0) throw_error("ValueError", "mod: integer division by zero");
    return T(a % b);
  }
}
// Both also take float16 and bfloat16, computed in float and rounded once.
template <class F>
void mod_kernel(const char* name, std::span<const Tensor> in, std::span<Tensor> out, F f) {
  check_binary(name, in);
  dispatch_with_float16(in[0].dtype(), name, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_float16_storage_v<T>) {
      binary_typed<T, T>(in[0], in[1], out[0], [&](T a, T b) { return T::from(f(a.to_float(), b.to_float())); });
    } else {
      binary_typed<T, T>(in[0], in[1], out[0], [&](T a, T b) -> T { return f(a, b); });
    }
  });
}
void k_floor_mod(std::span<const Tensor> in, const KernelAttrs&, std::span<Tensor> out) {
  mod_kernel("floor_mod", in, out, [](auto a, auto b) { return floor_mod_t(a, b); });
}
void k_mod(std::span<const Tensor> in, const KernelAttrs&, std::span<Tensor> out) {
  mod_kernel("mod", in, out, [](auto a, auto b) { return trunc_mod_t(a, b); });
}

#define LOGICAL_KERNEL(NAME, EXPR)                                                               \
  void NAME(std::span<const Tensor> in, const KernelAttrs&, std::span<Tensor> out) {             \
    check_binary(#NAME, in);                                                                     \
    binary_typed<uint8_t, uint8_t>(in[0], in[1], out[0],                                         \
                                   [](uint8_t a, uint8_t b) -> uint8_t { return EXPR; });        \
  }
LOGICAL_KERNEL(k_logical_and, (a != 0) && (b != 0))
LOGICAL_KERNEL(k_logical_or, (a != 0) || (b != 0))
LOGICAL_KERNEL(k_logical_xor, (a != 0) != (b != 0))

// maximum/minimum also take float16 and bfloat16, compared as float; the chosen operand is
// exactly representable, so converting it back is exact (NaN payloads included).
template <class Pick>
void minmax(const char* name, std::span<const Tensor> in, std::span<Tensor> out, Pick pick) {
  check_binary(name, in);
  dispatch_with_float16(in[0].dtype(), name, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_float16_storage_v<T>) {
      binary_typed<T, T>(in[0], in[1], out[0],
                         [&](T a, T b) { return T::from(pick(a.to_float(), b.to_float())); });
    } else {
      binary_typed<T, T>(in[0], in[1], out[0], [&](T a, T b) -> T { return pick(a, b); });
    }
  });
}
void k_maximum(std::span<const Tensor> in, const KernelAttrs&, std::span<Tensor> out) {
  minmax("k_maximum", in, out, [](auto a, auto b) { return std::max(a, b); });
}
void k_minimum(std::span<const Tensor> in, const KernelAttrs&, std::span<Tensor> out) {
  minmax("k_minimum", in, out, [](auto a, auto b) { return std::min(a, b); });
}

#define CMP_KERNEL(NAME, EXPR)                                                                   \
  void NAME(std::span<const Tensor> in, const KernelAttrs&, std::span<Tensor> out) {             \
    check_binary(#NAME, in);                                                                     \
    dispatch(in[0].dtype(), #NAME, [&](auto tag) {                                               \
      using T = decltype(tag);                                                                   \
      binary_typed<T, uint8_t>(in[0], in[1], out[0], [](T a, T b) -> uint8_t { return EXPR; });  \
    });                                                                                          \
  }
CMP_KERNEL(k_equal, a == b)
CMP_KERNEL(k_not_equal, a != b)
CMP_KERNEL(k_less, a < b)
CMP_KERNEL(k_less_equal, a <= b)
CMP_KERNEL(k_greater, a > b)
CMP_KERNEL(k_greater_equal, a >= b)

void k_where(std::span<const Tensor> in, const KernelAttrs&, std::span<Tensor> out) {
  const Tensor &c = in[0], &a = in[1], &b = in[2];
  Tensor& o = out[0];
  dispatch(a.dtype(), "where", [&](auto tag) {
    using T = decltype(tag);
    const uint8_t* pc = c.data_as<uint8_t>();
    const T* pa = a.data_as<T>();
    const T* pb = b.data_as<T>();
    T* po = o.data_as<T>();
    std::vector<int64_t> st[3] = {bcast_strides(c.shape(), o.shape()), bcast_strides(a.shape(), o.shape()),
                                  bcast_strides(b.shape(), o.shape())};
    for_each_run(o.shape(), st, [&](const int64_t* offs, const int64_t* inner, int64_t len, int64_t oo) {
      for (int64_t i = 0; i < len; ++i)
        po[oo + i] = pc[offs[0] + i * inner[0]] ? pa[offs[1] + i * inner[1]] : pb[offs[2] + i * inner[2]];
    });
  });
}

template <class F>
void unary_float(const char* name, std::span<const Tensor> in, std::span<Tensor> out, F f) {
  dispatch_float(in[0].dtype(), name, [&](auto tag) {
    using T = decltype(tag);
    const T* x = in[0].data_as<T>();
    T* y = out[0].data_as<T>();
    int64_t n = in[0].numel();
    for (int64_t i = 0; i < n; ++i) y[i] = T(f(x[i]));
  });
}

#define FLOAT_UNARY(NAME, EXPR)                                                          \
  void NAME(std::span<const Tensor> in, const KernelAttrs&, std::span<Tensor> out) {     \
    unary_float(#NAME, in, out, [](auto v) { using T = decltype(v); (void)sizeof(T); return EXPR; }); \
  }
FLOAT_UNARY(k_exp, std::exp(v))
FLOAT_UNARY(k_log, std::log(v))
FLOAT_UNARY(k_sqrt, std::sqrt(v))
FLOAT_UNARY(k_rsqrt, T(1) / std::sqrt(v))
FLOAT_UNARY(k_tanh, std::tanh(v))
FLOAT_UNARY(k_sigmoid, T(1) / (T(1) + std::exp(-v)))
FLOAT_UNARY(k_erf, std::erf(v))
FLOAT_UNARY(k_gelu, T(0.5) * v * (T(1) + std::erf(v * T(0.7071067811865476))))
FLOAT_UNARY(k_gelu_tanh,
            T(0.5) * v * (T(1) + std::tanh(T(0.7978845608028654) * (v + T(0.044715) * v * v * v))))
FLOAT_UNARY(k_silu, v / (T(1) + std::exp(-v)))
FLOAT_UNARY(k_sin, std::sin(v))
FLOAT_UNARY(k_cos, std::cos(v))
FLOAT_UNARY(k_tan, std::tan(v))
FLOAT_UNARY(k_asin, std::asin(v))
FLOAT_UNARY(k_acos, std::acos(v))
FLOAT_UNARY(k_atan, std::atan(v))
FLOAT_UNARY(k_sinh, std::sinh(v))
FLOAT_UNARY(k_cosh, std::cosh(v))
FLOAT_UNARY(k_asinh, std::asinh(v))
FLOAT_UNARY(k_acosh, std::acosh(v))
FLOAT_UNARY(k_atanh, std::atanh(v))

/// A predicate per float element, written as bool (uint8).
template <class F>
void float_predicate(const char* name, std::span<const Tensor> in, std::span<Tensor> out, F f) {
  dispatch_float(in[0].dtype(), name, [&](auto tag) {
    using T = decltype(tag);
    const T* x = in[0].data_as<T>();
    uint8_t* y = out[0].data_as<uint8_t>();
    for (int64_t i = 0; i < in[0].numel(); ++i) y[i] = f(x[i]) ? 1 : 0;
  });
}
void k_isnan(std::span<const Tensor> in, const KernelAttrs&, std::span<Tensor> out) {
  float_predicate("isnan", in, out, [](auto v) { return std::isnan(v); });
}
void k_isinf(std::span<const Tensor> in, const KernelAttrs&, std::span<Tensor> out) {
  float_predicate("isinf", in, out, [](auto v) { return std::isinf(v); });
}
void k_isfinite(std::span<const Tensor> in, const KernelAttrs&, std::span<Tensor> out) {
  float_predicate("isfinite", in, out, [](auto v) { return std::isfinite(v); });
}
void k_logical_not(std::span<const Tensor> in, const KernelAttrs&, std::span<Tensor> out) {
  const uint8_t* x = in[0].data_as<uint8_t>();
  uint8_t* y = out[0].data_as<uint8_t>();
  for (int64_t i = 0; i < in[0].numel(); ++i) y[i] = x[i] ? 0 : 1;
}

template <class F>
void unary_any(const char* name, std::span<const Tensor> in, std::span<Tensor> out, F f) {
  dispatch(in[0].dtype(), name, [&](auto tag) {
    using T = decltype(tag);
    const T* x = in[0].data_as<T>();
    T* y = out[0].data_as<T>();
    int64_t n = in[0].numel();
    for (int64_t i = 0; i < n; ++i) y[i] = T(f(x[i]));
  });
}

void k_negative(std::span<const Tensor> in, const KernelAttrs&, std::span<Tensor> out) {
  unary_any("negative", in, out, [](auto v) { return -v; });
}
void k_abs(std::span<const Tensor> in, const KernelAttrs&, std::span<Tensor> out) {
  unary_any("abs", in, out, [](auto v) {
    using T = decltype(v);
    if constexpr (std::is_unsigned_v<T>) return v;
    else return v < T(0) ? T(-v) : v;
  });
}
// Rounding: the identity on integers. round is to the nearest, ties to even (ONNX's Round,
// numpy.round), in the default floating-point rounding mode.
#define ROUNDING_KERNEL(NAME, FN)                                                              \
  void NAME(std::span<const Tensor> in, const KernelAttrs&, std::span<Tensor> out) {           \
    unary_any(#NAME, in, out, [](auto v) {                                                     \
      using T = decltype(v);                                                                   \
      if constexpr (std::is_floating_point_v<T>) return T(FN(v));                              \
      else return v;                                                                           \
    });                                                                                        \
  }
ROUNDING_KERNEL(k_floor, std::floor)
ROUNDING_KERNEL(k_ceil, std::ceil)
ROUNDING_KERNEL(k_round, std::nearbyint)
ROUNDING_KERNEL(k_trunc, std::trunc)
void k_sign(std::span<const Tensor> in, const KernelAttrs&, std::span<Tensor> out) {
  unary_any("sign", in, out, [](auto v) {
    using T = decltype(v);
    if constexpr (std::is_floating_point_v<T>) {
      if (v != v) return v;  // NaN stays NaN
    }
    return v > T(0) ? T(1) : (v < T(0) ? T(-1) : T(0));
  });
}
void k_relu(std::span<const Tensor> in, const KernelAttrs&, std::span<Tensor> out) {
  unary_any("relu", in, out, [](auto v) {
    using T = decltype(v);
    return v > T(0) ? v : T(0);
  });
}
void k_clip(std::span<const Tensor> in, const KernelAttrs& attrs, std::span<Tensor> out) {
  double lo = attrs.get_float("min", -INFINITY), hi = attrs.get_float("max", INFINITY);
  dispatch(in[0].dtype(), "clip", [&](auto tag) {
    using T = decltype(tag);
    const T* x = in[0].data_as<T>();
    T* y = out[0].data_as<T>();
    int64_t n = in[0].numel();
    for (int64_t i = 0; i < n; ++i) {
      double v = double(x[i]);
      y[i] = v < lo ? T(lo) : (v > hi ? T(hi) : x[i]);
    }
  });
}
void k_astype(std::span<const Tensor> in, const KernelAttrs&, std::span<Tensor> out) { convert(in[0], out[0]); }
void k_copy(std::span<const Tensor> in, const KernelAttrs&, std::span<Tensor> out) {
  if (in[0].nbytes()) std::memcpy(out[0].data(), in[0].data(), in[0].nbytes());
}

// Inference: the identity, and a mask of ones.
void k_dropout(std::span<const Tensor> in, const KernelAttrs& a, std::span<Tensor> out) {
  k_copy(in, a, out);
  if (out.size() > 1)
    dispatch(out[1].dtype(), "dropout", [&](auto tag) {
      using T = decltype(tag);
      std::fill_n(out[1].data_as<T>(), out[1].numel(), T(1));
    });
}

/// One element of `A` as a `B`: the plain C++ conversion between types with arithmetic, and
/// through float for float16/bfloat16 (rounded once, to nearest even, when narrowing to them).
template <class B, class A>
B convert_element(A x) {
  if constexpr (std::is_same_v<A, B>) return x;
  else if constexpr (is_float16_storage_v<A>) return convert_element<B>(x.to_float());
  else if constexpr (is_float16_storage_v<B>) return B::from(x);
  else return B(x);
}

template <class T>
bool is_nonzero(T x) {
  if constexpr (is_float16_storage_v<T>) return x.to_float() != 0.0f;
  else return x != T(0);
}

}  // namespace

void convert(const Tensor& in, Tensor& out) {
  dispatch_with_float16(in.dtype(), "astype", [&](auto tin) {
    using A = decltype(tin);
    dispatch_with_float16(out.dtype(), "astype", [&](auto tout) {
      using B = decltype(tout);
      const A* x = in.data_as<A>();
      B* y = out.data_as<B>();
      int64_t n = in.numel();
      if constexpr (std::is_same_v<B, uint8_t>) {
        if (out.dtype().is_bool()) {
          for (int64_t i = 0; i < n; ++i) y[i] = B(is_nonzero(x[i]));
          return;
        }
      }
      for (int64_t i = 0; i < n; ++i) y[i] = convert_element<B>(x[i]);
    });
  });
}

PARTITA_REGISTER_KERNEL("relax.add", k_add);
PARTITA_REGISTER_KERNEL("relax.subtract", k_subtract);
PARTITA_REGISTER_KERNEL("relax.multiply", k_multiply);
PARTITA_REGISTER_KERNEL("relax.divide", k_divide);
PARTITA_REGISTER_KERNEL("relax.floor_divide", k_floor_divide);
PARTITA_REGISTER_KERNEL("relax.power", k_power);
PARTITA_REGISTER_KERNEL("relax.floor_mod", k_floor_mod);
PARTITA_REGISTER_KERNEL("relax.mod", k_mod);
PARTITA_REGISTER_KERNEL("relax.logical_and", k_logical_and);
PARTITA_REGISTER_KERNEL("relax.logical_or", k_logical_or);
PARTITA_REGISTER_KERNEL("relax.logical_xor", k_logical_xor);
PARTITA_REGISTER_KERNEL("relax.logical_not", k_logical_not);
PARTITA_REGISTER_KERNEL("relax.sin", k_sin);
PARTITA_REGISTER_KERNEL("relax.cos", k_cos);
PARTITA_REGISTER_KERNEL("relax.tan", k_tan);
PARTITA_REGISTER_KERNEL("relax.asin", k_asin);
PARTITA_REGISTER_KERNEL("relax.acos", k_acos);
PARTITA_REGISTER_KERNEL("relax.atan", k_atan);
PARTITA_REGISTER_KERNEL("relax.sinh", k_sinh);
PARTITA_REGISTER_KERNEL("relax.cosh", k_cosh);
PARTITA_REGISTER_KERNEL("relax.asinh", k_asinh);
PARTITA_REGISTER_KERNEL("relax.acosh", k_acosh);
PARTITA_REGISTER_KERNEL("relax.atanh", k_atanh);
PARTITA_REGISTER_KERNEL("relax.isnan", k_isnan);
PARTITA_REGISTER_KERNEL("relax.isinf", k_isinf);
PARTITA_REGISTER_KERNEL("relax.isfinite", k_isfinite);
PARTITA_REGISTER_KERNEL("relax.floor", k_floor);
PARTITA_REGISTER_KERNEL("relax.ceil", k_ceil);
PARTITA_REGISTER_KERNEL("relax.round", k_round);
PARTITA_REGISTER_KERNEL("relax.trunc", k_trunc);
PARTITA_REGISTER_KERNEL("relax.sign", k_sign);
PARTITA_REGISTER_KERNEL("relax.maximum", k_maximum);
PARTITA_REGISTER_KERNEL("relax.minimum", k_minimum);
PARTITA_REGISTER_KERNEL("relax.equal", k_equal);
PARTITA_REGISTER_KERNEL("relax.not_equal", k_not_equal);
PARTITA_REGISTER_KERNEL("relax.less", k_less);
PARTITA_REGISTER_KERNEL("relax.less_equal", k_less_equal);
PARTITA_REGISTER_KERNEL("relax.greater", k_greater);
PARTITA_REGISTER_KERNEL("relax.greater_equal", k_greater_equal);
PARTITA_REGISTER_KERNEL("relax.where", k_where);
PARTITA_REGISTER_KERNEL("relax.exp", k_exp);
PARTITA_REGISTER_KERNEL("relax.log", k_log);
PARTITA_REGISTER_KERNEL("relax.sqrt", k_sqrt);
PARTITA_REGISTER_KERNEL("relax.rsqrt", k_rsqrt);
PARTITA_REGISTER_KERNEL("relax.tanh", k_tanh);
PARTITA_REGISTER_KERNEL("relax.sigmoid", k_sigmoid);
PARTITA_REGISTER_KERNEL("relax.erf", k_erf);
PARTITA_REGISTER_KERNEL("relax.nn.gelu", k_gelu);
PARTITA_REGISTER_KERNEL("relax.nn.gelu_tanh", k_gelu_tanh);
PARTITA_REGISTER_KERNEL("relax.nn.silu", k_silu);
PARTITA_REGISTER_KERNEL("relax.negative", k_negative);
PARTITA_REGISTER_KERNEL("relax.abs", k_abs);
PARTITA_REGISTER_KERNEL("relax.nn.relu", k_relu);
PARTITA_REGISTER_KERNEL("relax.clip", k_clip);
PARTITA_REGISTER_KERNEL("relax.astype", k_astype);
PARTITA_REGISTER_KERNEL("relax.nn.dropout", k_dropout);
// Shape-only operators: the VM lowers them to views; these copies serve direct kernel calls.
PARTITA_REGISTER_KERNEL("relax.reshape", k_copy);
PARTITA_REGISTER_KERNEL("relax.flatten", k_copy);
PARTITA_REGISTER_KERNEL("relax.squeeze", k_copy);
PARTITA_REGISTER_KERNEL("relax.expand_dims", k_copy);

}  // namespace partita::runtime::kernels
