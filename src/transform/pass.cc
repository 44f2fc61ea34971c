// Pass infrastructure (see pass.h).
#include "partita/transform/pass.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "partita/support/error.h"

namespace partita::transform {

// ---- PassContext ----

namespace {
thread_local std::vector<PassContext*> g_ctx_stack;

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}
}  // namespace

PassContext& PassContext::current() {
  if (!g_ctx_stack.empty()) return *g_ctx_stack.back();
  thread_local PassContext default_ctx;
  return default_ctx;
}

PassContext::Scope::Scope(PassContext& ctx) : ctx_(&ctx) {
  for (auto& pi : ctx.instruments) pi->enter_pass_ctx();
  g_ctx_stack.push_back(&ctx);
}

PassContext::Scope::~Scope() {
  g_ctx_stack.pop_back();
  for (auto& pi : ctx_->instruments) {
    try {
      pi->exit_pass_ctx();
    } catch (...) {
      // A destructor must not throw; an instrument failing on exit loses only its own report.
    }
  }
}

bool PassContext::pass_enabled(const PassInfo& info) const {
  if (contains(disabled_pass, info.name)) return false;
  if (info.required || contains(required_pass, info.name)) return true;
  return opt_level >= info.opt_level;
}

bool PassContext::instrument_before_pass(const IRModule& mod, const PassInfo& info) const {
  bool should_run = true;
  for (auto& pi : instruments) should_run &= pi->should_run(mod, info);
  if (!should_run) return false;
  for (auto& pi : instruments) pi->run_before_pass(mod, info);
  return true;
}

void PassContext::instrument_after_pass(const IRModule& mod, const PassInfo& info) const {
  for (auto& pi : instruments) pi->run_after_pass(mod, info);
}

const AttrValue* PassContext::get_config(const std::string& key) const {
  auto it = config.find(key);
  return it == config.end() ? nullptr : &it->second;
}

// ---- Pass ----

IRModule Pass::operator()(IRModule mod) const { return (*this)(std::move(mod), PassContext::current()); }

IRModule Pass::operator()(IRModule mod, const PassContext& ctx) const {
  if (!node_) throw_error("ValueError", "calling an undefined pass");
  if (!mod) throw_error("ValueError", "pass '" + node_->info().name + "' was given a null module");
  if (!ctx.instrument_before_pass(mod, node_->info())) return mod;
  IRModule out = node_->run(std::move(mod), ctx);
  ctx.instrument_after_pass(out, node_->info());
  return out;
}

const PassInfo& Pass::info() const {
  if (!node_) throw_error("ValueError", "info() of an undefined pass");
  return node_->info();
}

namespace {

// Every pass is a module pass: function passes and sequences are functions over the module.
class ModulePassNode : public PassNode {
 public:
  ModulePassNode(PassInfo info, ModulePassFn fn) : PassNode(std::move(info)), fn_(std::move(fn)) {}
  IRModule run(IRModule mod, const PassContext& ctx) const override { return fn_(std::move(mod), ctx); }

 private:
  ModulePassFn fn_;
};

bool skip_optimization(const FunctionNode& fn) {
  if (fn.attrs.count("Compiler")) return true;
  auto it = fn.attrs.find("SkipOptimization");
  if (it == fn.attrs.end()) return false;
  if (auto* i = std::get_if<int64_t>(&it->second)) return *i != 0;
  if (auto* b = std::get_if<bool>(&it->second)) return *b;
  return false;
}

}  // namespace

Pass create_module_pass(ModulePassFn fn, int opt_level, std::string name, bool required) {
  return Pass(std::make_shared<ModulePassNode>(PassInfo{std::move(name), opt_level, required}, std::move(fn)));
}

Pass create_function_pass(FunctionPassFn fn, int opt_level, std::string name, bool required) {
  auto run = [fn = std::move(fn)](IRModule mod, const PassContext& ctx) {
    std::vector<std::pair<GlobalVar, Expr>> updates;
    for (auto& [gv, f] : mod.functions()) {
      auto* func = f.as<FunctionNode>();
      if (!func || skip_optimization(*func)) continue;
      Function nf = fn(Function(func), mod, ctx);
      if (nf.get() != func) updates.emplace_back(gv, nf);
    }
    for (auto& [gv, f] : updates) mod.update(gv, f);
    return mod;
  };
  return create_module_pass(std::move(run), opt_level, std::move(name), required);
}

Pass Sequential(std::vector<Pass> passes, std::string name, int opt_level) {
  for (auto& p : passes)
    if (!p.defined()) throw_error("ValueError", "Sequential '" + name + "' holds an undefined pass");
  auto run = [passes = std::move(passes)](IRModule mod, const PassContext& ctx) {
    for (auto& p : passes)
      if (ctx.pass_enabled(p.info())) mod = p(std::move(mod), ctx);
    return mod;
  };
  return create_module_pass(std::move(run), opt_level, std::move(name));
}

// ---- instruments ----

void PassTimingInstrument::enter_pass_ctx() {
  entries_.clear();
  open_.clear();
}

void PassTimingInstrument::exit_pass_ctx() { open_.clear(); }

void PassTimingInstrument::run_before_pass(const IRModule&, const PassInfo& info) {
  entries_.push_back(Entry{info.name, int(open_.size()), 0.0});
  open_.emplace_back(entries_.size() - 1, std::chrono::steady_clock::now());
}

void PassTimingInstrument::run_after_pass(const IRModule&, const PassInfo&) {
  if (open_.empty()) return;
  auto [index, start] = open_.back();
  open_.pop_back();
  entries_[index].elapsed_us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
}

std::string PassTimingInstrument::render() const {
  // Share of the parent's time: the parent of an entry is the closest earlier entry one level up.
  std::ostringstream os;
  os << "Pass timing (us):\n";
  double total = 0;
  for (auto& e : entries_)
    if (e.depth == 0) total += e.elapsed_us;
  for (size_t i = 0; i < entries_.size(); ++i) {
    const Entry& e = entries_[i];
    double parent = total;
    for (size_t j = i; j-- > 0;)
      if (entries_[j].depth == e.depth - 1) {
        parent = entries_[j].elapsed_us;
        break;
      }
    char line[256];
    std::snprintf(line, sizeof line, "%*s%s: %.0fus (%.2f%%)\n", 2 * e.depth, "",
                  e.name.c_str(), e.elapsed_us, parent > 0 ? 100.0 * e.elapsed_us / parent : 0.0);
    os << line;
  }
  os << "Total: " << static_cast<long long>(total) << "us\n";
  return os.str();
}

void PassPrintingInstrument::run_before_pass(const IRModule& mod, const PassInfo& info) {
  if (before_ && callback_) callback_(info.name, mod, true);
}

void PassPrintingInstrument::run_after_pass(const IRModule& mod, const PassInfo& info) {
  if (after_ && callback_) callback_(info.name, mod, false);
}

}  // namespace partita::transform
