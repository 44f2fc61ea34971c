#include "run_cmd.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <random>

#include "npy.h"
#include "partita/runtime/half.h"
#include "partita/runtime/device_api.h"
#include "partita/runtime/vm.h"
#include "partita/support/error.h"

namespace partita::cli {
namespace {

using runtime::Executable;
using runtime::Opcode;

// One parameter of the function: its name and, when the artifact checks it, dtype and dims
// (-1 for a symbolic dimension).
struct ParamSpec {
  std::string name;
  DataType dtype;
  int ndim = -1;
  std::vector<int64_t> dims;
};

// The signature comes from the MatchTensor instructions the lowering emits for parameters
// (registers 0..n-1), so the artifact needs no extra metadata.
std::vector<ParamSpec> signature_of(const runtime::VMFunction& f) {
  std::vector<ParamSpec> params(f.param_names.size());
  for (size_t i = 0; i < params.size(); ++i) params[i].name = f.param_names[i];
  for (const auto& in : f.code) {
    if (in.op != Opcode::MatchTensor || in.args.empty()) continue;
    size_t r = size_t(in.args[0]);
    if (r >= params.size() || params[r].ndim >= 0) continue;
    params[r].dtype = in.match_dtype;
    params[r].ndim = in.match_ndim;
    for (const auto& d : in.match_dims) {
      int64_t v = -1;
      if (!d.bind && d.expect.size() == 2 && d.expect[0] == int64_t(runtime::DimOp::Const)) v = d.expect[1];
      params[r].dims.push_back(v);
    }
  }
  return params;
}

std::string shape_text(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + (dims[i] < 0 ? std::string("?") : std::to_string(dims[i]));
  return s + "]";
}

std::string spec_text(const ParamSpec& p) {
  return (p.dtype.is_void() ? std::string("any") : p.dtype.str()) + (p.ndim < 0 ? "[...]" : shape_text(p.dims));
}

double element(const Tensor& t, int64_t i) {
  DataType dt = t.dtype();
  if (dt == DataType::Float(32)) return t.data_as<float>()[i];
  if (dt == DataType::Float(64)) return t.data_as<double>()[i];
  if (dt == DataType::Int(64)) return double(t.data_as<int64_t>()[i]);
  if (dt == DataType::Int(32)) return t.data_as<int32_t>()[i];
  if (dt == DataType::Int(8)) return t.data_as<int8_t>()[i];
  if (dt.is_bool() || dt == DataType::UInt(8)) return t.data_as<uint8_t>()[i];
  if (dt == DataType::Float(16)) return runtime::half_bits_to_float(t.data_as<uint16_t>()[i]);
  if (dt == DataType::BFloat16()) return runtime::bfloat16_bits_to_float(t.data_as<uint16_t>()[i]);
  throw_error("TypeError", "cannot print tensors of dtype " + dt.str());
}

Tensor random_tensor(const ParamSpec& p, std::mt19937_64& rng) {
  if (p.ndim < 0 || p.dtype.is_void())
    throw_error("ValueError", "input '" + p.name + "' has no static signature; pass it with --input " + p.name + "=FILE.npy");
  std::vector<int64_t> shape;
  for (int64_t d : p.dims) shape.push_back(d < 0 ? 1 : d);  // symbolic dims: 1
  Tensor t = Tensor::empty(shape, p.dtype);
  std::uniform_real_distribution<double> real(-1.0, 1.0);
  std::uniform_int_distribution<int> small(0, 9);
  for (int64_t i = 0; i < t.numel(); ++i) {
    DataType dt = p.dtype;
    if (dt == DataType::Float(32)) t.data_as<float>()[i] = float(real(rng));
    else if (dt == DataType::Float(64)) t.data_as<double>()[i] = real(rng);
    else if (dt == DataType::Float(16)) t.data_as<uint16_t>()[i] = runtime::Half::from(real(rng)).bits;
    else if (dt == DataType::BFloat16()) t.data_as<uint16_t>()[i] = runtime::BFloat16::from(real(rng)).bits;
    else if (dt == DataType::Int(64)) t.data_as<int64_t>()[i] = small(rng);
    else if (dt == DataType::Int(32)) t.data_as<int32_t>()[i] = small(rng);
    else if (dt.is_bool()) t.data_as<uint8_t>()[i] = uint8_t(small(rng) & 1);
    else throw_error("TypeError", "cannot make random data of dtype " + dt.str() + " for input '" + p.name + "'");
  }
  return t;
}

void check_input(const ParamSpec& p, const Tensor& t, const std::string& file) {
  bool ok = p.dtype.is_void() || t.dtype() == p.dtype;
  if (p.ndim >= 0) {
    ok = ok && t.ndim() == p.ndim;
    for (size_t i = 0; ok && i < p.dims.size(); ++i) ok = p.dims[i] < 0 || p.dims[i] == t.shape()[i];
  }
  if (!ok)
    throw_error("ValueError", "shape mismatch for input '" + p.name + "' from '" + file + "': expected " + spec_text(p) +
                                  ", got " + t.dtype().str() + shape_text(t.shape()));
}

}  // namespace

int run_command(const RunOptions& o) {
  if (o.repeat < 1) throw_error("ValueError", "--repeat must be at least 1");
  const auto load_start = std::chrono::steady_clock::now();
  std::shared_ptr<Executable> exec = runtime::load_module(o.artifact);
  int fi = exec->function_index(o.function);
  if (fi < 0) throw_error("KeyError", "'" + o.artifact + "' has no function '" + o.function + "'");
  std::vector<ParamSpec> params = signature_of(exec->functions[size_t(fi)]);

  std::map<std::string, std::string> files;
  for (const std::string& spec : o.inputs) {
    size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
      throw_error("ValueError", "bad --input '" + spec + "': expected NAME=FILE.npy");
    std::string name = spec.substr(0, eq);
    if (std::none_of(params.begin(), params.end(), [&](const ParamSpec& p) { return p.name == name; })) {
      std::string list;
      for (const ParamSpec& p : params) list += (list.empty() ? "" : ", ") + p.name;
      throw_error("KeyError", "bad --input '" + spec + "': '" + o.function + "' has no input '" + name +
                                  "' (inputs: " + list + ")");
    }
    files[name] = spec.substr(eq + 1);
  }

  std::mt19937_64 rng(o.seed);
  std::vector<Tensor> inputs;
  for (const ParamSpec& p : params) {
    if (auto it = files.find(p.name); it != files.end()) {
      Tensor t = read_npy(it->second);
      check_input(p, t, it->second);
      inputs.push_back(t);
      std::printf("input  %-12s %s%s  from %s\n", p.name.c_str(), t.dtype().str().c_str(), shape_text(t.shape()).c_str(),
                  it->second.c_str());
    } else {
      inputs.push_back(random_tensor(p, rng));
      std::printf("input  %-12s %s%s  random (seed %llu)\n", p.name.c_str(), inputs.back().dtype().str().c_str(),
                  shape_text(inputs.back().shape()).c_str(), (unsigned long long)o.seed);
    }
  }

  // Inputs are placed on the VM's device once, as a user of a GPU model keeps them there; each
  // timed run ends when the device is done (its work may still be queued when invoke returns).
  Device device = Device::parse(o.device);
  runtime::VirtualMachine vm(exec, device);
  for (Tensor& t : inputs) t = t.to(device);
  std::vector<Tensor> outputs;
  for (int i = 0; i < std::max(o.warmup, 0); ++i) {
    outputs = vm.invoke(o.function, inputs);
    runtime::synchronize(device);
    // The first run pays what loading leaves to it (backend plans, autotuning, constant uploads).
    if (i == 0)
      std::printf("load and first run: %.1f ms\n",
                  std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - load_start).count());
  }
  std::vector<double> ms;
  for (int i = 0; i < o.repeat; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    outputs = vm.invoke(o.function, inputs);
    runtime::synchronize(device);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  for (Tensor& t : outputs) t = t.to(Device::cpu());

  if (!o.output_dir.empty()) std::filesystem::create_directories(o.output_dir);
  for (size_t k = 0; k < outputs.size(); ++k) {
    const Tensor& t = outputs[k];
    double sum = 0;
    for (int64_t i = 0; i < t.numel(); ++i) sum += element(t, i);
    std::printf("output %-12zu %s%s  checksum %.9g  values", k, t.dtype().str().c_str(), shape_text(t.shape()).c_str(), sum);
    for (int64_t i = 0; i < std::min<int64_t>(t.numel(), o.show_values); ++i) std::printf(" %.6g", element(t, i));
    if (t.numel() > o.show_values) std::printf(" ...");
    std::printf("\n");
    if (!o.output_dir.empty()) {
      std::string path = (std::filesystem::path(o.output_dir) / ("output_" + std::to_string(k) + ".npy")).string();
      write_npy(path, t);
    }
  }

  std::vector<double> sorted = ms;
  std::sort(sorted.begin(), sorted.end());
  double mean = 0;
  for (double v : ms) mean += v;
  mean /= double(ms.size());
  auto pct = [&](double q) { return sorted[std::min(sorted.size() - 1, size_t(std::ceil(q * double(sorted.size()))) - (q > 0 ? 1 : 0))]; };
  double median = sorted.size() % 2 ? sorted[sorted.size() / 2]
                                    : 0.5 * (sorted[sorted.size() / 2 - 1] + sorted[sorted.size() / 2]);
  std::printf("latency over %d runs (after %d warm-up): mean %.3f ms  median %.3f ms  p90 %.3f ms  min %.3f ms\n",
              o.repeat, std::max(o.warmup, 0), mean, median, pct(0.9), sorted.front());
  if (o.profile) std::printf("\nprofile of one more run:\n%s", vm.profile(o.function, inputs).table().c_str());
  return 0;
}

double median_latency_ms(const std::shared_ptr<Executable>& exec, const std::string& function, int repeat) {
  int fi = exec->function_index(function);
  if (fi < 0) throw_error("KeyError", "the module has no function '" + function + "'");
  std::mt19937_64 rng(0);
  std::vector<Tensor> inputs;
  for (const ParamSpec& p : signature_of(exec->functions[size_t(fi)])) inputs.push_back(random_tensor(p, rng));
  runtime::VirtualMachine vm(exec);
  vm.invoke(function, inputs);
  std::vector<double> ms;
  for (int i = 0; i < std::max(repeat, 1); ++i) {
    auto t0 = std::chrono::steady_clock::now();
    vm.invoke(function, inputs);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::nth_element(ms.begin(), ms.begin() + ms.size() / 2, ms.end());
  return ms[ms.size() / 2];
}

}  // namespace partita::cli
