#include "partita/runtime/kernel.h"

#include <mutex>

#include "partita/support/error.h"

namespace partita::runtime {

namespace {
struct KernelEntry {
  KernelFn fn;
  KernelPlacement placement;
};
std::map<std::string, KernelEntry>& kernels() {
  static std::map<std::string, KernelEntry> m;
  return m;
}
std::mutex& kernels_mutex() {
  static std::mutex m;
  return m;
}
}  // namespace

bool KernelAttrs::has(const std::string& name) const {
  auto it = values.find(name);
  return it != values.end() && !std::holds_alternative<std::monostate>(it->second);
}

int64_t KernelAttrs::get_int(const std::string& name, int64_t dflt) const {
  auto it = values.find(name);
  if (it == values.end()) return dflt;
  if (auto* p = std::get_if<int64_t>(&it->second)) return *p;
  if (auto* p = std::get_if<bool>(&it->second)) return *p;
  if (auto* p = std::get_if<std::vector<int64_t>>(&it->second); p && p->size() == 1) return (*p)[0];
  return dflt;
}

double KernelAttrs::get_float(const std::string& name, double dflt) const {
  auto it = values.find(name);
  if (it == values.end()) return dflt;
  if (auto* p = std::get_if<double>(&it->second)) return *p;
  if (auto* p = std::get_if<int64_t>(&it->second)) return double(*p);
  return dflt;
}

bool KernelAttrs::get_bool(const std::string& name, bool dflt) const {
  auto it = values.find(name);
  if (it == values.end()) return dflt;
  if (auto* p = std::get_if<bool>(&it->second)) return *p;
  if (auto* p = std::get_if<int64_t>(&it->second)) return *p != 0;
  return dflt;
}

std::string KernelAttrs::get_string(const std::string& name, const std::string& dflt) const {
  auto it = values.find(name);
  if (it == values.end()) return dflt;
  if (auto* p = std::get_if<std::string>(&it->second)) return *p;
  return dflt;
}

DataType KernelAttrs::get_dtype(const std::string& name) const {
  auto it = values.find(name);
  if (it == values.end()) return {};
  if (auto* p = std::get_if<DataType>(&it->second)) return *p;
  return {};
}

std::vector<int64_t> KernelAttrs::get_ints(const std::string& name, std::vector<int64_t> dflt) const {
  auto it = values.find(name);
  if (it == values.end()) return dflt;
  if (auto* p = std::get_if<std::vector<int64_t>>(&it->second)) return *p;
  if (auto* p = std::get_if<int64_t>(&it->second)) return {*p};
  return dflt;
}

void register_kernel(const std::string& op_name, KernelFn fn, KernelPlacement placement) {
  std::lock_guard<std::mutex> lock(kernels_mutex());
  kernels()[op_name] = KernelEntry{fn, placement};
}

KernelFn find_kernel(const std::string& op_name) {
  std::lock_guard<std::mutex> lock(kernels_mutex());
  auto it = kernels().find(op_name);
  return it == kernels().end() ? nullptr : it->second.fn;
}

KernelPlacement kernel_placement(const std::string& op_name) {
  std::lock_guard<std::mutex> lock(kernels_mutex());
  auto it = kernels().find(op_name);
  return it == kernels().end() ? KernelPlacement::kHost : it->second.placement;
}

std::vector<std::string> list_kernels() {
  std::lock_guard<std::mutex> lock(kernels_mutex());
  std::vector<std::string> out;
  for (auto& [k, v] : kernels()) out.push_back(k);
  return out;
}

void run_kernel(const std::string& op_name, std::span<const Tensor> inputs, const KernelAttrs& attrs,
                std::span<Tensor> outputs) {
  KernelFn fn = find_kernel(op_name);
  if (!fn) throw_error("KeyError", "no host kernel for operator '" + op_name + "'");
  fn(inputs, attrs, outputs);
}

}  // namespace partita::runtime
