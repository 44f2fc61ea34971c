// The virtual machine: runs an Executable's bytecode over the built-in kernels and the
// external modules' functions. Buffers of dead intermediates go to a size-keyed pool and are
// reused by later allocations (in the same call and in later calls); device memory is pooled
// by the device's caching allocator instead.
//
// Devices. A VM is made for one device, the user's (CPU by default). Every value has a device:
// - arguments given elsewhere than where the function expects them (VMFunction::param_devices)
//   are copied there on entry; without param_devices each stays where it is until a reader
//   needs it elsewhere, and is then moved once (its register holds the copy);
// - host kernels read and write host memory: a device tensor reaching one is copied to the
//   host first (counted in MemoryStats::device_copies); there are no device kernels for the
//   operators yet, so a VM on a CUDA device with host kernels runs them on the host and copies
//   at the edges, rather than refusing (see docs/architecture.md, "Runtime: devices");
// - external modules get their inputs on, and write outputs to, the VM's device of their kind
//   (RuntimeModule::device_kind); constants they need on a device are uploaded once per VM;
// - device-copy kernels (R.to_vdevice) write to the device their output's TensorSpec names;
// - results come back on the user's device (a CPU VM returns host tensors).
//
// CUDA Graphs. On a device with graphs (CUDA), a function whose whole run is device work —
// only external functions of modules that allow capture (RuntimeModule::supports_graph_capture)
// and device-copy kernels, no host kernels or control flow — is captured as one graph on its
// second call with a given set of input shapes (the first call is the warm-up: constants
// uploaded, libraries initialised) and replayed from then on: inputs are copied into the
// graph's own buffers, the graph is launched, the results are copied out (so results of
// earlier calls stay valid). A capture that fails falls back to running the function, which is
// then never captured again. On by default; set_graph_capture(false) turns it off.
//
// Inputs are checked at entry and against the signature (src/runtime/vm_arguments.h): a wrong
// count, dtype, rank, dimension or device is an Error naming the function and the parameter.
//
// Threads. Calls of one VM from several threads are serialized (a mutex per VM): safe, with
// the results of one thread and the throughput of one. For parallel calls make one VM per
// thread over the same Executable (VMs share its constants and external modules; each has its
// own pool). memory_stats() and graph_stats() are read while no call runs.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "partita/runtime/device_api.h"
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
  int64_t device_copies = 0;     // tensors copied between devices by the VM
  int64_t device_copy_bytes = 0; // their total size
  int64_t planned = 0;           // device tensors placed in a run's arena (one allocation)
};

struct GraphStats {
  int64_t captures = 0;   // graphs captured
  int64_t launches = 0;   // runs served by launching a graph (the capturing call included)
  int64_t fallbacks = 0;  // captures that failed (the function then runs normally)
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
  /// `device` is the user's device. Error("RuntimeError") when it is missing (no plug-in or
  /// no GPU), Error("ValueError") when the executable places tensors on a kind of device the
  /// VM has none of, or asks a host kernel to write device memory.
  explicit VirtualMachine(std::shared_ptr<Executable> exec, Device device = Device::cpu());
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
  Device device() const { return device_; }
  /// Runs later calls on `stream` of the VM's device: it is the current stream during a call,
  /// and on return the caller's current stream is made to wait for it. Without it, calls run
  /// on the calling thread's current stream.
  void set_stream(StreamHandle stream);
  /// Captures and replays CUDA Graphs where valid (see above); on by default. Turning it off
  /// frees the graphs captured so far.
  void set_graph_capture(bool enabled);
  const GraphStats& graph_stats() const;

  struct Impl;

 private:
  std::shared_ptr<Executable> exec_;
  Device device_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace partita::runtime
