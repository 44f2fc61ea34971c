// The "cuda" runtime module on the GPU with CUDA tensors the test allocates (used in
// place, no staging), named constants uploaded once, empty tensors, 64-bit indexing, and an
// exported artifact loaded back.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include "cudagen_util.h"
#include "partita/codegen/codegen.h"
#include "partita/ir/block_builder.h"
#include "partita/op/registry.h"

namespace partita::cudagen_test {
namespace {

Tensor to_device(const Tensor& host) { return host.to(Device::cuda(0)); }

Tensor empty_device(std::vector<int64_t> shape, DataType dtype) {
  return Tensor::empty(std::move(shape), dtype, Device::cuda(0));
}

Tensor to_host(const Tensor& dev) { return dev.to(Device::cpu()); }

runtime::ModulePtr only_module(const IRModule& mod) {
  auto mods = codegen::external_mods_of(mod);
  EXPECT_EQ(mods.size(), 1u);
  return mods.empty() ? nullptr : mods[0];
}

const char* kMlp = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 40), dtype="float16"), w: R.Tensor((40, 24), dtype="float16"), b: R.Tensor((24,), dtype="float16")):
        with R.dataflow():
            lv = R.matmul(x, w)
            lv1 = R.add(lv, b)
            gv = R.nn.gelu(lv1)
            R.output(gv)
        return gv
)";

TEST(CudaModuleOnGpu, DeviceTensorsAreUsedInPlace) {
  IRModule mod = run_cuda_codegen(backend::cuda::partition_for_cuda(script::parse_module(kMlp)));
  runtime::ModulePtr m = only_module(mod);
  PARTITA_REQUIRE_CUDA_DEVICE();
  ASSERT_EQ(m->function_names().size(), 1u);
  runtime::PackedFunc f = m->get_function(m->function_names()[0]);
  DataType f16 = DataType::Float(16);
  Tensor x = random_input({13, 40}, f16, 1), w = random_input({40, 24}, f16, 2), b = random_input({24}, f16, 3);
  std::vector<Tensor> in = {to_device(x), to_device(w), to_device(b)};
  std::vector<Tensor> out = {empty_device({13, 24}, f16)};
  f(in, out);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  // The same call with host tensors (staged) and the float32 host reference agree.
  std::vector<Tensor> host_out = {Tensor::empty({13, 24}, f16)};
  f(std::vector<Tensor>{x, w, b}, host_out);
  EXPECT_TRUE(close(to_host(out[0]), host_out[0], 0, 0));
  std::string ref_text = replace_all(kMlp, "float16", "float32");
  std::vector<Tensor> want = run_host(script::parse_module(ref_text), {converted(x, DataType::Float(32)),
                                                                       converted(w, DataType::Float(32)),
                                                                       converted(b, DataType::Float(32))});
  EXPECT_TRUE(close(to_host(out[0]), want[0], 4e-3, 4e-3));
}

TEST(CudaModuleOnGpu, ShapesAreCheckedBeforeTheLaunch) {
  IRModule mod = run_cuda_codegen(backend::cuda::partition_for_cuda(script::parse_module(kMlp)));
  runtime::ModulePtr m = only_module(mod);
  PARTITA_REQUIRE_CUDA_DEVICE();
  runtime::PackedFunc f = m->get_function(m->function_names()[0]);
  DataType f16 = DataType::Float(16);
  std::vector<Tensor> in = {empty_device({13, 41}, f16), empty_device({40, 24}, f16), empty_device({24}, f16)};
  std::vector<Tensor> out = {empty_device({13, 24}, f16)};
  try {
    f(in, out);
    FAIL() << "a wrong shape was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("input 0 has shape (13, 41), expected (13, 40)"), std::string::npos) << e.what();
  }
  in[0] = empty_device({13, 40}, f16);
  out[0] = empty_device({12, 24}, f16);
  EXPECT_THROW(f(in, out), Error);  // the output's n disagrees with the input's
}

// y = relu(x @ W + c) with W and c constants of the module: uploaded at the first call.
TEST(CudaModuleOnGpu, NamedConstantsAndRepeatedCalls) {
  Tensor w = random_input({30, 20}, DataType::Float(32), 4), c = random_input({20}, DataType::Float(32), 5);
  BlockBuilder bb;
  Var x = make<VarNode>("x", tensor_sinfo(std::vector<PrimExpr>{make<PrimVarNode>("n"), int_imm(30)}, DataType::Float(32)));
  bb.begin_function("main", {x});
  bb.begin_dataflow();
  Var a = bb.emit(op::make_call("relax.matmul", {x, make<ConstantNode>(w)}));
  Var b = bb.emit(op::make_call("relax.add", {a, make<ConstantNode>(c)}));
  Var r = bb.emit(op::make_call("relax.nn.relu", {b}));
  Var gv = bb.emit_output(r);
  bb.end_dataflow();
  bb.emit_func_output(gv);
  IRModule mod = bb.get();
  auto exec = build_cuda(mod);
  PARTITA_REQUIRE_CUDA_DEVICE();
  runtime::VirtualMachine vm(exec, Device::cuda(0));
  for (int64_t n : {1, 7, 300}) {
    Tensor in = random_input({n, 30}, DataType::Float(32), uint32_t(n));
    EXPECT_TRUE(close(run_gpu(vm, {in})[0], run_host(mod, {in})[0], 1e-5, 1e-5)) << "n = " << n;
  }
}

