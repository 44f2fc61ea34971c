// Virtual devices in the IR: targets as data (TVM's defaults, string and dictionary forms),
// VDevice in TensorStructInfo (equality, hashing, subsumption, erasure, unification), module
// global infos, and how TVMScript names a vdevice.
#include <gtest/gtest.h>

#include "partita/ir/analysis.h"
#include "partita/ir/module.h"
#include "partita/ir/structural_equal.h"
#include "partita/support/error.h"

namespace partita {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.kind() + ": " + e.message();
  }
  return "";
}

StructInfo t23(VDevice v = {}) {
  return make<TensorStructInfoNode>(std::vector<PrimExpr>{int_imm(2), int_imm(3)},
                                    DataType::Float(32), std::move(v));
}

TEST(Target, KindDefaultsAsTvm) {
  TargetDesc cuda = make_target("cuda");
  EXPECT_EQ(cuda->kind, "cuda");
  EXPECT_EQ(cuda->tag, "");
  EXPECT_EQ(cuda->keys, (std::vector<std::string>{"cuda", "gpu"}));
  EXPECT_EQ(std::get<int64_t>(cuda->attrs.at("max_num_threads")), 1024);
  EXPECT_EQ(std::get<int64_t>(cuda->attrs.at("thread_warp_size")), 32);
  EXPECT_EQ(cuda->attrs.size(), 2u);  // "arch" is machine-detected in TVM: only when given
  EXPECT_EQ(target_device_type(*cuda), 2);
  TargetDesc llvm = make_target("llvm");
  EXPECT_EQ(llvm->keys, (std::vector<std::string>{"cpu"}));
  EXPECT_TRUE(llvm->attrs.empty());
  EXPECT_EQ(target_device_type(*llvm), 1);
  EXPECT_EQ(target_device_type(*make_target("metal")), 8);
  EXPECT_EQ(std::get<int64_t>(make_target("metal")->attrs.at("thread_warp_size")), 16);
  EXPECT_EQ(target_device_type(*make_target("opencl")), 4);
  EXPECT_EQ(target_device_type(*make_target("vulkan")), 7);
  EXPECT_EQ(target_device_type(*make_target("rocm")), 10);
  EXPECT_EQ(target_device_type(*make_target("llvm -target_device_type=2")), 2);
}

TEST(Target, StringForm) {
  TargetDesc t = make_target("cuda -arch=sm_80 -max_num_threads=512 -libs=cublas,cudnn");
  EXPECT_EQ(std::get<std::string>(t->attrs.at("arch")), "sm_80");
  EXPECT_EQ(std::get<int64_t>(t->attrs.at("max_num_threads")), 512);
  EXPECT_EQ(std::get<std::vector<std::string>>(t->attrs.at("libs")),
            (std::vector<std::string>{"cublas", "cudnn"}));
  EXPECT_EQ(std::get<int64_t>(t->attrs.at("thread_warp_size")), 32);  // default still filled
  // Values take their option's type: "-mcpu=1234" stays a string, a bare flag is true.
  TargetDesc k =
      make_target("llvm -keys=arm_cpu,cpu -mattr=+neon -mcpu=1234 -num-cores=4 --fast-math");
  EXPECT_EQ(k->keys, (std::vector<std::string>{"arm_cpu", "cpu"}));
  EXPECT_EQ(std::get<std::vector<std::string>>(k->attrs.at("mattr")),
            (std::vector<std::string>{"+neon"}));
  EXPECT_EQ(std::get<std::string>(k->attrs.at("mcpu")), "1234");
  EXPECT_EQ(std::get<int64_t>(k->attrs.at("num-cores")), 4);
  EXPECT_EQ(std::get<bool>(k->attrs.at("fast-math")), true);
  EXPECT_NE(error_of([] { make_target(""); }).find("the target string is empty"),
            std::string::npos);
  EXPECT_NE(error_of([] { make_target("cuda -=3"); }).find("has no name"), std::string::npos);
  EXPECT_NE(error_of([] {
              make_target("llvm -num-cores=four");
            }).find("option -num-cores takes an integer"),
            std::string::npos);
  EXPECT_NE(error_of([] { make_target("llvm -fast-math=maybe"); }).find("takes true or false"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              make_target("cuda -archh=sm_80");
            }).find("unknown option \"archh\" (options: host, arch,"),
            std::string::npos);
  EXPECT_NE(
      error_of([] { make_target("tpu"); }).find("unknown target kind 'tpu' (known kinds: c, cuda,"),
      std::string::npos);
}

