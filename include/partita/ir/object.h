// The node base of the IR: immutable, intrusively reference-counted objects with a kind tag.
//
// Every IR node type is listed once in PARTITA_FOR_EACH_NODE; that list gives the NodeKind enum
// and the kind-dispatch used by generic algorithms (structural equality, hashing, bindings).
// Nodes declare their fields once (see fields.h); nothing else enumerates them by hand.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <type_traits>
#include <utility>

namespace partita {

// X(Name) for each concrete node type `NameNode`, grouped by family.
#define PARTITA_FOR_EACH_PRIM_EXPR(X) X(IntImm) X(FloatImm) X(PrimVar) X(PrimBinary)
#define PARTITA_FOR_EACH_STRUCT_INFO(X)                                                   \
  X(ObjectStructInfo) X(PrimStructInfo) X(ShapeStructInfo) X(TensorStructInfo)             \
  X(TupleStructInfo) X(FuncStructInfo)
#define PARTITA_FOR_EACH_EXPR(X)                                                          \
  X(Var) X(DataflowVar) X(Constant) X(PrimValue) X(StringImm) X(DataTypeImm) X(ShapeExpr) \
  X(Tuple) X(TupleGetItem) X(Call) X(Function) X(ExternFunc) X(GlobalVar) X(Op) X(SeqExpr) X(If)
#define PARTITA_FOR_EACH_OTHER_NODE(X) X(VarBinding) X(MatchCast) X(BindingBlock) X(Attrs) X(IRModule) \
  X(ExternalModules) X(TargetDesc) X(VDevice)
#define PARTITA_FOR_EACH_NODE(X)                                                          \
  PARTITA_FOR_EACH_PRIM_EXPR(X) PARTITA_FOR_EACH_STRUCT_INFO(X) PARTITA_FOR_EACH_EXPR(X)   \
  PARTITA_FOR_EACH_OTHER_NODE(X)

enum class NodeKind : uint8_t {
#define PARTITA_X(name) name,
  PARTITA_FOR_EACH_NODE(PARTITA_X)
#undef PARTITA_X
};

const char* node_kind_name(NodeKind kind);

class Object {
 public:
  explicit Object(NodeKind kind) : kind_(kind) {}
  Object(const Object& other) : kind_(other.kind_) {}  // a copy starts with no references
  Object& operator=(const Object&) = delete;
  virtual ~Object() = default;

  NodeKind kind() const { return kind_; }

  void inc_ref() const { refs_.fetch_add(1, std::memory_order_relaxed); }
  void dec_ref() const {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }
  uint32_t use_count() const { return refs_.load(std::memory_order_relaxed); }

 private:
  mutable std::atomic<uint32_t> refs_{0};
  NodeKind kind_;
};

/// Concrete node types say `PARTITA_NODE(Call)`: their kind and their `classof` test.
#define PARTITA_NODE(name)                                                       \
  static constexpr ::partita::NodeKind kKind = ::partita::NodeKind::name;        \
  static bool classof(::partita::NodeKind k) { return k == kKind; }

/// A strong reference to a node of type T (or a subclass). Null when default-constructed.
template <class T>
class Ref {
 public:
  using Node = T;
  Ref() = default;
  Ref(std::nullptr_t) {}
  explicit Ref(const T* p) : p_(p) { if (p_) p_->inc_ref(); }
  Ref(const Ref& o) : p_(o.p_) { if (p_) p_->inc_ref(); }
  Ref(Ref&& o) noexcept : p_(o.p_) { o.p_ = nullptr; }
  template <class U, class = std::enable_if_t<std::is_base_of_v<T, U>>>
  Ref(const Ref<U>& o) : p_(o.get()) { if (p_) p_->inc_ref(); }
  template <class U, class = std::enable_if_t<std::is_base_of_v<T, U>>>
  Ref(Ref<U>&& o) noexcept : p_(o.release()) {}
  /// Aliasing form used by binding layers (pybind11 holders): a reference to `p`, which must be
  /// (a base of) the node `o` refers to. Intrusive counts make `o` itself irrelevant.
  template <class U>
  Ref(const Ref<U>& /*o*/, const T* p) : Ref(p) {}
  ~Ref() { if (p_) p_->dec_ref(); }
  Ref& operator=(Ref o) noexcept { std::swap(p_, o.p_); return *this; }

  const T* get() const { return p_; }
  const T* operator->() const { return p_; }
  const T& operator*() const { return *p_; }
  explicit operator bool() const { return p_ != nullptr; }
  bool defined() const { return p_ != nullptr; }
  bool same_as(const Ref<Object>& o) const { return static_cast<const Object*>(p_) == o.get(); }

  /// The node as a U, or nullptr when it is not one.
  template <class U>
  const U* as() const {
    return p_ && U::classof(p_->kind()) ? static_cast<const U*>(p_) : nullptr;
  }
  /// The reference as a Ref<U>, or a null Ref when the node is not a U.
  template <class U>
  Ref<U> as_ref() const { return Ref<U>(as<U>()); }

  const T* release() { const T* p = p_; p_ = nullptr; return p; }

  template <class U>
  friend bool operator==(const Ref& a, const Ref<U>& b) { return static_cast<const Object*>(a.get()) == static_cast<const Object*>(b.get()); }
  friend bool operator==(const Ref& a, std::nullptr_t) { return a.p_ == nullptr; }

 private:
  const T* p_ = nullptr;
};

using ObjectRef = Ref<Object>;

/// Allocates a node and returns the first reference to it.
template <class T, class... Args>
Ref<T> make(Args&&... args) {
  return Ref<T>(new T(std::forward<Args>(args)...));
}

/// Copy-on-write helper for passes: a fresh mutable copy of a node.
template <class T>
T* copy_node(const Ref<T>& ref) { return new T(*ref.get()); }

/// Hash and equality by identity, for use as keys in unordered containers.
struct RefHash {
  template <class T>
  size_t operator()(const Ref<T>& r) const { return std::hash<const void*>()(static_cast<const void*>(r.get())); }
};
struct RefEq {
  template <class T, class U>
  bool operator()(const Ref<T>& a, const Ref<U>& b) const { return a == b; }
};

}  // namespace partita
