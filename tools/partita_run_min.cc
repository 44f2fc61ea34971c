// A minimal deployment program linked only against libpartita_runtime: loads an exported
// artifact and runs one function on deterministic inputs, printing the outputs.
//
//   partita_run_min <artifact> <function> <dtype:d0xd1x...> ...
//   e.g. partita_run_min model.ptx main float32:2x3 float32:2x3
// Input element i of input k holds ((i * 7 + k * 3) % 11 - 5) / 4.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "partita/runtime/omp_wait_policy.h"
#include "partita/runtime/vm.h"
#include "partita/support/error.h"

using namespace partita;
using namespace partita::runtime;

namespace {

Tensor make_input(const std::string& spec, int k) {
  auto colon = spec.find(':');
  if (colon == std::string::npos) throw_error("ValueError", "input spec '" + spec + "' must be dtype:shape");
  DataType dt = DataType::parse(spec.substr(0, colon));
  std::vector<int64_t> shape;
  std::string dims = spec.substr(colon + 1);
  size_t pos = 0;
  while (pos < dims.size()) {
    size_t x = dims.find('x', pos);
    std::string d = dims.substr(pos, x == std::string::npos ? std::string::npos : x - pos);
    if (!d.empty()) shape.push_back(std::stoll(d));
    if (x == std::string::npos) break;
    pos = x + 1;
  }
  Tensor t = Tensor::empty(shape, dt);
  for (int64_t i = 0; i < t.numel(); ++i) {
    double v = double((i * 7 + k * 3) % 11 - 5) / 4.0;
    if (dt == DataType::Float(32)) t.data_as<float>()[i] = float(v);
    else if (dt == DataType::Float(64)) t.data_as<double>()[i] = v;
    else if (dt == DataType::Int(32)) t.data_as<int32_t>()[i] = int32_t(v * 4);
    else if (dt == DataType::Int(64)) t.data_as<int64_t>()[i] = int64_t(v * 4);
    else if (dt.is_bool()) t.data_as<uint8_t>()[i] = v > 0;
    else throw_error("TypeError", "unsupported input dtype " + dt.str());
  }
  return t;
}

void print_tensor(const Tensor& t) {
  std::printf("%s[", t.dtype().str().c_str());
  for (int i = 0; i < t.ndim(); ++i) std::printf(i ? ", %lld" : "%lld", (long long)t.shape()[size_t(i)]);
  std::printf("]:");
  for (int64_t i = 0; i < t.numel(); ++i) {
    DataType dt = t.dtype();
    if (dt == DataType::Float(32)) std::printf(" %.6g", double(t.data_as<float>()[i]));
    else if (dt == DataType::Float(64)) std::printf(" %.9g", t.data_as<double>()[i]);
    else if (dt == DataType::Int(32)) std::printf(" %d", t.data_as<int32_t>()[i]);
    else if (dt == DataType::Int(64)) std::printf(" %lld", (long long)t.data_as<int64_t>()[i]);
    else if (dt.is_bool()) std::printf(" %d", int(t.data_as<uint8_t>()[i]));
  }
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  restart_with_passive_omp_wait(argv);
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s <artifact> <function> <dtype:shape>...\n", argv[0]);
    return 2;
  }
  try {
    auto ex = load_module(argv[1]);
    VirtualMachine vm(ex);
    std::vector<Tensor> inputs;
    for (int k = 3; k < argc; ++k) inputs.push_back(make_input(argv[k], k - 3));
    for (const Tensor& t : vm.invoke(argv[2], inputs)) print_tensor(t);
  } catch (const Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
