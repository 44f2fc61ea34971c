// Malformed bytecode with a valid checksum (as a hostile writer could produce) is rejected by
// the loader's validation, never crashes.
#include <gtest/gtest.h>

#include <random>

#include "partita/runtime/executable.h"
#include "partita/runtime/serialize.h"
#include "partita/runtime/vm.h"
#include "partita/support/error.h"

using namespace partita;
using namespace partita::runtime;

namespace {

/// `main(x)`: `step` into register 1 (its `dst`), then return it.
Executable one_step(Instruction step) {
  Executable ex;
  VMFunction f;
  f.name = "main";
  f.param_names = {"x"};
  f.num_registers = 2;
  step.dst = 1;
  Instruction ret;
  ret.op = Opcode::Ret;
  ret.args = {1};
  f.code = {std::move(step), ret};
  ex.functions.push_back(std::move(f));
  return ex;
}

}  // namespace

TEST(VMBytecode, OutOfRangeOperandsAreRejected) {
  Instruction add;
  add.op = Opcode::CallKernel;
  add.index = 0;
  add.args = {0, 0};
  add.outs = {TensorSpec{DataType::Float(32), true, {2}, {}, {}}};
  add.attrs = 0;
  Executable ex = one_step(add);
  ex.kernel_names = {"relax.add"};
  ex.functions[0].attrs.push_back({});
  std::string ok;
  ex.save(ok);
  EXPECT_NO_THROW(Executable::load(ok));
  for (int variant = 0; variant < 4; ++variant) {
    Executable bad = ex;
    auto& in = bad.functions[0].code[0];
    if (variant == 0) in.args[1] = 7;
    if (variant == 1) in.index = 3;
    if (variant == 2) in.dst = 9;
    if (variant == 3) bad.functions[0].code[1].args[0] = -4;
    std::string bytes;
    bad.save(bytes);
    EXPECT_THROW(Executable::load(bytes), Error) << variant;
  }
}

// A view at a byte offset (a slice) may not reach past its source, however its shape is written.
TEST(VMBytecode, ViewsOutsideTheirSourceAreErrors) {
  auto run_view = [](int32_t offset, std::vector<int64_t> shape) {
    Instruction view;
    view.op = Opcode::View;
    view.index = offset;
    view.args = {0};
    view.outs = {TensorSpec{DataType::Float(32), true, std::move(shape), {}, {}}};
    std::string bytes;
    one_step(view).save(bytes);
    VirtualMachine vm(Executable::load(bytes));
    Tensor x = Tensor::empty({4, 16}, DataType::Float(32));
    for (int i = 0; i < 64; ++i) x.data_as<float>()[i] = float(i);
    return vm.invoke("main", {x});
  };
  auto out = run_view(128, {2, 16});  // rows 2 and 3
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].data_as<float>()[0], 32.0f);
  EXPECT_THROW(run_view(192, {2, 16}), Error);                              // one row too many
  EXPECT_THROW(run_view(0, {int64_t(1) << 40, int64_t(1) << 40}), Error);   // wraps around
  EXPECT_THROW(run_view(0, {-2, 16}), Error);
}

TEST(VMBytecode, EvalDim) {
  DimProgram p = {int64_t(DimOp::Var), 0, int64_t(DimOp::Const), 2, int64_t(DimOp::Mul), 0,
                  int64_t(DimOp::Const), 3, int64_t(DimOp::FloorDiv), 0};
  int64_t syms[1] = {7};
  EXPECT_EQ(eval_dim(p, syms, 1), 4);
  EXPECT_THROW(eval_dim({int64_t(DimOp::Add), 0}, syms, 1), Error);
  EXPECT_THROW(eval_dim({int64_t(DimOp::Var), 5}, syms, 1), Error);
  EXPECT_THROW(eval_dim({int64_t(DimOp::Const), 1, int64_t(DimOp::Const), 0, int64_t(DimOp::FloorMod), 0}, syms, 1), Error);
}
