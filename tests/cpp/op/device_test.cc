// R.to_vdevice / R.hint_on_device inference, the rule that results stay on their operands'
// device, and the host kernels of the two operators.
#include "partita/runtime/kernel.h"
#include "test_helpers.h"

namespace partita::op::testing {
namespace {

Var on(const std::string& name, std::vector<int64_t> shape, VDevice v, DataType dtype = f32) {
  StructInfo s = tensor_sinfo(std::move(shape), dtype);
  return make<VarNode>(name, tensor_sinfo_on(*s.as<TensorStructInfoNode>(), std::move(v)));
}
/// `e` with struct info `s` (as the normalizer would have set it).
Expr with(Expr e, StructInfo s) {
  e->struct_info_ = std::move(s);
  return e;
}
const TensorStructInfoNode& tensor(const StructInfo& s) { return *s.as<TensorStructInfoNode>(); }

TEST(Device, ToVDeviceInference) {
  VDevice cuda = make_vdevice("cuda"), llvm = make_vdevice("llvm");
  StructInfo s = infer(op::to_vdevice(on("x", {2, 3}, llvm), cuda));
  EXPECT_EQ(describe(s), "(2, 3) float32");
  EXPECT_EQ(tensor(s).vdevice.get(), cuda.get());
  StructInfo u = infer(op::to_vdevice(tvar_ndim("x", 3, DataType::Float(16)), cuda));
  EXPECT_EQ(tensor(u).ndim, 3);
  EXPECT_EQ(tensor(u).dtype, DataType::Float(16));
  EXPECT_EQ(tensor(u).vdevice.get(), cuda.get());
  EXPECT_EQ(error_of([&] {
              infer(op::to_vdevice(with(make<PrimValueNode>(int_imm(1)), prim_sinfo(i64)), cuda));
            }),
            "relax.to_vdevice: argument 'data' must be a Tensor, but is a Prim");
  EXPECT_EQ(
      error_of([&] {
        make_call("relax.to_vdevice", {tvar("x", {2})}, {{"dst_vdevice", std::string("cuda")}});
      }),
      "relax.to_vdevice: attribute 'dst_vdevice' must be a VDevice");
  EXPECT_EQ(error_of([&] { make_call("relax.to_vdevice", {tvar("x", {2})}); }),
            "relax.to_vdevice: missing required attribute 'dst_vdevice'");
}

TEST(Device, HintOnDeviceInference) {
  Var x = tvar("x", {4});
  Expr h = op::hint_on_device(x, 2, 0);
  EXPECT_EQ(infer(h).get(), x->struct_info_.get());  // TVM: the value is unchanged
  const auto* call = h.as<CallNode>();
  EXPECT_EQ(call->attrs->type_key, "relax.attrs.HintOnDeviceAttrs");
  EXPECT_EQ(std::get<std::string>(*call->attrs->find("memory_scope")), "global");
  EXPECT_EQ(error_of([&] {
              infer(op::hint_on_device(
                  with(make<ShapeExprNode>(std::vector<PrimExpr>{}), shape_sinfo({})), 1, 0));
            }),
            "relax.hint_on_device: argument 'data' must be a Tensor, but is a Shape");
}

TEST(Device, ResultsStayOnTheOperandsDevice) {
  VDevice cuda = make_vdevice("cuda"), llvm = make_vdevice("llvm");
  EXPECT_EQ(tensor(infer(op::add(on("a", {2, 3}, cuda), tvar("b", {3})))).vdevice.get(),
            cuda.get());
  EXPECT_EQ(tensor(infer(op::add(tvar("a", {2, 3}), on("b", {3}, cuda)))).vdevice.get(),
            cuda.get());
  EXPECT_EQ(tensor(infer(op::exp(on("a", {2}, cuda)))).vdevice.get(), cuda.get());
  EXPECT_EQ(tensor(infer(op::matmul(on("a", {2, 3}, cuda), on("b", {3, 4}, make_vdevice("cuda")))))
                .vdevice.get(),
            cuda.get());
  Var a = on("a", {2}, cuda), b = on("b", {3}, cuda);
  Expr pair = with(make<TupleNode>(std::vector<Expr>{a, b}),
                   tuple_sinfo({a->struct_info_, b->struct_info_}));
  EXPECT_EQ(tensor(infer(make_call("relax.concat", {pair}, {{"axis", int64_t(0)}}))).vdevice.get(),
            cuda.get());
  EXPECT_FALSE(tensor(infer(op::add(tvar("a", {2}), tvar("b", {2})))).vdevice);
  // Every field of a tuple result is placed.
  StructInfo parts = infer(op::split(on("a", {4}, cuda), 2));
  for (const auto& f : parts.as<TupleStructInfoNode>()->fields)
    EXPECT_EQ(tensor(f).vdevice.get(), cuda.get());
  // A copy's destination is not overridden by its source's device.
  EXPECT_EQ(tensor(infer(op::to_vdevice(on("a", {2}, llvm), cuda))).vdevice.get(), cuda.get());
  // Operands on two devices cannot meet (TVM refuses this for binary operators).
  std::string msg = error_of([&] { infer(op::add(on("a", {2}, cuda), on("b", {2}, llvm))); });
  EXPECT_EQ(msg,
            "relax.add: operands are on different devices: cuda device 0 (memory scope \"global\") "
            "and llvm "
            "device 0 (memory scope \"global\"); copy one with R.to_vdevice");
  EXPECT_NE(error_of([&] {
              infer(op::add(on("a", {2}, cuda), on("b", {2}, make_vdevice("cuda", 1))));
            }).find("operands are on different devices"),
            std::string::npos);
}

TEST(Device, Traits) {
  for (const char* name : {"relax.to_vdevice", "relax.hint_on_device"}) {
    const OpDef& def = get_op_def(name);
    EXPECT_EQ(def.fusion_kind, FusionKind::Opaque) << name;
    EXPECT_TRUE(def.pure) << name;
  }
  Expr copy = op::to_vdevice(tvar("x", {2, 3}), make_vdevice("cuda"));
  copy->struct_info_ = infer(copy);
  EXPECT_EQ(as_const_int(*call_flops(*copy.as<CallNode>())), 0);
  EXPECT_EQ(as_const_int(*call_bytes(*copy.as<CallNode>())), 2 * 2 * 3 * 4);  // read + write
}

TEST(Device, HostKernels) {
  auto to_vdevice = runtime::find_kernel("relax.to_vdevice");
  auto hint = runtime::find_kernel("relax.hint_on_device");
  ASSERT_NE(to_vdevice, nullptr);
  ASSERT_NE(hint, nullptr);
  Tensor in = Tensor::empty({2, 2}, f32);
  for (int i = 0; i < 4; ++i) in.data_as<float>()[i] = float(i) + 0.5f;
  Tensor out = Tensor::empty({2, 2}, f32);
  runtime::KernelAttrs cpu;
  cpu.values["dst_vdevice"] = std::vector<int64_t>{1, 0};
  to_vdevice(std::span<const Tensor>(&in, 1), cpu, std::span<Tensor>(&out, 1));
  for (int i = 0; i < 4; ++i) EXPECT_EQ(out.data_as<float>()[i], float(i) + 0.5f);
  EXPECT_NE(out.data(), in.data());
  Tensor out2 = Tensor::empty({2, 2}, f32);
  hint(std::span<const Tensor>(&in, 1), {}, std::span<Tensor>(&out2, 1));
  EXPECT_EQ(out2.data_as<float>()[3], 3.5f);
}

}  // namespace
}  // namespace partita::op::testing
