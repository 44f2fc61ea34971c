// Virtual devices in the text format: I.module_global_infos / I.vdevice, R.Tensor(...,
// vdevice=...), R.to_vdevice and R.hint_on_device — printed exactly as TVM prints them, parsed
// in every spelling TVM's parser accepts, and round-tripped.
#include <gtest/gtest.h>

#include "partita/ir/structural_equal.h"
#include "partita/op/registry.h"
#include "partita/script/parser.h"
#include "partita/script/printer.h"
#include "partita/support/error.h"

namespace partita::script {
namespace {

const FunctionNode& func(const IRModule& mod, const std::string& name) {
  return *mod->functions.at(name).second.as<FunctionNode>();
}
const Binding& binding(const IRModule& mod, const std::string& fn, size_t i) {
  return func(mod, fn).body.as<SeqExprNode>()->blocks[0]->bindings[i];
}
const TensorStructInfoNode& tensor(const StructInfo& s) { return *s.as<TensorStructInfoNode>(); }

// TVM's printed form (its printer sorts the target dictionary, counts a vdevice's index among
// the vdevices of its kind, and since TVM 0.23 appends the memory scope).
const char* kPrinted = R"(# from partita.script import ir as I
# from partita.script import relax as R

@I.ir_module
class Module:
    I.module_global_infos({"vdevice": [I.vdevice({"keys": ["cpu"], "kind": "llvm", "tag": ""}, 0, "global"), I.vdevice({"keys": ["cuda", "gpu"], "kind": "cuda", "max_num_threads": 1024, "tag": "", "thread_warp_size": 32}, 0, "global"), I.vdevice({"arch": "sm_80", "keys": ["cuda", "gpu"], "kind": "cuda", "max_num_threads": 1024, "tag": "", "thread_warp_size": 32}, 1, "global.texture")]})
    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32", vdevice="llvm:0:global"), y: R.Tensor(dtype="float32", ndim=2, vdevice="cuda:1:global.texture")) -> R.Tensor((2, 3), dtype="float32", vdevice="cuda:0:global"):
        with R.dataflow():
            lv: R.Tensor((2, 3), dtype="float32", vdevice="cuda:0:global") = R.to_vdevice(x, dst_vdevice="cuda:0:global")
            lv1: R.Tensor((2, 3), dtype="float32", vdevice="cuda:0:global") = R.hint_on_device(lv, R.device(device_type=2, index=0), "global")
            gv: R.Tensor((2, 3), dtype="float32", vdevice="cuda:0:global") = R.multiply(lv1, lv1)
            R.output(gv)
        return gv)";

TEST(VDeviceScript, PrintsAndParsesAsTvm) {
  IRModule mod = parse_module(kPrinted);
  EXPECT_EQ(print_module(mod), kPrinted);
  IRModule again = parse_module(print_module(mod));
  EXPECT_TRUE(structural_equal(mod, again)) << structural_diff(mod, again).value_or("");

  std::vector<VDevice> vdevices = mod.vdevices();
  ASSERT_EQ(vdevices.size(), 3u);
  EXPECT_EQ(vdevices[2]->target->kind, "cuda");
  EXPECT_EQ(vdevices[2]->vdevice_id, 1);
  EXPECT_EQ(vdevices[2]->memory_scope, "global.texture");
  // Annotations point at the module's own vdevice objects.
  const FunctionNode& f = func(mod, "main");
  EXPECT_EQ(tensor(f.params[0]->struct_info_).vdevice.get(), vdevices[0].get());
  EXPECT_EQ(tensor(f.params[1]->struct_info_).vdevice.get(), vdevices[2].get());
  const auto* copy = binding_value(*binding(mod, "main", 0)).as<CallNode>();
  ASSERT_NE(copy, nullptr);
  EXPECT_EQ(std::get<VDevice>(*copy->attrs->find("dst_vdevice")).get(), vdevices[1].get());
  const auto* hint = binding_value(*binding(mod, "main", 1)).as<CallNode>();
  EXPECT_EQ(std::get<int64_t>(*hint->attrs->find("device_type")), 2);
  EXPECT_EQ(std::get<std::string>(*hint->attrs->find("memory_scope")), "global");
}

// The spellings TVM's parser accepts, as TVM's tests write them.
const char* kTvmSpellings = R"(
@I.ir_module
class Module:
    I.module_global_infos(
        {
            "vdevice": [
                I.vdevice("llvm"),
                I.vdevice("cuda", 0),
                I.vdevice("metal", 0, "global"),
                I.vdevice({"kind": "cuda", "arch": "sm_80"}, 0),
                I.vdevice("cuda -arch=sm_90 -max_num_threads=512", memory_scope="shared"),
            ]
        }
    )

