// Whole models with generated kernels alone against the host: a transformer encoder block (float32
// and float16, symbolic sequence length), a small CNN (conv / batch_norm / pooling / depthwise /
// relu6 / classifier), and the bundled MobileNetV2 from ONNX against PyTorch's output.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <sstream>

#include "cudagen_util.h"
#include "partita/frontend/onnx.h"

namespace partita::cudagen_test {
namespace {

// max |out - ref| / max |ref| (elementwise relative error means little for values near zero).
double relative_error(const Tensor& out, const Tensor& ref) {
  auto [worst, scale] = ::partita::testing::error_and_scale(out, ref);
  return scale > 0 ? worst / scale : worst;
}

// Inputs for every parameter of `mod`'s main: `scale`-uniform, symbolic dims set to `n`.
std::vector<Tensor> inputs_for(const IRModule& mod, int64_t n, const std::map<std::string, ValueRange>& ranges) {
  std::vector<Tensor> out;
  uint32_t seed = 11;
  for (const Var& p : mod.lookup("main").as<FunctionNode>()->params) {
    const auto* t = p->struct_info_.as<TensorStructInfoNode>();
    std::vector<int64_t> shape;
    for (const auto& d : *t->shape) shape.push_back(as_const_int(d).value_or(n));
    ValueRange r = ValueRange{-0.25, 0.25};
    for (const auto& [prefix, range] : ranges)
      if (p->name_hint.rfind(prefix, 0) == 0) r = range;
    out.push_back(random_input(shape, t->dtype, seed++, r));
  }
  return out;
}

const char* kEncoderBlock = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, "n", 64), dtype="float32"), wq: R.Tensor((64, 64), dtype="float32"), wk: R.Tensor((64, 64), dtype="float32"), wv: R.Tensor((64, 64), dtype="float32"), wo: R.Tensor((64, 64), dtype="float32"), g1: R.Tensor((64,), dtype="float32"), b1: R.Tensor((64,), dtype="float32"), w1: R.Tensor((64, 256), dtype="float32"), c1: R.Tensor((256,), dtype="float32"), w2: R.Tensor((256, 64), dtype="float32"), c2: R.Tensor((64,), dtype="float32"), g2: R.Tensor((64,), dtype="float32"), b2: R.Tensor((64,), dtype="float32")):
        n = T.int64()
        with R.dataflow():
            q = R.matmul(x, wq)
            k = R.matmul(x, wk)
            v = R.matmul(x, wv)
            q4 = R.reshape(q, R.shape([1, n, 4, 16]))
            qt = R.permute_dims(q4, axes=[0, 2, 1, 3])
            k4 = R.reshape(k, R.shape([1, n, 4, 16]))
            kt = R.permute_dims(k4, axes=[0, 2, 3, 1])
            v4 = R.reshape(v, R.shape([1, n, 4, 16]))
            vt = R.permute_dims(v4, axes=[0, 2, 1, 3])
            s = R.matmul(qt, kt)
            s2 = R.multiply(s, R.const(0.25, "float32"))
            p = R.nn.softmax(s2, axis=-1)
            o = R.matmul(p, vt)
            ot = R.permute_dims(o, axes=[0, 2, 1, 3])
            o2 = R.reshape(ot, R.shape([1, n, 64]))
            a = R.matmul(o2, wo)
            r = R.add(a, x)
            l = R.nn.layer_norm(r, g1, b1, axes=[-1])
            h = R.matmul(l, w1)
            h1 = R.add(h, c1)
            h2 = R.nn.gelu(h1)
            f = R.matmul(h2, w2)
            f1 = R.add(f, c2)
            r2 = R.add(f1, l)
            gv = R.nn.layer_norm(r2, g2, b2, axes=[-1])
            R.output(gv)
        return gv
)";

const std::map<std::string, ValueRange> kEncoderRanges = {{"x", {-1, 1}}, {"g", {0.5, 1.5}}};

