// PtrMap: a flat open-addressing map keyed by node address. The passes that walk large graphs
// (partitioning, structural hashing/equality) keep per-node side tables; std::unordered_map
// allocates one heap node per entry, which dominated their running time on 100k-binding graphs.
// No iteration and no erase: tables are filled, queried, and dropped (or cleared).
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
    if (n <= kLinear) {
      if (mask_ == 0) slots_.reserve(n);  // small maps: no regrowth of the scan list either
      return;
    }
    size_t cap = 16;
    while (cap * 3 < n * 4 + 4) cap <<= 1;  // load factor at most 3/4
    if (cap > capacity()) rehash(cap);
  }

  V* find(const void* key) {
    if (mask_ == 0) {  // few entries: a linear scan beats hashing and allocates less
      for (auto& s : slots_)
        if (s.first == key) return &s.second;
      return nullptr;
    }
    for (size_t i = slot(key);; i = (i + 1) & mask_) {
      if (slots_[i].first == key) return &slots_[i].second;
      if (slots_[i].first == nullptr) return nullptr;
    }
  }
  const V* find(const void* key) const { return const_cast<PtrMap*>(this)->find(key); }
  bool contains(const void* key) const { return find(key) != nullptr; }

  /// Inserts (key, value) unless `key` is present; returns the entry and whether it was new.
  std::pair<V*, bool> emplace(const void* key, V value) {
    if (mask_ == 0) {
      if (V* found = find(key)) return {found, false};
      if (size_ < kLinear) {
        slots_.emplace_back(key, std::move(value));
        ++size_;
        return {&slots_.back().second, true};
      }
      rehash(32);
    } else if ((size_ + 1) * 4 > slots_.size() * 3) {
      rehash(slots_.size() * 2);
    }
    size_t i = slot(key);
    for (; slots_[i].first != nullptr; i = (i + 1) & mask_)
      if (slots_[i].first == key) return {&slots_[i].second, false};
    slots_[i].first = key;
    slots_[i].second = std::move(value);
    ++size_;
    return {&slots_[i].second, true};
  }
  V& operator[](const void* key) { return *emplace(key, V()).first; }
  /// Empty again; a small table keeps its storage (for one refilled many times).
  void clear() {
    if (mask_ != 0) *this = PtrMap();
    slots_.clear();
    size_ = 0;
  }

 private:
  static constexpr size_t kLinear = 8;

  size_t capacity() const { return mask_ == 0 ? kLinear : slots_.size(); }
  size_t slot(const void* key) const {
    uint64_t x = uint64_t(reinterpret_cast<uintptr_t>(key)) >> 3;
    x *= 0x9e3779b97f4a7c15ULL;
    return size_t(x >> 29) & mask_;
  }
  void rehash(size_t cap) {
    std::vector<std::pair<const void*, V>> old(cap);
    old.swap(slots_);
    mask_ = cap - 1;
    size_ = 0;
    for (auto& s : old)
      if (s.first != nullptr) emplace(s.first, std::move(s.second));
  }

  // Linear mode (mask_ == 0): the entries in insertion order. Hashed mode: open addressing
  // with linear probing over a power-of-two table.
  std::vector<std::pair<const void*, V>> slots_;
  size_t size_ = 0;
  size_t mask_ = 0;
};

}  // namespace partita
