// Pass infrastructure: module/function passes, Sequential's opt-level rules, PassContext
// scoping and instruments.
#include <gtest/gtest.h>

#include "partita/support/error.h"
#include "partita/transform/pass.h"

namespace partita::transform {
namespace {

// A module pass that records its name into a log and adds nothing.
Pass logging_pass(const std::string& name, int opt_level, std::vector<std::string>* log,
                  bool required = false) {
  return create_module_pass(
      [name, log](IRModule mod, const PassContext&) {
        log->push_back(name);
        return mod;
      },
      opt_level, name, required);
}

Function trivial_function(const std::string& attr = "") {
  Var x = make<VarNode>("x", tensor_sinfo(std::vector<int64_t>{2}, DataType::Float(32)));
  DictAttrs attrs;
  if (!attr.empty()) attrs[attr] = std::string("ext");
  return make<FunctionNode>(std::vector<Var>{x}, x, x->struct_info_, true, attrs);
}

TEST(PassInfra, SequentialRespectsOptLevelRequiredAndDisabled) {
  std::vector<std::string> log;
  Pass seq = Sequential({logging_pass("a", 0, &log), logging_pass("b", 3, &log),
                         logging_pass("c", 3, &log, /*required=*/true), logging_pass("d", 1, &log),
                         logging_pass("e", 4, &log)});
  PassContext ctx;
  ctx.opt_level = 2;
  ctx.disabled_pass = {"d"};
  ctx.required_pass = {"e"};
  seq(IRModule::create(), ctx);
  EXPECT_EQ(log, (std::vector<std::string>{"a", "c", "e"}));

  log.clear();
  ctx.opt_level = 3;
  ctx.disabled_pass.clear();
  seq(IRModule::create(), ctx);
  EXPECT_EQ(log, (std::vector<std::string>{"a", "b", "c", "d", "e"}));
}

TEST(PassInfra, CurrentContextIsScoped) {
  std::vector<std::string> log;
  Pass seq = Sequential({logging_pass("high", 3, &log)});
  EXPECT_EQ(PassContext::current().opt_level, 2);
  seq(IRModule::create());
  EXPECT_TRUE(log.empty());
  {
    PassContext ctx;
    ctx.opt_level = 3;
    PassContext::Scope scope(ctx);
    EXPECT_EQ(&PassContext::current(), &ctx);
    seq(IRModule::create());
  }
  EXPECT_EQ(log, (std::vector<std::string>{"high"}));
  EXPECT_EQ(PassContext::current().opt_level, 2);
}

TEST(PassInfra, FunctionPassVisitsRelaxFunctionsOnly) {
  IRModule mod = IRModule::create();
  mod.add(make<GlobalVarNode>("f"), trivial_function());
  mod.add(make<GlobalVarNode>("ext"), make<ExternFuncNode>("ext_symbol"));
  mod.add(make<GlobalVarNode>("offloaded"), trivial_function("Compiler"));
  std::vector<std::string> seen;
  Pass p = create_function_pass(
      [&](Function f, IRModule, const PassContext&) {
        seen.push_back(f->params[0]->name_hint);
        return trivial_function("Touched");
      },
      0, "touch");
  IRModule out = p(mod);
  EXPECT_EQ(seen.size(), 1u);
  EXPECT_TRUE(out.lookup("f").as<FunctionNode>()->attrs.count("Touched"));
  EXPECT_FALSE(out.lookup("offloaded").as<FunctionNode>()->attrs.count("Touched"));
  // The input module is not changed (copy on write).
  EXPECT_FALSE(mod.lookup("f").as<FunctionNode>()->attrs.count("Touched"));
}

struct RecordingInstrument : PassInstrument {
  RecordingInstrument() : PassInstrument("Recording") {}
  std::vector<std::string> events;
  std::string skip;
  void enter_pass_ctx() override { events.push_back("enter"); }
  void exit_pass_ctx() override { events.push_back("exit"); }
  bool should_run(const IRModule&, const PassInfo& info) override { return info.name != skip; }
  void run_before_pass(const IRModule&, const PassInfo& info) override { events.push_back("before " + info.name); }
  void run_after_pass(const IRModule&, const PassInfo& info) override { events.push_back("after " + info.name); }
};

TEST(PassInfra, InstrumentsSeeEveryPassAndCanSkip) {
  std::vector<std::string> log;
  auto rec = std::make_shared<RecordingInstrument>();
  rec->skip = "b";
  PassContext ctx;
  ctx.instruments.push_back(rec);
  {
    PassContext::Scope scope(ctx);
    Sequential({logging_pass("a", 0, &log), logging_pass("b", 0, &log)}, "seq")(IRModule::create());
  }
  EXPECT_EQ(log, (std::vector<std::string>{"a"}));
  EXPECT_EQ(rec->events, (std::vector<std::string>{"enter", "before seq", "before a", "after a",
                                                   "after seq", "exit"}));
}

TEST(PassInfra, TimingInstrumentRendersNestedPasses) {
  std::vector<std::string> log;
  auto timing = std::make_shared<PassTimingInstrument>();
  PassContext ctx;
  ctx.instruments.push_back(timing);
  {
    PassContext::Scope scope(ctx);
    Sequential({logging_pass("first", 0, &log), logging_pass("second", 0, &log)}, "outer")(IRModule::create());
    ASSERT_EQ(timing->entries().size(), 3u);
    EXPECT_EQ(timing->entries()[0].name, "outer");
    EXPECT_EQ(timing->entries()[0].depth, 0);
    EXPECT_EQ(timing->entries()[1].name, "first");
    EXPECT_EQ(timing->entries()[1].depth, 1);
    std::string table = timing->render();
    EXPECT_NE(table.find("outer:"), std::string::npos);
    EXPECT_NE(table.find("  first:"), std::string::npos);
    EXPECT_NE(table.find("  second:"), std::string::npos);
  }
}

TEST(PassInfra, PrintingInstrumentCallsBackBeforeAndAfter) {
  std::vector<std::string> calls;
  IRModule input = IRModule::create();
  IRModule changed;
  auto dump = std::make_shared<PassPrintingInstrument>(
      [&](const std::string& name, const IRModule& mod, bool before) {
        calls.push_back((before ? "before " : "after ") + name);
        if (!before) changed = mod;
      });
  PassContext ctx;
  ctx.instruments.push_back(dump);
  Pass add_fn = create_module_pass(
      [](IRModule mod, const PassContext&) {
        mod.add(make<GlobalVarNode>("f"), trivial_function());
        return mod;
      },
      0, "AddFn");
  add_fn(input, ctx);
  EXPECT_EQ(calls, (std::vector<std::string>{"before AddFn", "after AddFn"}));
  ASSERT_TRUE(changed);
  EXPECT_TRUE(changed.contains("f"));
}

TEST(PassInfra, ErrorsAreReported) {
  Pass undefined;
  EXPECT_THROW(undefined(IRModule::create()), Error);
  EXPECT_THROW(Sequential({undefined}), Error);
  std::vector<std::string> log;
  EXPECT_THROW(logging_pass("a", 0, &log)(IRModule()), Error);
  PassContext ctx;
  ctx.config["relax.x"] = int64_t(3);
  ASSERT_TRUE(ctx.get_config("relax.x"));
  EXPECT_EQ(std::get<int64_t>(*ctx.get_config("relax.x")), 3);
  EXPECT_EQ(ctx.get_config("missing"), nullptr);
}

}  // namespace
}  // namespace partita::transform