TEST(CudaModels, EncoderBlockFloat32) {
  IRModule mod = script::parse_module(kEncoderBlock);
  IRModule parted = backend::cuda::partition_for_cuda(mod);
  EXPECT_EQ(ops_left_on_host(parted), std::vector<std::string>{});
  auto exec = codegen::build(parted, codegen::BuildOptions({cuda_target()}, false));
  PARTITA_REQUIRE_CUDA_DEVICE();
  runtime::VirtualMachine vm(exec, Device::cuda(0));
  for (int64_t n : {1, 17, 128}) {
    std::vector<Tensor> in = inputs_for(mod, n, kEncoderRanges);
    double err = relative_error(run_gpu(vm, in)[0], run_host(mod, in)[0]);
    EXPECT_LE(err, 1e-4) << "n = " << n;
  }
}

TEST(CudaModels, EncoderBlockFloat16) {
  IRModule ref = script::parse_module(kEncoderBlock);
  IRModule mod = script::parse_module(replace_all(kEncoderBlock, "float32", "float16"));
  auto exec = build_cuda(mod);
  PARTITA_REQUIRE_CUDA_DEVICE();
  runtime::VirtualMachine vm(exec, Device::cuda(0));
  std::vector<Tensor> in = inputs_for(mod, 33, kEncoderRanges), ref_in;
  for (const Tensor& t : in) ref_in.push_back(converted(t, DataType::Float(32)));
  double err = relative_error(run_gpu(vm, in)[0], run_host(ref, ref_in)[0]);
  EXPECT_LE(err, 1e-2);
}

const char* kConvNet = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3, 32, 32), dtype="float32"), w1: R.Tensor((16, 3, 3, 3), dtype="float32"), bn_g: R.Tensor((16,), dtype="float32"), bn_b: R.Tensor((16,), dtype="float32"), bn_m: R.Tensor((16,), dtype="float32"), bn_v: R.Tensor((16,), dtype="float32"), w2: R.Tensor((32, 16, 3, 3), dtype="float32"), c2: R.Tensor((32,), dtype="float32"), wd: R.Tensor((32, 1, 3, 3), dtype="float32"), fc: R.Tensor((32, 10), dtype="float32"), fcb: R.Tensor((10,), dtype="float32")):
        with R.dataflow():
            a = R.nn.conv2d(x, w1, strides=[2, 2], padding=[1, 1, 1, 1])
            bn = R.nn.batch_norm(a, bn_g, bn_b, bn_m, bn_v, axis=1, training=False)
            b = bn[0]
            r1 = R.nn.relu(b)
            p1 = R.nn.max_pool2d(r1, pool_size=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1])
            c = R.nn.conv2d(p1, w2, padding=[1, 1, 1, 1])
            cb = R.reshape(c2, R.shape([1, 32, 1, 1]))
            d = R.add(c, cb)
            r2 = R.nn.relu(d)
            e = R.nn.conv2d(r2, wd, padding=[1, 1, 1, 1], groups=32)
            r3 = R.clip(e, R.prim_value(0), R.prim_value(6))
            g = R.nn.adaptive_avg_pool2d(r3, output_size=[1, 1])
            f = R.reshape(g, R.shape([2, 32]))
            l = R.matmul(f, fc)
            l1 = R.add(l, fcb)
            gv = R.nn.softmax(l1, axis=-1)
            R.output(gv)
        return gv
)";

TEST(CudaModels, SmallConvNet) {
  IRModule mod = script::parse_module(kConvNet);
  IRModule parted = backend::cuda::partition_for_cuda(mod);
  EXPECT_EQ(ops_left_on_host(parted), std::vector<std::string>{});
  auto exec = codegen::build(parted, codegen::BuildOptions({cuda_target()}, false));
  PARTITA_REQUIRE_CUDA_DEVICE();
  runtime::VirtualMachine vm(exec, Device::cuda(0));
  std::vector<Tensor> in = inputs_for(mod, 1, {{"x", {-1, 1}}, {"bn_v", {0.5, 1.5}}, {"bn_g", {0.5, 1.5}}});
  EXPECT_LE(relative_error(run_gpu(vm, in)[0], run_host(mod, in)[0]), 1e-4);
}

