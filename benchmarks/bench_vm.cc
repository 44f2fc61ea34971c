// Host-VM overhead per operator call (a chain of tiny adds) and an MLP (batch 64, 3 x 1024
// hidden, relu) on the host kernels against the same MLP offloaded to `ccompiler`, measured in
// the same run. Plain main; prints times and the ratio.
//   ./bench_vm [repeats]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

#include "partita/codegen/build.h"
#include "partita/codegen/vm_lowering.h"
#include "partita/transform/pattern_registry.h"
#include "partita/runtime/vm.h"
#include "partita/script/parser.h"

using namespace partita;
using namespace partita::runtime;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

Tensor random_tensor(std::vector<int64_t> shape, uint32_t seed) {
  Tensor t = Tensor::empty(std::move(shape), DataType::Float(32));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-0.05f, 0.05f);
  for (int64_t i = 0; i < t.numel(); ++i) t.data_as<float>()[i] = d(rng);
  return t;
}

std::string chain_module(int n) {
  std::string text = "@I.ir_module\nclass Module:\n    @R.function\n    def main(x: R.Tensor((1,), dtype=\"float32\")) -> R.Tensor((1,), dtype=\"float32\"):\n        with R.dataflow():\n            v0: R.Tensor((1,), dtype=\"float32\") = R.add(x, x)\n";
  for (int i = 1; i < n; ++i)
    text += "            v" + std::to_string(i) + ": R.Tensor((1,), dtype=\"float32\") = R.add(v" + std::to_string(i - 1) + ", x)\n";
  text += "            R.output(v" + std::to_string(n - 1) + ")\n        return v" + std::to_string(n - 1) + "\n";
  return text;
}

const char* kMlp = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((64, 1024), dtype="float32"), w1: R.Tensor((1024, 1024), dtype="float32"), w2: R.Tensor((1024, 1024), dtype="float32"), w3: R.Tensor((1024, 1024), dtype="float32")) -> R.Tensor((64, 1024), dtype="float32"):
        with R.dataflow():
            a1: R.Tensor((64, 1024), dtype="float32") = R.matmul(x, w1, out_dtype="void")
            r1: R.Tensor((64, 1024), dtype="float32") = R.nn.relu(a1)
            a2: R.Tensor((64, 1024), dtype="float32") = R.matmul(r1, w2, out_dtype="void")
            r2: R.Tensor((64, 1024), dtype="float32") = R.nn.relu(a2)
            a3: R.Tensor((64, 1024), dtype="float32") = R.matmul(r2, w3, out_dtype="void")
            r3: R.Tensor((64, 1024), dtype="float32") = R.nn.relu(a3)
            R.output(r3)
        return r3
)";

}  // namespace

int main(int argc, char** argv) {
  int repeats = argc > 1 ? std::atoi(argv[1]) : 20;
  {
    const int n = 1000;
    VirtualMachine vm(codegen::build_vm_executable(script::parse_module(chain_module(n))));
    std::vector<Tensor> in = {random_tensor({1}, 1)};
    vm.invoke("main", in);  // warm the buffer pool
    auto t0 = std::chrono::steady_clock::now();
    int calls = 200;
    for (int r = 0; r < calls; ++r) vm.invoke("main", in);
    double s = seconds_since(t0);
    std::printf("vm_overhead: chain of %d tiny adds: %.1f ns per operator call (%.3f ms per invoke)\n", n,
                s / calls / n * 1e9, s / calls * 1e3);
  }
  {
    IRModule mlp = script::parse_module(kMlp);
    std::vector<Tensor> in = {random_tensor({64, 1024}, 1), random_tensor({1024, 1024}, 2),
                              random_tensor({1024, 1024}, 3), random_tensor({1024, 1024}, 4)};
    const double flops = 3.0 * 2 * 64 * 1024 * 1024;
    auto time_mlp = [&](const char* label, std::shared_ptr<Executable> exec) {
      VirtualMachine vm(std::move(exec));
      vm.invoke("main", in);
      auto t0 = std::chrono::steady_clock::now();
      for (int r = 0; r < repeats; ++r) vm.invoke("main", in);
      double s = seconds_since(t0) / repeats;
      std::printf("%s: batch 64, 3 x 1024 hidden, relu: %.2f ms per invoke (%.2f GFLOP/s)\n", label, s * 1e3,
                  flops / s / 1e9);
      return s;
    };
    double host = time_mlp("mlp_host", codegen::build_vm_executable(mlp));
    IRModule offloaded = transform::partition_for("ccompiler", mlp);
    double cc = time_mlp("mlp_ccompiler",
                         codegen::build(offloaded, codegen::BuildOptions({codegen::Target("ccompiler", {{"cflags", {"-O3", "-march=native"}}})})));
    std::printf("mlp ratio ccompiler / host: %.2f\n", cc / host);
  }
  return 0;
}