TEST(Target, DictionaryForm) {
  TargetConfig c{{"kind", std::string("opencl")}, {"device", std::string("adreno")}};
  TargetDesc t = make_target(c);
  EXPECT_EQ(t->keys,
            (std::vector<std::string>{"adreno", "opencl", "gpu"}));  // TVM: device key first
  EXPECT_EQ(std::get<std::string>(t->attrs.at("device")), "adreno");
  // Given keys replace the defaults (duplicates dropped); the exported config parses back equal.
  TargetDesc k = make_target(TargetConfig{{"kind", std::string("cuda")},
                                          {"keys", std::vector<std::string>{"cuda", "cuda", "x"}}});
  EXPECT_EQ(k->keys, (std::vector<std::string>{"cuda", "x"}));
  EXPECT_TRUE(structural_equal(make_target(target_to_config(*k)), k));
  EXPECT_TRUE(structural_equal(make_target(target_to_config(*t)), t));
  TargetDesc h =
      make_target(TargetConfig{{"kind", std::string("cuda")}, {"host", std::string("llvm")}});
  ASSERT_TRUE(h->host.defined());
  EXPECT_EQ(h->host->keys, (std::vector<std::string>{"cpu"}));
  EXPECT_NE(error_of([] {
              make_target(TargetConfig{{"arch", std::string("sm_80")}});
            }).find("no \"kind\" entry"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              make_target(TargetConfig{{"kind", int64_t(3)}});
            }).find("\"kind\" must be a string"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              make_target(TargetConfig{{"kind", std::string("cuda")}, {"thread_warp_size", true}});
            }).find("attribute \"thread_warp_size\" must be an integer, not a bool"),
            std::string::npos);
  EXPECT_NE(
      error_of([] {
        make_target(TargetConfig{{"kind", std::string("cuda")}, {"keys", std::string("cuda")}});
      }).find("\"keys\" must be a list of strings"),
      std::string::npos);
  EXPECT_NE(error_of([] {
              make_target(TargetConfig{{"kind", std::string("cuda")}, {"fast", true}});
            }).find("target 'cuda': unknown option \"fast\""),
            std::string::npos);
  EXPECT_NE(error_of([] {
              make_target(TargetConfig{{"kind", std::string("cuda")}, {"from_device", int64_t(0)}});
            }).find("\"from_device\""),
            std::string::npos);
  // Options every kind takes.
  TargetDesc m = make_target(TargetConfig{{"kind", std::string("llvm")},
                                          {"model", std::string("m1")},
                                          {"libs", std::vector<std::string>{"mkl"}}});
  EXPECT_EQ(std::get<std::string>(m->attrs.at("model")), "m1");
}

TEST(VDevice, StructuralEqualityAndHash) {
  VDevice a = make_vdevice("cuda"), a2 = make_vdevice("cuda"), b = make_vdevice("cuda", 1),
          c = make_vdevice("cuda", 0, "shared"), d = make_vdevice("cuda -arch=sm_80");
  EXPECT_TRUE(structural_equal(a, a2));
  EXPECT_EQ(structural_hash(a), structural_hash(a2));
  for (const VDevice& other : {b, c, d}) {
    EXPECT_FALSE(structural_equal(a, other));
    EXPECT_NE(structural_hash(a), structural_hash(other));
  }
  // The vdevice is part of a tensor's struct info, as in TVM.
  EXPECT_TRUE(structural_equal(t23(a), t23(a2)));
  EXPECT_EQ(structural_hash(t23(a)), structural_hash(t23(a2)));
  EXPECT_FALSE(structural_equal(t23(a), t23()));
  EXPECT_FALSE(structural_equal(t23(a), t23(b)));
  EXPECT_NE(structural_hash(t23(a)), structural_hash(t23()));
  auto diff = structural_diff(t23(a), t23(b));
  ASSERT_TRUE(diff.has_value());
  EXPECT_NE(diff->find(".vdevice.vdevice_id"), std::string::npos) << *diff;
  // Source compatibility: constructing without a vdevice gives none.
  EXPECT_FALSE(tensor_sinfo(std::vector<int64_t>{2}, DataType::Float(32))
                   .as<TensorStructInfoNode>()
                   ->vdevice);
}

