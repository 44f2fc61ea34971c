// PtrMap: a flat open-addressing map keyed by node address. The passes that walk large graphs
// (partitioning, structural hashing/equality) keep per-node side tables; std::unordered_map
// allocates one heap node per entry, which dominated their running time on 100k-binding graphs.
// No iteration and no erase: tables are filled, queried, and dropped.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace partita {

template <class V>
class PtrMap {
 public:
  PtrMap() = default;
  explicit PtrMap(size_t expected) { reserve(expected); }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  /// Makes room for `n` entries without rehashing.
  void reserve(size_t n) {
    size_t cap = 16;
    while (cap * 3 < n * 4 + 4) cap <<= 1;  // load factor at most 3/4
    if (cap > keys_.size()) rehash(cap);
  }

  V* find(const void* key) {
    if (size_ == 0) return nullptr;
    for (size_t i = slot(key);; i = (i + 1) & mask_) {
      if (keys_[i] == key) return &vals_[i];
      if (keys_[i] == nullptr) return nullptr;
    }
  }
  const V* find(const void* key) const { return const_cast<PtrMap*>(this)->find(key); }
  bool contains(const void* key) const { return find(key) != nullptr; }

  /// Inserts (key, value) unless `key` is present; returns the entry and whether it was new.
  std::pair<V*, bool> emplace(const void* key, V value) {
    if ((size_ + 1) * 4 > keys_.size() * 3) rehash(keys_.empty() ? 16 : keys_.size() * 2);
    size_t i = slot(key);
    for (; keys_[i] != nullptr; i = (i + 1) & mask_)
      if (keys_[i] == key) return {&vals_[i], false};
    keys_[i] = key;
    vals_[i] = std::move(value);
    ++size_;
    return {&vals_[i], true};
  }
  V& operator[](const void* key) { return *emplace(key, V()).first; }

 private:
  size_t slot(const void* key) const {
    uint64_t x = uint64_t(reinterpret_cast<uintptr_t>(key)) >> 3;
    x *= 0x9e3779b97f4a7c15ULL;
    return size_t(x >> 29) & mask_;
  }
  void rehash(size_t cap) {
    std::vector<const void*> old_keys(cap, nullptr);
    std::vector<V> old_vals(cap);
    old_keys.swap(keys_);
    old_vals.swap(vals_);
    mask_ = cap - 1;
    size_ = 0;
    for (size_t i = 0; i < old_keys.size(); ++i)
      if (old_keys[i] != nullptr) emplace(old_keys[i], std::move(old_vals[i]));
  }

  std::vector<const void*> keys_;
  std::vector<V> vals_;
  size_t size_ = 0;
  size_t mask_ = 0;
};

}  // namespace partita
