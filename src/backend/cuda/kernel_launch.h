// What both halves of the cuda target know about a generated-kernel module: how each function's
// kernel is launched, and the module's bytes (the codegen writes them, the runtime plug-in
// libpartita_runtime_cuda.so reads them; runtime headers only, so the plug-in may include it).
//
// Sections: (1) the generated CUDA C++ source, (2) the cubin NVRTC compiled from it, (3) the
// launch table below. A function's kernel takes, in order: a device pointer per input (tuple
// arguments flattened), per named constant, per output, then one `long long` per symbolic
// dimension. Symbolic dimensions are read from the inputs' (else the outputs') shapes; every
// input and output shape is checked against its programs before the launch, and the grid is
// evaluated from the same programs.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "partita/runtime/executable.h"
#include "partita/runtime/module_sections.h"
#include "partita/runtime/serialize.h"

namespace partita::backend::cuda {

inline constexpr runtime::ModuleFormat kModuleFormat{"cuda", 0x41445543 /* "CUDA" */, 2};

/// Where a symbolic dimension's value is read at run time: dimension `dim` of a tensor is
/// `scale * value + offset` (a bare dimension has scale 1 and offset 0; a flattened one, n * 8).
struct DimSource {
  bool output = false;
  int32_t tensor = 0;
  int32_t dim = 0;
  int64_t scale = 1, offset = 0;
};

/// An expected tensor: dtype and one program per dimension over the symbolic slots.
struct TensorSignature {
  DataType dtype;
  std::vector<runtime::DimProgram> shape;
};

struct KernelFunction {
  std::string symbol;  // the function's global symbol, called by the VM
  std::string kernel;  // the __global__ function's name in the cubin
  std::vector<TensorSignature> inputs, outputs;
  std::vector<std::string> constants;   // named constants passed after the inputs
  std::vector<DimSource> sym_sources;   // one per symbolic slot, in kernel-argument order
  std::array<runtime::DimProgram, 3> grid;  // blocks per dimension (clamped to the device limits)
  std::array<uint32_t, 3> block{1, 1, 1};
  uint32_t dynamic_shared_bytes = 0;
  // A variant reading and writing 16 bytes per access (elementwise kernels), used when the
  // outputs and the inputs listed are 16-byte aligned; empty when there is none.
  std::string vector_kernel;
  std::array<runtime::DimProgram, 3> vector_grid;
  std::vector<int32_t> vector_inputs;
};

/// The launch table's bytes.
inline std::string write_launch_table(const std::vector<KernelFunction>& functions) {
  std::string out;
  runtime::Writer w(out);
  w.u64(functions.size());
  for (const auto& f : functions) {
    w.str(f.symbol);
    w.str(f.kernel);
    for (const auto* list : {&f.inputs, &f.outputs}) {
      w.u64(list->size());
      for (const auto& t : *list) {
        w.u8(uint8_t(t.dtype.code()));
        w.u8(uint8_t(t.dtype.bits()));
        w.u64(t.shape.size());
        for (const auto& d : t.shape) w.i64s(d);
      }
    }
    w.u64(f.constants.size());
    for (const auto& c : f.constants) w.str(c);
    w.u64(f.sym_sources.size());
    for (const auto& s : f.sym_sources) {
      w.u8(s.output ? 1 : 0);
      w.i64(s.tensor);
      w.i64(s.dim);
      w.i64(s.scale);
      w.i64(s.offset);
    }
    for (const auto& g : f.grid) w.i64s(g);
    for (uint32_t b : f.block) w.u32(b);
    w.u32(f.dynamic_shared_bytes);
    w.str(f.vector_kernel);
    for (const auto& g : f.vector_grid) w.i64s(g);
    w.u64(f.vector_inputs.size());
    for (int32_t k : f.vector_inputs) w.i64(k);
  }
  return out;
}

/// The launch table read back; Error("ValueError") naming what is wrong for malformed bytes.
inline std::vector<KernelFunction> read_launch_table(std::string_view bytes) {
  runtime::Reader r(bytes, "cuda module launch table");
  std::vector<KernelFunction> functions(r.count("functions", 16));
  for (auto& f : functions) {
    f.symbol = r.str("function symbol");
    f.kernel = r.str("kernel name");
    for (auto* list : {&f.inputs, &f.outputs}) {
      list->resize(r.count("tensor signatures", 10));
      for (auto& t : *list) {
        auto code = DataType::Code(r.u8("dtype code"));
        int bits = r.u8("dtype bits");
        t.dtype = DataType(code, uint8_t(bits));
        if (!DataType::is_valid(t.dtype.str())) r.fail("invalid dtype in a tensor signature");
        t.shape.resize(r.count("dimensions", 8));
        for (auto& d : t.shape) d = r.i64s("shape program");
      }
    }
    f.constants.resize(r.count("constants", 8));
    for (auto& c : f.constants) c = r.str("constant name");
    f.sym_sources.resize(r.count("symbolic dimensions", 33));
    for (auto& s : f.sym_sources) {
      s.output = r.u8("dimension source") != 0;
      s.tensor = int32_t(r.i64("dimension tensor"));
      s.dim = int32_t(r.i64("dimension index"));
      s.scale = r.i64("dimension scale");
      s.offset = r.i64("dimension offset");
      if (s.scale == 0) r.fail("a symbolic dimension of '" + f.symbol + "' has scale 0");
      const auto& list = s.output ? f.outputs : f.inputs;
      if (s.tensor < 0 || size_t(s.tensor) >= list.size() || s.dim < 0 ||
          size_t(s.dim) >= list[size_t(s.tensor)].shape.size())
        r.fail("a symbolic dimension of '" + f.symbol + "' is read from a tensor it does not have");
    }
    for (auto& g : f.grid) g = r.i64s("grid program");
    for (auto& b : f.block) {
      b = r.u32("block size");
      if (b == 0 || b > 1024) r.fail("invalid block size in '" + f.symbol + "'");
    }
    f.dynamic_shared_bytes = r.u32("shared memory size");
    f.vector_kernel = r.str("vector kernel name");
    for (auto& g : f.vector_grid) g = r.i64s("vector grid program");
    f.vector_inputs.resize(r.count("vector inputs", 8));
    for (auto& k : f.vector_inputs) {
      k = int32_t(r.i64("vector input"));
      if (k < 0 || size_t(k) >= f.inputs.size()) r.fail("a vector input of '" + f.symbol + "' is out of range");
    }
  }
  if (!r.at_end()) r.fail("trailing bytes");
  return functions;
}

/// The bytes of a module (what its save_to_binary writes and its loader reads).
inline std::string write_cuda_module(const std::string& source, const std::string& cubin,
                                     const std::vector<KernelFunction>& functions) {
  return runtime::write_module_sections(kModuleFormat, {source, cubin, write_launch_table(functions)});
}

}  // namespace partita::backend::cuda