    @R.function
    def foo(x: R.Tensor((2, 3), "float32", "llvm"), y: R.Tensor((2, 3), "float32", "cuda:1"), z: R.Tensor((2, 3), "float32", vdevice="vdevice:2")) -> R.Tensor((2, 3), "float32", "cuda"):
        with R.dataflow():
            a = R.hint_on_device(x, tvm.cpu())
            b = R.hint_on_device(y, R.cuda(1))
            c = R.hint_on_device(z, R.device(8, 0))
            d = R.hint_on_device(z, R.device("metal:0"), "global")
            e = R.hint_on_device(a, tvm.cuda(0), memory_scope="shared")
            f = R.to_vdevice(a, "cuda")
            g = R.to_vdevice(b, dst_vdevice="cuda:2:shared")
            R.output(f)
        return f
)";

TEST(VDeviceScript, ParsesTvmSpellings) {
  IRModule mod = parse_module(kTvmSpellings);
  std::vector<VDevice> v = mod.vdevices();
  ASSERT_EQ(v.size(), 5u);
  EXPECT_EQ(v[1]->target->keys, (std::vector<std::string>{"cuda", "gpu"}));
  EXPECT_EQ(std::get<std::string>(v[3]->target->attrs.at("arch")), "sm_80");
  EXPECT_EQ(std::get<int64_t>(v[4]->target->attrs.at("max_num_threads")), 512);
  EXPECT_EQ(v[4]->memory_scope, "shared");
  EXPECT_EQ(v[2]->target->kind, "metal");

  const FunctionNode& f = func(mod, "foo");
  EXPECT_EQ(tensor(f.params[0]->struct_info_).vdevice.get(), v[0].get());
  EXPECT_EQ(tensor(f.params[1]->struct_info_).vdevice.get(), v[3].get());  // second cuda
  EXPECT_EQ(tensor(f.params[2]->struct_info_).vdevice.get(), v[2].get());  // third of the list
  EXPECT_EQ(tensor(f.ret_struct_info).vdevice.get(), v[1].get());

  auto device_of = [&](size_t i) {
    const auto& c = *binding_value(*binding(mod, "foo", i)).as<CallNode>();
    return std::make_pair(std::get<int64_t>(*c.attrs->find("device_type")),
                          std::get<int64_t>(*c.attrs->find("index")));
  };
  EXPECT_EQ(device_of(0), std::make_pair(int64_t(1), int64_t(0)));
  EXPECT_EQ(device_of(1), std::make_pair(int64_t(2), int64_t(1)));
  EXPECT_EQ(device_of(2), std::make_pair(int64_t(8), int64_t(0)));
  EXPECT_EQ(device_of(3), std::make_pair(int64_t(8), int64_t(0)));
  const auto& e = *binding_value(*binding(mod, "foo", 4)).as<CallNode>();
  EXPECT_EQ(std::get<std::string>(*e.attrs->find("memory_scope")), "shared");
  const auto& g = *binding_value(*binding(mod, "foo", 6)).as<CallNode>();
  EXPECT_EQ(std::get<VDevice>(*g.attrs->find("dst_vdevice")).get(), v[4].get());
  // to_vdevice's result is on the destination; hint_on_device changes nothing.
  EXPECT_EQ(tensor(binding(mod, "foo", 5)->var->struct_info_).vdevice.get(), v[1].get());
  EXPECT_EQ(tensor(binding(mod, "foo", 1)->var->struct_info_).vdevice.get(), v[3].get());

  // Printing uses TVM's canonical spelling; the reparse is the same module.
  std::string text = print_module(mod);
  EXPECT_NE(text.find("y: R.Tensor((2, 3), dtype=\"float32\", vdevice=\"cuda:1:global\")"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("z: R.Tensor((2, 3), dtype=\"float32\", vdevice=\"metal:0:global\")"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("R.hint_on_device(x, R.device(device_type=1, index=0), \"global\")"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("R.to_vdevice(b, dst_vdevice=\"cuda:2:shared\")"), std::string::npos) << text;
  EXPECT_NE(
      text.find(
          "I.vdevice({\"arch\": \"sm_90\", \"keys\": [\"cuda\", \"gpu\"], \"kind\": \"cuda\", "
          "\"max_num_threads\": 512, \"tag\": \"\", \"thread_warp_size\": 32}, 0, \"shared\")"),
      std::string::npos)
      << text;
  IRModule back = parse_module(text);
  EXPECT_TRUE(structural_equal(mod, back)) << structural_diff(mod, back).value_or("");
  EXPECT_EQ(print_module(back), text);
}

TEST(VDeviceScript, TargetDictionaryFormsRoundTrip) {
  const char* text = R"(
@I.ir_module
class Module:
    I.module_global_infos({"vdevice": [I.vdevice({"kind": "opencl", "device": "adreno"}, 0, "global.texture-weight"), I.vdevice({"kind": "cuda", "keys": ["cuda", "gpu", "tensorcore"], "host": {"kind": "llvm", "mcpu": "skylake"}, "libs": ["cublas"], "l2_cache_size_bytes": 52428800}, 0), I.vdevice(target="c", vdevice_id=3), I.vdevice({"kind": "webgpu", "supports_subgroups": True})]})
    @R.function
    def main(x: R.Tensor((4,), "float32", "opencl:0:global.texture-weight")) -> R.Tensor((4,), "float32", "opencl:0:global.texture-weight"):
        return x
)";
  IRModule mod = parse_module(text);
  std::vector<VDevice> v = mod.vdevices();
  ASSERT_EQ(v.size(), 4u);
  EXPECT_EQ(v[0]->target->keys, (std::vector<std::string>{"adreno", "opencl", "gpu"}));
  EXPECT_EQ(v[1]->target->keys, (std::vector<std::string>{"cuda", "gpu", "tensorcore"}));
  ASSERT_TRUE(v[1]->target->host.defined());
  EXPECT_EQ(v[1]->target->host->kind, "llvm");
  EXPECT_EQ(v[2]->vdevice_id, 3);
  std::string printed = print_module(mod);
  EXPECT_NE(printed.find("I.vdevice({\"device\": \"adreno\", \"image_base_address_alignment\": 64, "
                         "\"keys\": [\"adreno\", "
                         "\"opencl\", \"gpu\"], \"kind\": \"opencl\""),
            std::string::npos)
      << printed;
  EXPECT_NE(printed.find("I.vdevice({\"host\": {\"keys\": [\"cpu\"], \"kind\": \"llvm\", \"mcpu\": "
                         "\"skylake\", \"tag\": \"\"}, "
                         "\"keys\": [\"cuda\", \"gpu\", \"tensorcore\"], \"kind\": \"cuda\", "
                         "\"l2_cache_size_bytes\": 52428800, "
                         "\"libs\": [\"cublas\"], \"max_num_threads\": 1024"),
            std::string::npos)
      << printed;
  EXPECT_NE(printed.find("\"supports_subgroups\": True"), std::string::npos) << printed;
  EXPECT_NE(printed.find(
                "I.vdevice({\"keys\": [\"cpu\"], \"kind\": \"c\", \"tag\": \"\"}, 3, \"global\")"),
            std::string::npos)
      << printed;
  IRModule back = parse_module(printed);
  EXPECT_TRUE(structural_equal(mod, back)) << structural_diff(mod, back).value_or("");
  EXPECT_EQ(print_module(back), printed);
}

TEST(VDeviceScript, StandaloneNodesPrintLikeTvm) {
  // Outside a module no vdevice list is known: TVM prints index -1 there.
  VDevice cuda = make_vdevice("cuda");
  StructInfo s = make<TensorStructInfoNode>(DataType::Float(16), -1, cuda);
  EXPECT_EQ(print_expr(s), "R.Tensor(dtype=\"float16\", vdevice=\"cuda:-1:global\")");
  EXPECT_EQ(print_expr(make<TensorStructInfoNode>(DataType::Void(), -1, cuda)),
            "R.Tensor(vdevice=\"cuda:-1:global\")");
  EXPECT_EQ(print_expr(cuda),
            "I.vdevice({\"keys\": [\"cuda\", \"gpu\"], \"kind\": \"cuda\", \"max_num_threads\": "
            "1024, \"tag\": \"\", "
            "\"thread_warp_size\": 32}, 0, \"global\")");
  // An equal vdevice that is not the list's own object is still named by its place in the list.
  IRModule mod = IRModule::create();
  mod.update_global_info("vdevice",
                         {make_vdevice("llvm"), make_vdevice("cuda"), make_vdevice("cuda", 1)});
  Var x =
      make<VarNode>("x", make<TensorStructInfoNode>(std::vector<PrimExpr>{int_imm(2)},
                                                    DataType::Float(32), make_vdevice("cuda", 1)));
  auto seq = make<SeqExprNode>(std::vector<BindingBlock>{}, x);
  mod.add(make<GlobalVarNode>("main"),
          make<FunctionNode>(std::vector<Var>{x}, seq, x->struct_info_, true,
                             DictAttrs{{"global_symbol", std::string("main")}}));
  std::string text = print_module(mod);
  EXPECT_NE(text.find("vdevice=\"cuda:1:global\""), std::string::npos) << text;
  IRModule back = parse_module(text);
  EXPECT_TRUE(structural_equal(mod, back)) << structural_diff(mod, back).value_or("");
}

TEST(VDeviceScript, ModuleWithOnlyGlobalInfos) {
  IRModule mod = IRModule::create();
  mod.update_global_info("vdevice", {make_vdevice("llvm")});
  std::string text = print_module(mod);
  EXPECT_EQ(text,
            "# from partita.script import ir as I\n# from partita.script import relax as "
            "R\n\n@I.ir_module\nclass "
            "Module:\n    I.module_global_infos({\"vdevice\": [I.vdevice({\"keys\": [\"cpu\"], "
            "\"kind\": \"llvm\", "
            "\"tag\": \"\"}, 0, \"global\")]})");
  EXPECT_TRUE(structural_equal(parse_module(text), mod));
}

void expect_parse_error(const std::string& body, const std::string& needle,
                        const std::string& infos =
                            "I.module_global_infos({\"vdevice\": [I.vdevice(\"llvm\"), "
                            "I.vdevice(\"cuda\", 0, \"global\")]})") {
  std::string text =
      "@I.ir_module\nclass Module:\n" + (infos.empty() ? std::string() : "    " + infos + "\n") +
      "    @R.function\n    def main(x: R.Tensor((2,), \"float32\", \"llvm\")):\n" + body;
  try {
    parse_module(text);
    ADD_FAILURE() << "no error for:\n" << text;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), "ParseError") << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(VDeviceScript, Errors) {
  const std::string ret = "        return x\n";
  expect_parse_error(
      "        y: R.Tensor((2,), \"float32\", \"cuda:1\") = x\n" + ret,
      "vdevice \"cuda:1\" is not among the module's vdevices (llvm:0:global, cuda:0:global)");
  expect_parse_error("        y = R.to_vdevice(x, \"cuda:0:shared\")\n" + ret,
                     "that device has memory scope \"global\", not \"shared\"");
  expect_parse_error("        y = R.to_vdevice(x, \"cuda:x\")\n" + ret,
                     "'x' is not a device index");
  expect_parse_error(ret, "the module declares no vdevices", "");
  expect_parse_error(ret, "unknown target kind 'gpu' (known kinds: c, cuda, ext_dev",
                     "I.module_global_infos({\"vdevice\": [I.vdevice(\"gpu\")]})");
  expect_parse_error(ret, "option 'arch=sm_80' must be written -name=value",
                     "I.module_global_infos({\"vdevice\": [I.vdevice(\"cuda arch=sm_80\")]})");
  expect_parse_error(ret, "attribute \"max_num_threads\" must be an integer, not a string",
                     "I.module_global_infos({\"vdevice\": [I.vdevice({\"kind\": \"cuda\", "
                     "\"max_num_threads\": \"x\"})]})");
  expect_parse_error(ret, "no \"kind\" entry",
                     "I.module_global_infos({\"vdevice\": [I.vdevice({\"arch\": \"sm_80\"})]})");
  expect_parse_error(
      ret, "target 'cuda': unknown option \"ratio\"",
      "I.module_global_infos({\"vdevice\": [I.vdevice({\"kind\": \"cuda\", \"ratio\": 5})]})");
  expect_parse_error(
      ret, "a list must hold strings",
      "I.module_global_infos({\"vdevice\": [I.vdevice({\"kind\": \"cuda\", \"libs\": [1]})]})");
  expect_parse_error(ret, "unsupported global info \"mesh\"",
                     "I.module_global_infos({\"mesh\": []})");
  expect_parse_error("        y = R.hint_on_device(x, R.gpu(0))\n" + ret,
                     "unknown device function 'R.gpu'");
  expect_parse_error("        y = R.hint_on_device(x, R.device(\"tpu\", 0))\n" + ret,
                     "unknown device \"tpu\"");
  expect_parse_error("        y = R.hint_on_device(x)\n" + ret,
                     "R.hint_on_device needs data and a device");
  expect_parse_error("        y = R.to_vdevice(R.prim_value(1), \"llvm\")\n" + ret,
                     "must be a Tensor");
  expect_parse_error("        y = R.to_vdevice(x, \"cuda\", \"llvm\")\n" + ret,
                     "R.to_vdevice takes 2 arguments");
  // Operands on two devices cannot meet in one operator.
  expect_parse_error("        y = R.to_vdevice(x, \"cuda\")\n        z = R.add(x, y)\n" + ret,
                     "operands are on different devices: llvm device 0 (memory scope \"global\") "
                     "and cuda device 0");
}

TEST(VDeviceScript, GlobalInfosGivenTwice) {
  const char* text = R"(
@I.ir_module
class Module:
    I.module_global_infos({"vdevice": [I.vdevice("llvm")]})
    I.module_global_infos({"vdevice": [I.vdevice("llvm")]})
)";
  try {
    parse_module(text);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("I.module_global_infos is given twice"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace partita::script