TEST(VDevice, SubsumptionAsTvm) {
  VDevice cuda = make_vdevice("cuda"), llvm = make_vdevice("llvm");
  // No device says nothing: it is a base of every device.
  EXPECT_EQ(struct_info_base_check(t23(), t23(cuda)), BaseCheckResult::Pass);
  // A device the derived info does not know: statically not provable (TVM's kFailL1).
  EXPECT_EQ(struct_info_base_check(t23(cuda), t23()), BaseCheckResult::FailL1);
  // Two different devices never fit (kFailL0); equal ones fit even as different objects.
  EXPECT_EQ(struct_info_base_check(t23(cuda), t23(llvm)), BaseCheckResult::FailL0);
  EXPECT_EQ(struct_info_base_check(t23(cuda), t23(make_vdevice("cuda"))), BaseCheckResult::Pass);
  EXPECT_EQ(
      struct_info_base_check(make<TensorStructInfoNode>(DataType::Float(32), 2, cuda), t23(cuda)),
      BaseCheckResult::Pass);
}

TEST(VDevice, ErasureAndUnification) {
  VDevice cuda = make_vdevice("cuda"), llvm = make_vdevice("llvm");
  PrimVar n = make<PrimVarNode>("n");
  StructInfo sym =
      make<TensorStructInfoNode>(std::vector<PrimExpr>{n, int_imm(3)}, DataType::Float(32), cuda);
  // Erasing an undefined symbolic shape keeps the device (TVM's EraseToWellDefined).
  const StructInfo erased_info = erase_to_well_defined(sym);  // kept: `erased` points into it
  const auto* erased = erased_info.as<TensorStructInfoNode>();
  ASSERT_NE(erased, nullptr);
  EXPECT_FALSE(erased->shape.has_value());
  EXPECT_EQ(erased->ndim, 2);
  EXPECT_EQ(erased->vdevice.get(), cuda.get());
  PrimVarMap bind{{n, int_imm(7)}};
  EXPECT_EQ(erase_to_well_defined(sym, bind).as<TensorStructInfoNode>()->vdevice.get(), cuda.get());
  EXPECT_EQ(bind_struct_info(sym, bind).as<TensorStructInfoNode>()->vdevice.get(), cuda.get());
  // The least common ancestor keeps a device both sides share, and only then.
  EXPECT_TRUE(structural_equal(struct_info_lca(t23(cuda), t23(make_vdevice("cuda"))), t23(cuda)));
  EXPECT_TRUE(structural_equal(struct_info_lca(t23(cuda), t23(llvm)), t23()));
  EXPECT_TRUE(structural_equal(struct_info_lca(t23(cuda), t23()), t23()));
  StructInfo other_shape = make<TensorStructInfoNode>(std::vector<PrimExpr>{int_imm(4), int_imm(3)},
                                                      DataType::Float(32), cuda);
  EXPECT_TRUE(structural_equal(struct_info_lca(t23(cuda), other_shape),
                               make<TensorStructInfoNode>(DataType::Float(32), 2, cuda)));
  EXPECT_TRUE(
      structural_equal(struct_info_lca(t23(cuda), tensor_sinfo_ndim(DataType::Float(32), 3)),
                       tensor_sinfo_ndim(DataType::Float(32), -1)));
}

