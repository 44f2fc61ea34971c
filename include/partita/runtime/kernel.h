// Host kernels: one registered function per operator name ("relax.add"), called by the VM with
// the call's tensor arguments, the attributes the lowering extracted (the runtime cannot see IR
// attributes, so they arrive as a small name->value map) and outputs the VM has allocated with
// the result shapes and dtypes. Kernels are templated on dtype with contiguous loops.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "partita/runtime/tensor.h"

namespace partita::runtime {

/// None, bool, integer, float, string, dtype or a list of integers (mirrors the IR's AttrValue).
using KernelAttrValue =
    std::variant<std::monostate, bool, int64_t, double, std::string, DataType, std::vector<int64_t>>;

class KernelAttrs {
 public:
  std::map<std::string, KernelAttrValue> values;

  bool has(const std::string& name) const;  // present and not None
  int64_t get_int(const std::string& name, int64_t dflt) const;
  double get_float(const std::string& name, double dflt) const;
  bool get_bool(const std::string& name, bool dflt) const;
  std::string get_string(const std::string& name, const std::string& dflt) const;
  DataType get_dtype(const std::string& name) const;  // void when absent
  /// A list; a single int is returned as a one-element list; None/absent gives `dflt`.
  std::vector<int64_t> get_ints(const std::string& name, std::vector<int64_t> dflt = {}) const;
};

/// Inputs are the call's tensors (tuple arguments flattened); outputs are preallocated.
using KernelFn = void (*)(std::span<const Tensor> inputs, const KernelAttrs& attrs, std::span<Tensor> outputs);

/// What memory a kernel reads and writes. Host kernels (almost all) read host-accessible
/// inputs and write host-accessible outputs; the VM moves device tensors to the host before
/// calling one. A device-copy kernel (the copy behind R.to_vdevice) takes its input wherever
/// it is and writes an output the VM allocated on another device, through the device API.
enum class KernelPlacement { kHost, kAnyDevice };

void register_kernel(const std::string& op_name, KernelFn fn, KernelPlacement placement = KernelPlacement::kHost);
/// The kernel of `op_name`, or nullptr.
KernelFn find_kernel(const std::string& op_name);
/// How the kernel of `op_name` was registered (kHost when there is none).
KernelPlacement kernel_placement(const std::string& op_name);
std::vector<std::string> list_kernels();

/// Calls the kernel of `op_name`; Error("KeyError") when there is none.
void run_kernel(const std::string& op_name, std::span<const Tensor> inputs, const KernelAttrs& attrs,
                std::span<Tensor> outputs);

namespace detail {
struct KernelRegistrar {
  KernelRegistrar(const char* name, KernelFn fn, KernelPlacement placement = KernelPlacement::kHost) {
    register_kernel(name, fn, placement);
  }
};
}  // namespace detail

}  // namespace partita::runtime

#define PARTITA_REGISTER_KERNEL(op_name, fn)                                 \
  static ::partita::runtime::detail::KernelRegistrar PARTITA_KCONCAT_(       \
      partita_kernel_, __COUNTER__)(op_name, fn)
/// A kernel that copies between devices (KernelPlacement::kAnyDevice).
#define PARTITA_REGISTER_DEVICE_KERNEL(op_name, fn)                          \
  static ::partita::runtime::detail::KernelRegistrar PARTITA_KCONCAT_(       \
      partita_kernel_, __COUNTER__)(op_name, fn, ::partita::runtime::KernelPlacement::kAnyDevice)
#define PARTITA_KCONCAT_INNER_(a, b) a##b
#define PARTITA_KCONCAT_(a, b) PARTITA_KCONCAT_INNER_(a, b)
