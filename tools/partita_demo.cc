// The main job until a runtime exists: the seed tutorial end to end in C++.
// Builds the one-multiply module with the BlockBuilder, canonicalizes it, partitions it through
// both composite paths, prints every module, and checks each survives print -> parse.
#include <iostream>

#include "partita/ir/analysis.h"
#include "partita/ir/block_builder.h"
#include "partita/ir/structural_equal.h"
#include "partita/op/registry.h"
#include "partita/script/parser.h"
#include "partita/script/printer.h"
#include "partita/transform/basic.h"
#include "partita/transform/pattern_registry.h"
#include "partita/support/error.h"

using namespace partita;

static IRModule build_seed_module() {
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

// Prints `mod` under `title` and checks that it is well formed and round-trips.
static bool show(const std::string& title, const IRModule& mod) {
  std::string text = script::print_module(mod);
  std::cout << "== " << title << "\n" << text << "\n\n";
  IRModule reparsed = script::parse_module(text);
  bool ok = well_formed(mod) && structural_equal(mod, reparsed) && script::print_module(reparsed) == text;
  std::cout << "   well formed, and print -> parse -> print round trip: " << (ok ? "ok" : "FAILED") << "\n\n";
  return ok;
}

int main() {
  try {
    IRModule mod = build_seed_module();
    bool ok = show("seed module (BlockBuilder + CanonicalizeBindings)", mod);
    ok &= show("path 1: FuseOpsByPattern(annotate_codegen=True)",
               transform::partition_for("cutlass", mod, /*merge=*/false));
    ok &= show("path 2: FuseOpsByPattern + MergeCompositeFunctions",
               transform::partition_for("cutlass", mod, /*merge=*/true));
    return ok ? 0 : 1;
  } catch (const Error& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
}
