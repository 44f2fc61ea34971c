// The VM's input checks (src/runtime/vm_arguments.h) on arbitrary inputs for loaded models:
// the fuzzer's bytes choose a function, how many arguments it gets, and for each a tensor (or
// a tuple) of some dtype, rank, shape and contents. Every call must either compute or raise
// partita::Error — a wrong input never reaches a kernel as a crash. The models are built once,
// saved and loaded back (what a user's artifact is): host functions with static, symbolic and
// computed shapes, a tuple parameter, control flow, integer and boolean tensors, and the same
// network partitioned for the CPU backends.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "partita/backend/registry.h"
#include "partita/codegen/build.h"
#include "partita/runtime/executable.h"
#include "partita/runtime/vm.h"
#include "partita/script/parser.h"
#include "partita/support/error.h"
#include "partita/transform/pattern_registry.h"

using namespace partita;
using namespace partita::runtime;

namespace {

const char* kModel = R"(
@I.ir_module
class Module:
    @R.function
    def mlp(x: R.Tensor(("n", 8), dtype="float32"), w: R.Tensor((8, 8), dtype="float32")) -> R.Tensor(("n", 8), dtype="float32"):
        n = T.int64()
        with R.dataflow():
            m: R.Tensor((n, 8), dtype="float32") = R.matmul(x, w, out_dtype="void")
            r: R.Tensor((n, 8), dtype="float32") = R.nn.relu(m)
            s: R.Tensor((n, 8), dtype="float32") = R.nn.softmax(r, axis=-1)
            R.output(s)
        return s

    @R.function
    def broadcast(a: R.Tensor(("n", "m"), dtype="float32"), b: R.Tensor(("m",), dtype="float32")) -> R.Tensor(("n", "m"), dtype="float32"):
        n = T.int64()
        m = T.int64()
        with R.dataflow():
            c: R.Tensor((n, m), dtype="float32") = R.add(a, b)
            d: R.Tensor((n * m,), dtype="float32") = R.reshape(c, R.shape([n * m]))
            e: R.Tensor((n, m), dtype="float32") = R.reshape(d, R.shape([n, m]))
            R.output(e)
        return e

    @R.function
    def pair(t: R.Tuple(R.Tensor((2,), dtype="float32"), R.Tensor(("k",), dtype="int64"))) -> R.Tensor(("k",), dtype="int64"):
        k = T.int64()
        a: R.Tensor((2,), dtype="float32") = t[0]
        b: R.Tensor((k,), dtype="int64") = t[1]
        c: R.Tensor((k,), dtype="int64") = R.add(b, b)
        return c

    @R.function
    def choose(c: R.Tensor((), dtype="bool"), x: R.Tensor(("n",), dtype="int32")) -> R.Tensor(("n",), dtype="int32"):
        n = T.int64()
        if c:
            r: R.Tensor((n,), dtype="int32") = R.add(x, x)
        else:
            r: R.Tensor((n,), dtype="int32") = R.multiply(x, x)
        return r

    @R.function
    def conv(x: R.Tensor((1, 2, 6, 6), dtype="float32"), w: R.Tensor((4, 2, 3, 3), dtype="float32")) -> R.Tensor((1, 4, 6, 6), dtype="float32"):
        with R.dataflow():
            c: R.Tensor((1, 4, 6, 6), dtype="float32") = R.nn.conv2d(x, w, strides=[1, 1], padding=[1, 1, 1, 1], dilation=[1, 1], groups=1, data_layout="NCHW", kernel_layout="OIHW", out_layout="NCHW", out_dtype="void")
            r: R.Tensor((1, 4, 6, 6), dtype="float32") = R.nn.relu(c)
            R.output(r)
        return r
)";

struct Model {
  std::shared_ptr<Executable> ex;
  std::unique_ptr<VirtualMachine> vm;
  std::vector<std::string> functions;
};

/// Saved and loaded back, so the VM runs what a loaded artifact holds.
Model loaded(const std::shared_ptr<Executable>& built) {
  std::string bytes;
  built->save(bytes);
  Model m;
  m.ex = Executable::load(bytes);
  m.vm = std::make_unique<VirtualMachine>(m.ex);
  for (const auto& f : m.ex->functions) m.functions.push_back(f.name);
  return m;
}

std::vector<Model>& models() {
  static std::vector<Model>* all = [] {
    auto* v = new std::vector<Model>;
    IRModule mod = script::parse_module(kModel);
    v->push_back(loaded(codegen::build(mod)));
    for (const char* backend : {"dnnl", "cblas"})
      if (backend::find_backend(backend)) v->push_back(loaded(codegen::build(transform::partition_for(backend, mod))));
    return v;
  }();
  return *all;
}

/// Reads the fuzzer's bytes in order; zeros once they run out.
struct Bytes {
  const uint8_t* data;
  size_t size;
  size_t at = 0;
  uint8_t next() { return at < size ? data[at++] : 0; }
};

const DataType kDtypes[] = {DataType::Float(32), DataType::Float(64), DataType::Int(32), DataType::Int(64),
                            DataType::Float(16), DataType::Bool(),    DataType::UInt(8), DataType::Int(8)};

Tensor make_tensor(Bytes& in) {
  DataType dtype = kDtypes[in.next() % 8];
  int ndim = in.next() % 5;
  std::vector<int64_t> shape;
  int64_t numel = 1;
  for (int i = 0; i < ndim; ++i) {
    int64_t d = in.next() % 10;
    if (numel * (d == 0 ? 1 : d) > 4096) d = 1;
    shape.push_back(d);
    numel *= d;
  }
  Tensor t = Tensor::empty(shape, dtype);
  auto* p = static_cast<uint8_t*>(t.data());
  for (size_t i = 0; i < t.nbytes(); ++i) p[i] = in.next();
  if (dtype.is_bool())
    for (size_t i = 0; i < t.nbytes(); ++i) p[i] &= 1;  // a bool is 0 or 1, as numpy and DLPack hold it
  return t;
}

Value make_value(Bytes& in) {
  uint8_t kind = in.next();
  if (kind % 8 == 7) {  // a tuple of two
    std::vector<Value> fields;
    fields.push_back(make_value(in));
    fields.push_back(Value(make_tensor(in)));
    return Value::make_tuple(std::move(fields));
  }
  if (kind % 16 == 15) return Value(Tensor());  // nothing
  return Value(make_tensor(in));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Bytes in{data, size};
  std::vector<Model>& all = models();
  Model& m = all[in.next() % all.size()];
  const std::string& name = m.functions[in.next() % m.functions.size()];
  int count = in.next() % 4;
  std::vector<Value> args;
  for (int i = 0; i < count; ++i) args.push_back(make_value(in));
  try {
    m.vm->invoke_value(name, args);
  } catch (const Error&) {
  }
  return 0;
}
