// Prints and parses a module with 100,000 bindings and reports the throughput.
//   ./build/bench_script [num_bindings]
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>

#include "partita/op/registry.h"
#include "partita/script/parser.h"
#include "partita/script/printer.h"

using namespace partita;

int main(int argc, char** argv) {
  int n = argc > 1 ? std::atoi(argv[1]) : 100000;
  StructInfo sinfo = tensor_sinfo(std::vector<int64_t>{16, 16}, DataType::Float(32));
  Var x = make<VarNode>("x", sinfo);
  Var y = make<VarNode>("y", sinfo);
  std::vector<Binding> bindings;
  bindings.reserve(size_t(n));
  Expr prev = x;
  const char* ops[] = {"relax.add", "relax.multiply", "relax.subtract"};
  for (int i = 0; i < n; ++i) {
    Call c = op::make_call(ops[i % 3], {prev, i % 2 ? Expr(y) : Expr(x)});
    c->struct_info_ = op::infer_struct_info(*c);
    // Every binding has the same hint, the worst case for unique naming.
    Var v = i + 1 == n ? make<VarNode>("gv", sinfo) : Var(make<DataflowVarNode>("lv", sinfo));
    bindings.push_back(make<VarBindingNode>(v, c));
    prev = v;
  }
  auto block = make<BindingBlockNode>(std::move(bindings), true);
  auto seq = make<SeqExprNode>(std::vector<BindingBlock>{block}, prev);
  DictAttrs attrs{{"global_symbol", std::string("main")}};
  auto fn = make<FunctionNode>(std::vector<Var>{x, y}, seq, sinfo, true, attrs);
  IRModule mod = IRModule::create();
  mod.add(make<GlobalVarNode>("main"), fn);

  using clock = std::chrono::steady_clock;
  auto cpu = [] { return double(std::clock()) / CLOCKS_PER_SEC; };
  double c0 = cpu();
  auto t0 = clock::now();
  std::string text = script::print_module(mod);
  auto t1 = clock::now();
  double c1 = cpu();
  IRModule parsed = script::parse_module(text);
  auto t2 = clock::now();
  double c2 = cpu();
  std::string again = script::print_module(parsed);
  double print_s = std::chrono::duration<double>(t1 - t0).count();
  double parse_s = std::chrono::duration<double>(t2 - t1).count();
  std::printf("bindings: %d, text: %.1f MB\n", n, text.size() / 1e6);
  std::printf("print: %.3f s (%.0f bindings/s)\n", print_s, n / print_s);
  std::printf("parse: %.3f s (%.0f bindings/s)\n", parse_s, n / parse_s);
  std::printf("cpu time: print %.3f s, parse %.3f s\n", c1 - c0, c2 - c1);
  std::printf("round trip identical: %s\n", again == text ? "yes" : "NO");
  return again == text ? 0 : 1;
}
