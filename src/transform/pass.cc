// Pass infrastructure (see pass.h).
#include "partita/transform/pass.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "partita/support/error.h"
#include "pass_util.h"

namespace partita::transform {

// ---- PassContext ----

namespace {
thread_local std::vector<PassContext*> g_ctx_stack;

// Function passes skip what TVM skips: functions for an external compiler, and those marked.
bool skip_optimization(const FunctionNode& fn) {
  if (fn.attrs.count("Compiler")) return true;
  auto it = fn.attrs.find("SkipOptimization");
  if (it == fn.attrs.end()) return false;
  if (auto* i = std::get_if<int64_t>(&it->second)) return *i != 0;
  if (auto* b = std::get_if<bool>(&it->second)) return *b;
  return false;
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

// ---- Pass ----

IRModule Pass::operator()(IRModule mod, const PassContext& ctx) const {
  if (!node_) throw_error("ValueError", "calling an undefined pass");
  const PassInfo& pass = node_->info;
  if (!mod) throw_error("ValueError", "pass '" + pass.name + "' was given a null module");
  // Every instrument's should_run is asked; the pass runs only when all agree.
  bool should_run = true;
  for (auto& pi : ctx.instruments) should_run &= pi->should_run(mod, pass);
  if (!should_run) return mod;
  for (auto& pi : ctx.instruments) pi->run_before_pass(mod, pass);
  IRModule out = node_->fn(std::move(mod), ctx);
  for (auto& pi : ctx.instruments) pi->run_after_pass(out, pass);
  return out;
}

const PassInfo& Pass::info() const {
  if (!node_) throw_error("ValueError", "info() of an undefined pass");
  return node_->info;
}

Pass create_module_pass(ModulePassFn fn, int opt_level, std::string name, bool required) {
  return Pass(PassInfo{std::move(name), opt_level, required}, std::move(fn));
}

Pass create_function_pass(FunctionPassFn fn, int opt_level, std::string name, bool required) {
  auto run = [fn = std::move(fn)](IRModule mod, const PassContext& ctx) {
    return detail::map_functions(mod, [&](const Function& f) {
      return skip_optimization(*f) ? f : fn(f, mod, ctx);
    });
  };
  return create_module_pass(std::move(run), opt_level, std::move(name), required);
}

Pass Sequential(std::vector<Pass> passes, std::string name, int opt_level) {
  for (auto& p : passes)
    if (!p.defined()) throw_error("ValueError", "Sequential '" + name + "' holds an undefined pass");
  auto run = [passes = std::move(passes)](IRModule mod, const PassContext& ctx) {
    for (auto& p : passes) {
      // A disabled pass never runs; a required one runs whatever its opt_level.
      const PassInfo& info = p.info();
      bool disabled = std::ranges::count(ctx.disabled_pass, info.name);
      bool required = info.required || std::ranges::count(ctx.required_pass, info.name);
      if (!disabled && (required || ctx.opt_level >= info.opt_level)) mod = p(std::move(mod), ctx);
    }
    return mod;
  };
  return create_module_pass(std::move(run), opt_level, std::move(name));
}

// ---- instruments ----

void PassTimingInstrument::enter_pass_ctx() {
  entries_.clear();
  open_.clear();
}

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
    auto up = std::find_if(entries_.rend() - i, entries_.rend(),
                           [&](const Entry& p) { return p.depth == e.depth - 1; });
    double parent = up == entries_.rend() ? total : up->elapsed_us;
    char line[256];
    std::snprintf(line, sizeof line, "%*s%s: %.0fus (%.2f%%)\n", 2 * e.depth, "",
                  e.name.c_str(), e.elapsed_us, parent > 0 ? 100.0 * e.elapsed_us / parent : 0.0);
    os << line;
  }
  os << "Total: " << static_cast<long long>(total) << "us\n";
  return os.str();
}

}  // namespace partita::transform