TEST(VDevice, ModuleGlobalInfos) {
  IRModule m = IRModule::create();
  EXPECT_TRUE(m.vdevices().empty());
  EXPECT_TRUE(m.global_infos("vdevice").empty());
  IRModule shared = m;
  m.update_global_info("vdevice", {make_vdevice("llvm"), make_vdevice("cuda")});
  EXPECT_EQ(m.vdevices().size(), 2u);
  EXPECT_TRUE(shared->global_infos.empty());  // copy on write
  // Global infos take part in module equality.
  IRModule n = IRModule::create();
  EXPECT_FALSE(structural_equal(m, n));
  n.update_global_info("vdevice", {make_vdevice("llvm"), make_vdevice("cuda")});
  EXPECT_TRUE(structural_equal(m, n));
  n.update_global_info("vdevice", {make_vdevice("cuda"), make_vdevice("llvm")});
  EXPECT_FALSE(structural_equal(m, n));  // the order is what "cuda:0" counts
  n.update_global_info("vdevice", {});
  EXPECT_TRUE(n->global_infos.empty());
  EXPECT_NE(
      error_of([&] { n.update_global_info("vdevice", {GlobalInfo()}); }).find("an entry is null"),
      std::string::npos);
}

TEST(VDevice, ScriptNames) {
  VDevice llvm = make_vdevice("llvm"), c0 = make_vdevice("cuda"),
          c1 = make_vdevice("cuda -arch=sm_80"), tex = make_vdevice("opencl", 0, "global.texture"),
          ocl = make_vdevice("opencl", 1);
  std::vector<GlobalInfo> list{llvm, c0, tex, c1, ocl};
  EXPECT_EQ(vdevice_script_name(llvm, list), "llvm:0:global");
  EXPECT_EQ(vdevice_script_name(c1, list), "cuda:1:global");
  EXPECT_EQ(vdevice_script_name(ocl, list), "opencl:1:global");
  EXPECT_EQ(vdevice_script_name(tex, list), "opencl:0:global.texture");
  EXPECT_EQ(vdevice_script_name(make_vdevice("cuda -arch=sm_80"), list),
            "cuda:1:global");  // equal, not same
  EXPECT_EQ(vdevice_script_name(make_vdevice("metal"), list), "metal:-1:global");
  // Two equal entries: identity decides which one a reference names.
  VDevice twin_a = make_vdevice("cuda"), twin_b = make_vdevice("cuda");
  std::vector<GlobalInfo> twins{twin_a, twin_b};
  EXPECT_EQ(vdevice_script_name(twin_b, twins), "cuda:1:global");

  EXPECT_EQ(lookup_vdevice("cuda", list).get(), c0.get());
  EXPECT_EQ(lookup_vdevice("cuda:1", list).get(), c1.get());
  EXPECT_EQ(lookup_vdevice("opencl:1:global", list).get(), ocl.get());
  EXPECT_EQ(lookup_vdevice("vdevice:2", list).get(), tex.get());
  EXPECT_EQ(lookup_vdevice("cuda:1:global", twins).get(), twin_b.get());
  EXPECT_NE(error_of([&] {
              lookup_vdevice("cuda:2", list);
            }).find("is not among the module's vdevices (llvm:0:global"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              lookup_vdevice("opencl:0:global", list);
            }).find("memory scope \"global.texture\""),
            std::string::npos);
  EXPECT_NE(error_of([&] { lookup_vdevice("cuda:-1", list); }).find("is not a device index"),
            std::string::npos);
  EXPECT_NE(error_of([&] { lookup_vdevice("vdevice:9", list); }).find("is not among"),
            std::string::npos);
  EXPECT_NE(error_of([&] { lookup_vdevice("cuda", {}); }).find("declares no vdevices"),
            std::string::npos);
}

TEST(VDevice, DeviceNames) {
  EXPECT_EQ(device_type_from_name("cpu"), 1);
  EXPECT_EQ(device_type_from_name("cuda"), 2);
  EXPECT_EQ(device_type_from_name("mps"), 8);
  EXPECT_EQ(device_type_from_name("tpu"), std::nullopt);
  EXPECT_EQ(device_type_name(10), "rocm");
  EXPECT_EQ(device_type_name(99), "device99");
}

}  // namespace
}  // namespace partita
