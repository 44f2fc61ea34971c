// The main job: the seed tutorial end to end in C++.
// Builds the one-multiply module with the BlockBuilder, partitions it for the C-source backend
// (`ccompiler`) through both composite paths, prints each module, checks it round-trips through
// the text format, builds it, exports it to one file, loads it back and checks x * y exactly.
//   partita_demo [output-dir]   (artifacts: <dir>/seed_path1.partita, <dir>/seed_path2.partita)
#include <cstring>
#include <iostream>

#include "partita/codegen/build.h"
#include "partita/ir/analysis.h"
#include "partita/ir/block_builder.h"
#include "partita/ir/structural_equal.h"
#include "partita/op/registry.h"
#include "partita/runtime/vm.h"
#include "partita/script/parser.h"
#include "partita/script/printer.h"
#include "partita/support/error.h"
#include "partita/transform/basic.h"
#include "partita/transform/pattern_registry.h"

using namespace partita;

namespace {

IRModule build_seed_module() {
  auto sinfo = tensor_sinfo(std::vector<int64_t>{10, 10}, DataType::Float(32));
  Var x = make<VarNode>("x", sinfo), y = make<VarNode>("y", sinfo);
  BlockBuilder bb;
  bb.begin_function("main", {x, y});
  bb.begin_dataflow();
  Var lv0 = bb.emit(op::make_call("relax.multiply", {x, y}));
  Var gv = bb.emit_output(lv0);
  bb.end_dataflow();
  bb.emit_func_output(gv);
  return transform::CanonicalizeBindings()(bb.get());
}

// Prints `mod` under `title`; true when it is well formed and round-trips through the text.
bool show(const std::string& title, const IRModule& mod) {
  std::string text = script::print_module(mod);
  std::cout << "== " << title << "\n" << text << "\n";
  IRModule reparsed = script::parse_module(text);
  bool ok = well_formed(mod) && structural_equal(mod, reparsed) && script::print_module(reparsed) == text;
  std::cout << "-- well formed, print -> parse -> print round trip: " << (ok ? "ok" : "FAILED") << "\n";
  return ok;
}

Tensor filled(float start) {
  Tensor t = Tensor::empty({10, 10}, DataType::Float(32));
  for (int64_t i = 0; i < t.numel(); ++i) t.data_as<float>()[i] = start + 0.25f * float(i % 17);
  return t;
}

// Builds, exports, reloads and runs `mod`; true when the result is exactly x * y.
bool build_and_run(const IRModule& mod, const std::string& path) {
  auto exec = codegen::build(mod, codegen::BuildOptions({codegen::Target("llvm"), codegen::Target("ccompiler")}));
  exec->export_library(path);
  runtime::VirtualMachine vm(runtime::load_module(path));
  Tensor x = filled(1.0f), y = filled(-2.0f);
  Tensor out = vm.invoke("main", {x, y}).at(0);
  bool exact = true;
  for (int64_t i = 0; i < out.numel(); ++i)
    exact &= out.data_as<float>()[i] == x.data_as<float>()[i] * y.data_as<float>()[i];
  std::cout << "-- built (host VM + " << exec->external_modules.size() << " external module), exported to "
            << path << ", reloaded, ran: out[0] = " << out.data_as<float>()[0] << ", equals x * y exactly: "
            << (exact ? "yes" : "NO") << "\n\n";
  return exact;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir = argc > 1 ? argv[1] : ".";
  try {
    IRModule mod = build_seed_module();
    bool ok = show("seed module (BlockBuilder + CanonicalizeBindings)", mod);
    std::cout << "\n";
    for (bool merge : {false, true}) {
      std::string name = merge ? "path 2: FuseOpsByPattern + MergeCompositeFunctions"
                               : "path 1: FuseOpsByPattern(annotate_codegen=True)";
      IRModule part = transform::partition_for("ccompiler", mod, merge);
      ok &= show(name + ", backend ccompiler", part);
      ok &= build_and_run(part, dir + (merge ? "/seed_path2.partita" : "/seed_path1.partita"));
    }
    std::cout << (ok ? "all checks passed" : "SOME CHECKS FAILED") << "\n";
    return ok ? 0 : 1;
  } catch (const Error& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
}