// A float32, C-order .npy file.
Tensor read_npy(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  std::string data = ss.str();
  if (data.size() < 10 || data.compare(0, 6, "\x93NUMPY") != 0) throw_error("IOError", path + " is not a .npy file");
  size_t len = uint8_t(data[8]) | (size_t(uint8_t(data[9])) << 8);
  std::string header = data.substr(10, len);
  if (header.find("'<f4'") == std::string::npos || header.find("'fortran_order': False") == std::string::npos)
    throw_error("IOError", path + ": only C-order float32 arrays are read here");
  std::vector<int64_t> shape;
  size_t open = header.find("'shape': (") + 10, close = header.find(')', open);
  std::stringstream dims(header.substr(open, close - open));
  for (std::string d; std::getline(dims, d, ',');)
    if (d.find_first_of("0123456789") != std::string::npos) shape.push_back(std::stoll(d));
  Tensor t = Tensor::empty(shape, DataType::Float(32));
  std::memcpy(t.data(), data.data() + 10 + len, t.nbytes());
  return t;
}

TEST(CudaModels, MobileNetV2FromOnnx) {
  const char* src = std::getenv("PARTITA_TEST_SOURCE_DIR");  // the GPU machine's copy of the tree
  const std::string base = std::string(src && *src ? src : PARTITA_SOURCE_DIR) + "/models/mobilenet_v2_small";
  IRModule mod = frontend::from_onnx_file(base + ".onnx");
  IRModule parted = backend::cuda::partition_for_cuda(mod);
  EXPECT_EQ(ops_left_on_host(parted), std::vector<std::string>{});
  auto exec = codegen::build(parted, codegen::BuildOptions({cuda_target()}, false));
  Tensor x = read_npy(base + ".input.npy"), ref = read_npy(base + ".ref.npy");
  PARTITA_REQUIRE_CUDA_DEVICE();
  runtime::VirtualMachine vm(exec, Device::cuda(0));
  Tensor out = run_gpu(vm, {x})[0];
  EXPECT_LE(relative_error(out, ref), 1e-4);
}

// A whole real model on the GPU: after PlaceDeviceCopies nothing runs on the host, so the run is
// captured as one CUDA Graph on its second call and replayed after (input on the GPU, where the
// user keeps it); each run without the graph makes two device allocations (the planned arena of
// every intermediate, and the result), and the results of all runs agree.
TEST(CudaModels, MobileNetV2RunsAsOneCudaGraphWithOneArena) {
  const char* src = std::getenv("PARTITA_TEST_SOURCE_DIR");
  const std::string base = std::string(src && *src ? src : PARTITA_SOURCE_DIR) + "/models/mobilenet_v2_small";
  IRModule mod = frontend::from_onnx_file(base + ".onnx");
  auto exec = codegen::build(mod, codegen::BuildOptions({cuda_target()}, false));
  Tensor x = read_npy(base + ".input.npy"), ref = read_npy(base + ".ref.npy");
  PARTITA_REQUIRE_CUDA_DEVICE();
  runtime::VirtualMachine vm(exec, Device::cuda(0));
  Tensor xd = x.to(Device::cuda(0));
  std::vector<Tensor> outs;
  for (int call = 0; call < 4; ++call) {
    outs.push_back(vm.invoke("main", {xd})[0]);
    EXPECT_EQ(outs.back().device(), Device::cuda(0));
  }
  runtime::synchronize(Device::cuda(0));
  EXPECT_EQ(vm.graph_stats().captures, 1);
  EXPECT_EQ(vm.graph_stats().launches, 3);
  EXPECT_EQ(vm.graph_stats().fallbacks, 0);
  for (const Tensor& o : outs) EXPECT_LE(relative_error(o.to(Device::cpu()), ref), 1e-4);
  vm.set_graph_capture(false);
  int64_t before = vm.memory_stats().allocations, copies = vm.memory_stats().device_copies;
  Tensor plain = vm.invoke("main", {xd})[0];
  runtime::synchronize(Device::cuda(0));
  EXPECT_EQ(vm.memory_stats().allocations - before, 2);
  EXPECT_EQ(vm.memory_stats().device_copies, copies);  // the input stays where it is
  EXPECT_GT(vm.memory_stats().planned, 50);
  EXPECT_LE(relative_error(plain.to(Device::cpu()), ref), 1e-4);
}

}  // namespace
}  // namespace partita::cudagen_test
