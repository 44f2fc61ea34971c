// The host virtual machine: runs an Executable's bytecode over the built-in kernels and the
// external modules' functions. Buffers of dead intermediates go to a size-keyed pool and are
// reused by later allocations (in the same call and in later calls).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "partita/runtime/executable.h"

namespace partita::runtime {

/// A VM value: a tensor, or a tuple of values.
struct Value {
  Tensor tensor;
  std::shared_ptr<const std::vector<Value>> tuple;
  Value() = default;
  Value(Tensor t) : tensor(std::move(t)) {}  // NOLINT: implicit on purpose
  static Value make_tuple(std::vector<Value> fields);
  bool is_tuple() const { return tuple != nullptr; }
};

struct MemoryStats {
  int64_t allocations = 0;       // fresh buffers allocated
  int64_t bytes_allocated = 0;   // their total size
  int64_t reuses = 0;            // allocations served from the pool
  int64_t pool_bytes = 0;        // bytes now idle in the pool
};

/// Time spent in one kernel or external function during VirtualMachine::profile.
struct ProfileEntry {
  std::string name;       // operator ("relax.add") or external symbol
  bool external = false;  // an external module's function (a backend partition)
  int64_t calls = 0;
  double total_us = 0;
};

struct ProfileReport {
  std::vector<ProfileEntry> entries;  // most expensive first
  double wall_us = 0;                 // the whole call, VM overhead included
  /// A table: one row per entry with calls, time and share of the wall time.
  std::string table() const;
};

class VirtualMachine {
 public:
  /// Resolves kernels and external symbols; Error("KeyError") naming any that are missing.
  explicit VirtualMachine(std::shared_ptr<Executable> exec);
  ~VirtualMachine();

  /// Runs function `name`; a tuple result is flattened into the returned tensors.
  std::vector<Tensor> invoke(const std::string& name, const std::vector<Tensor>& inputs);
  Value invoke_value(const std::string& name, const std::vector<Value>& inputs);

  /// Runs function `name` once, timing every kernel and external call (like TVM's
  /// `vm.profile`); the outputs are discarded.
  ProfileReport profile(const std::string& name, const std::vector<Tensor>& inputs);
  const MemoryStats& memory_stats() const;
  /// Drops idle pooled buffers.
  void release_pool();
  const Executable& executable() const { return *exec_; }

  struct Impl;

 private:
  std::shared_ptr<Executable> exec_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace partita::runtime
