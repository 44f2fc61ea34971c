// Pass infrastructure (TVM's tvm.transform): passes, sequences, the pass context and
// instruments.
//
//   PassContext ctx;  ctx.opt_level = 3;
//   ctx.instruments.push_back(std::make_shared<PassTimingInstrument>());
//   PassContext::Scope scope(ctx);           // like Python's `with PassContext(...)`
//   mod = Sequential({Normalize(), CanonicalizeBindings()})(mod);
//
// Like TVM, the opt_level / disabled / required checks are made by Sequential for each pass
// it holds: a pass whose opt_level exceeds the context's is skipped unless it is marked
// `required` (in its PassInfo or in the context's required list); a disabled pass is always
// skipped. Calling a pass directly always runs it (instruments still apply).
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "partita/ir/attrs.h"
#include "partita/ir/module.h"

namespace partita::transform {

struct PassInfo {
  std::string name;
  int opt_level = 0;
  /// Runs even when its opt_level exceeds the context's.
  bool required = false;
};

class PassContext;

/// Hooks around pass execution (TVM's PassInstrument). All default to doing nothing.
class PassInstrument {
 public:
  explicit PassInstrument(std::string name) : name_(std::move(name)) {}
  virtual ~PassInstrument() = default;
  const std::string& name() const { return name_; }
  /// Called when a context holding this instrument becomes current / stops being current.
  virtual void enter_pass_ctx() {}
  virtual void exit_pass_ctx() {}
  /// Returning false skips the pass (and its run_before/after calls).
  virtual bool should_run(const IRModule& mod, const PassInfo& info) { return true; }
  virtual void run_before_pass(const IRModule& mod, const PassInfo& info) {}
  virtual void run_after_pass(const IRModule& mod, const PassInfo& info) {}

 private:
  std::string name_;
};
using PassInstrumentPtr = std::shared_ptr<PassInstrument>;

class PassContext {
 public:
  int opt_level = 2;
  /// Pass-specific options, e.g. "relax.FuseOpsByPattern.x" -> value.
  std::map<std::string, AttrValue> config;
  std::vector<std::string> required_pass;
  std::vector<std::string> disabled_pass;
  std::vector<PassInstrumentPtr> instruments;

  /// The innermost context made current by a Scope on this thread, else a default context.
  static PassContext& current();

  /// Makes `ctx` current for its lifetime (calls the instruments' enter/exit_pass_ctx).
  class Scope {
   public:
    explicit Scope(PassContext& ctx);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    PassContext* ctx_;
  };

  /// The config value `key`, or nullptr.
  const AttrValue* get_config(const std::string& key) const {
    auto it = config.find(key);
    return it == config.end() ? nullptr : &it->second;
  }
};

using ModulePassFn = std::function<IRModule(IRModule, const PassContext&)>;
using FunctionPassFn = std::function<Function(Function, IRModule, const PassContext&)>;

/// A pass: a function from IRModule to IRModule with a name and an opt level. Every pass is a
/// module pass: function passes and sequences are functions over the module.
class Pass {
 public:
  Pass() = default;
  Pass(PassInfo info, ModulePassFn fn)
      : node_(std::make_shared<const Node>(Node{std::move(info), std::move(fn)})) {}
  /// Runs the pass in PassContext::current().
  IRModule operator()(IRModule mod) const {
    return (*this)(std::move(mod), PassContext::current());
  }
  /// Runs the pass in `ctx`, with its instruments around it.
  IRModule operator()(IRModule mod, const PassContext& ctx) const;
  const PassInfo& info() const;
  bool defined() const { return node_ != nullptr; }

 private:
  struct Node {
    PassInfo info;
    ModulePassFn fn;
  };
  std::shared_ptr<const Node> node_;
};

/// A pass that transforms the whole module.
Pass create_module_pass(ModulePassFn fn, int opt_level, std::string name, bool required = false);
/// The module pass calling `fn(mod, options...)`: a function over the module and the options the
/// pass was made with.
template <class... Options>
Pass module_pass(IRModule (*fn)(IRModule, Options...), int opt_level, std::string name,
                 std::decay_t<std::type_identity_t<Options>>... options) {
  auto run = [=](IRModule mod, const PassContext&) { return fn(std::move(mod), options...); };
  return create_module_pass(std::move(run), opt_level, std::move(name));
}
/// A pass that transforms each Relax function of the module (not ExternFuncs, and not functions
/// with a "Compiler" attribute or a nonzero "SkipOptimization", as TVM skips them).
Pass create_function_pass(FunctionPassFn fn, int opt_level, std::string name,
                          bool required = false);
/// Runs `passes` in order (each subject to the context's opt_level, required and disabled lists).
Pass Sequential(std::vector<Pass> passes, std::string name = "sequential", int opt_level = 0);

// ---------------------------------------------------------------------------------------------
// Built-in instruments
// ---------------------------------------------------------------------------------------------

/// Records how long each pass ran (nested passes inside a Sequential are indented under it).
class PassTimingInstrument : public PassInstrument {
 public:
  PassTimingInstrument() : PassInstrument("PassTimingInstrument") {}
  struct Entry {
    std::string name;
    int depth;        // nesting depth (0 = top level)
    double elapsed_us;  // wall time
  };
  void enter_pass_ctx() override;
  void exit_pass_ctx() override { open_.clear(); }
  void run_before_pass(const IRModule& mod, const PassInfo& info) override;
  void run_after_pass(const IRModule& mod, const PassInfo& info) override;
  /// Finished passes, in the order they started.
  const std::vector<Entry>& entries() const { return entries_; }
  /// A table: one row per pass with its time in microseconds and its share of the parent.
  std::string render() const;
  void clear() { entries_.clear(); }

 private:
  std::vector<Entry> entries_;
  std::vector<std::pair<size_t, std::chrono::steady_clock::time_point>> open_;
};

/// Calls `callback(pass_name, mod, before)` with the module before and after each pass; the
/// caller decides how to print it (e.g. with the script printer).
class PassPrintingInstrument : public PassInstrument {
 public:
  using Callback = std::function<void(const std::string& pass_name, const IRModule& mod, bool before)>;
  explicit PassPrintingInstrument(Callback callback, bool before = true, bool after = true)
      : PassInstrument("PassPrintingInstrument"), callback_(std::move(callback)), before_(before),
        after_(after) {}
  void run_before_pass(const IRModule& mod, const PassInfo& info) override {
    if (before_ && callback_) callback_(info.name, mod, true);
  }
  void run_after_pass(const IRModule& mod, const PassInfo& info) override {
    if (after_ && callback_) callback_(info.name, mod, false);
  }

 private:
  Callback callback_;
  bool before_, after_;
};

}  // namespace partita::transform