TEST(CudaModuleOnGpu, EmptyTensorsLaunchNothing) {
  IRModule mod = script::parse_module(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 5), dtype="float32")):
        with R.dataflow():
            lv = R.exp(x)
            gv = R.sum(lv, axis=[0])
            R.output(gv)
        return gv
)");
  auto exec = build_cuda(mod);
  PARTITA_REQUIRE_CUDA_DEVICE();
  runtime::VirtualMachine vm(exec, Device::cuda(0));
  std::vector<Tensor> out = run_gpu(vm, {Tensor::empty({0, 5}, DataType::Float(32))});
  // A sum over no rows is 0 for every column.
  ASSERT_EQ(out[0].numel(), 5);
  for (int k = 0; k < 5; ++k) EXPECT_EQ(out[0].data_as<float>()[k], 0.0f);
}

// More than 2^31 elements: the kernel indexes with 64 bits.
TEST(CudaModuleOnGpu, SixtyFourBitIndices) {
  const int64_t n = (int64_t(1) << 31) + 77;
  IRModule mod = run_cuda_codegen(backend::cuda::partition_for_cuda(script::parse_module(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2147483725,), dtype="int8")):
        with R.dataflow():
            gv = R.add(x, x)
            R.output(gv)
        return gv
)")));
  runtime::ModulePtr m = only_module(mod);
  EXPECT_NE(m->get_source().find("typedef pt_i64 pt_idx;"), std::string::npos);
  PARTITA_REQUIRE_CUDA_DEVICE();
  Tensor x = empty_device({n}, DataType::Int(8)), y = empty_device({n}, DataType::Int(8));
  ASSERT_EQ(cudaMemset(x.data(), 3, size_t(n)), cudaSuccess);
  ASSERT_EQ(cudaMemset(y.data(), 0, size_t(n)), cudaSuccess);
  std::vector<Tensor> out = {y};
  m->get_function(m->function_names()[0])(std::vector<Tensor>{x}, out);
  int8_t tail[4] = {0, 0, 0, 0};
  ASSERT_EQ(cudaMemcpy(tail, static_cast<int8_t*>(y.data()) + n - 4, 4, cudaMemcpyDeviceToHost), cudaSuccess);
  for (int8_t v : tail) EXPECT_EQ(v, 6);
}

// An input 2 bytes past an aligned address cannot be read 16 bytes at a time: the module falls
// back to the element-by-element kernel, with the same results.
TEST(CudaModuleOnGpu, MisalignedTensorsUseTheScalarKernel) {
  IRModule mod = run_cuda_codegen(backend::cuda::partition_for_cuda(script::parse_module(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1000,), dtype="float16")):
        with R.dataflow():
            gv = R.exp(x)
            R.output(gv)
        return gv
)")));
  runtime::ModulePtr m = only_module(mod);
  ASSERT_NE(m->get_source().find("_vec("), std::string::npos);
  PARTITA_REQUIRE_CUDA_DEVICE();
  runtime::PackedFunc f = m->get_function(m->function_names()[0]);
  Tensor host = random_input({1001}, DataType::Float(16), 9);
  Tensor whole = to_device(host);
  // The view of elements 1..1000: its data pointer is 2 bytes past the allocation.
  Tensor shifted = Tensor::from_buffer({1000}, DataType::Float(16),
                                       std::shared_ptr<uint8_t>(whole.buffer(), whole.buffer().get() + 2), Device::cuda(0));
  Tensor aligned = to_device(Tensor::from_bytes({1000}, DataType::Float(16), host.data_as<uint8_t>() + 2, 2000));
  std::vector<Tensor> a = {empty_device({1000}, DataType::Float(16))}, b = {empty_device({1000}, DataType::Float(16))};
  f(std::vector<Tensor>{shifted}, a);
  f(std::vector<Tensor>{aligned}, b);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_TRUE(close(to_host(a[0]), to_host(b[0]), 0, 0));
  Tensor ref = run_host(script::parse_module(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1000,), dtype="float32")):
        with R.dataflow():
            gv = R.exp(x)
            R.output(gv)
        return gv
)"), {converted(to_host(aligned), DataType::Float(32))})[0];
  EXPECT_TRUE(close(to_host(b[0]), ref, 2e-3, 2e-3));
}

TEST(CudaModuleOnGpu, ExportedArtifactRunsAfterLoading) {
  IRModule mod = script::parse_module(replace_all(kMlp, "float16", "float32"));
  auto exec = build_cuda(mod);
  std::string bytes;
  exec->save(bytes);
  auto loaded = runtime::Executable::load(bytes);
  PARTITA_REQUIRE_CUDA_DEVICE();
  runtime::VirtualMachine vm(loaded, Device::cuda(0));
  std::vector<Tensor> in = {random_input({5, 40}, DataType::Float(32), 1), random_input({40, 24}, DataType::Float(32), 2),
                            random_input({24}, DataType::Float(32), 3)};
  EXPECT_TRUE(close(run_gpu(vm, in)[0], run_host(mod, in)[0], 1e-5, 1e-5));
}

}  // namespace
}  // namespace partita::cudagen_test
