// Structural hashing, consistent with structural_equal: it walks the same fields in the same
// order, and hashes a variable by the order of its first encounter (plus, at that first
// encounter, its declared fields), so it does not depend on names or object identity.
#include <cstring>

#include "field_traits.h"
#include "partita/ir/dispatch.h"
#include "partita/ir/ptr_map.h"
#include "partita/ir/structural_equal.h"

namespace partita {
namespace {

using namespace detail;

inline uint64_t mix(uint64_t h, uint64_t v) {
  // splitmix64 finaliser over the combination: cheap, and good avalanche.
  uint64_t x = h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2));
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

class SHash {
 public:
  uint64_t node(const Object* x) {
    if (x == nullptr) return 0x6e756c6cULL;
    uint64_t h = mix(0x5a17a, uint64_t(x->kind()) + 1);
    NodeKind k = x->kind();
    if (k == NodeKind::Var || k == NodeKind::DataflowVar || k == NodeKind::PrimVar) {
      auto [index, inserted] = var_index_.emplace(x, var_index_.size());
      h = mix(h, *index);
      if (!inserted) return h;
    }
    dispatch_node(*x, [&](const auto& c) {
      for_each_field(c, [&](const char*, const auto& v) { h = mix(h, value(v)); });
    });
    return h;
  }

  template <class T>
  uint64_t value(const T& v) {
    if constexpr (IsRef<T>::value) {
      return node(v.get());
    } else if constexpr (IsVector<T>::value) {
      uint64_t h = mix(0x7ec, v.size());
      for (const auto& e : v) h = mix(h, value(e));
      return h;
    } else if constexpr (IsOptional<T>::value) {
      return v.has_value() ? mix(1, value(*v)) : 0x9017;
    } else if constexpr (IsMap<T>::value) {
      uint64_t h = mix(0x3a9, v.size());
      for (const auto& [key, val] : v) h = mix(mix(h, value(key)), value(val));
      return h;
    } else if constexpr (IsPair<T>::value) {
      return mix(value(v.first), value(v.second));
    } else if constexpr (IsVariant<T>::value) {
      return std::visit([&](const auto& x) { return mix(v.index(), value(x)); }, v);
    } else if constexpr (std::is_same_v<T, std::monostate>) {
      return 0x403e;
    } else if constexpr (std::is_same_v<T, Tensor>) {
      return v.defined() ? v.content_hash() : 0x7e5;
    } else if constexpr (std::is_same_v<T, std::string>) {
      return std::hash<std::string>()(v);
    } else if constexpr (std::is_same_v<T, DataType>) {
      return std::hash<DataType>()(v);
    } else if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(v)) return 0x7ff8;
      double d = v == 0 ? 0.0 : double(v);  // -0.0 == 0.0
      uint64_t bits;
      std::memcpy(&bits, &d, sizeof bits);
      return bits;
    } else if constexpr (std::is_enum_v<T> || std::is_integral_v<T>) {
      return uint64_t(int64_t(v));
    } else {
      static_assert(sizeof(T) == 0, "structural_hash: unsupported field type");
    }
  }

 private:
  PtrMap<uint64_t> var_index_;
};

}  // namespace

size_t structural_hash(const ObjectRef& x) {
  SHash h;
  return size_t(h.node(x.get()));
}

}  // namespace partita
