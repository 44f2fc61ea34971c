#include "report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <set>
#include <sstream>

#include "partita/backend/registry.h"
#include "partita/ir/prim_expr.h"
#include "partita/ir/struct_info.h"
#include "partita/op/registry.h"
#include "partita/support/error.h"

namespace partita::cli {
namespace {

// The value of a cost expression with every symbolic variable taken as 1 (flagged through
// `symbolic`): the report is a summary, and "per unit of n" is what it can print.
double value_with_symbols_as_one(const PrimExpr& e, bool* symbolic) {
  if (const auto* i = e.as<IntImmNode>()) return double(i->value);
  if (const auto* f = e.as<FloatImmNode>()) return f->value;
  if (e.as<PrimVarNode>()) {
    *symbolic = true;
    return 1;
  }
  const auto* b = e.as<PrimBinaryNode>();
  if (!b) return 0;
  double x = value_with_symbols_as_one(b->a, symbolic);
  double y = value_with_symbols_as_one(b->b, symbolic);
  switch (b->op) {
    case PrimOp::Add: return x + y;
    case PrimOp::Sub: return x - y;
    case PrimOp::Mul: return x * y;
    case PrimOp::FloorDiv: return y == 0 ? 0 : std::floor(x / y);
    case PrimOp::FloorMod: return y == 0 ? 0 : x - y * std::floor(x / y);
    case PrimOp::Min: return std::min(x, y);
    case PrimOp::Max: return std::max(x, y);
  }
  return 0;
}

void add_cost(BackendStats& stats, ModuleReport& report, const CallNode& call) {
  CallCost c = estimate_cost(call);
  stats.flops += c.flops;
  stats.bytes += c.bytes;
  report.symbolic_dims |= c.symbolic;
  report.unknown_costs += c.unknown ? 1 : 0;
}

bool starts_with(const std::string& s, const std::string& p) { return s.compare(0, p.size(), p) == 0; }

// A function-valued binding or module function called by `call`, if any.
const FunctionNode* callee_of(const CallNode& call, const IRModule& mod,
                              const std::map<const VarNode*, const FunctionNode*>& locals) {
  if (const auto* gv = call.op.as<GlobalVarNode>()) {
    if (!mod.contains(gv->name_hint)) return nullptr;
    return mod.lookup(gv->name_hint).as<FunctionNode>();
  }
  if (const auto* v = call.op.as<VarNode>()) {
    auto it = locals.find(v);
    return it == locals.end() ? nullptr : it->second;
  }
  return call.op.as<FunctionNode>();
}

void for_each_binding(const Expr& body, const std::function<void(const BindingNode&, const Expr&)>& f) {
  const auto* seq = body.as<SeqExprNode>();
  if (!seq) return;
  for (const BindingBlock& block : seq->blocks)
    for (const Binding& b : block->bindings) {
      if (const auto* vb = b.as<VarBindingNode>()) f(*b, vb->value);
      else if (const auto* mc = b.as<MatchCastNode>()) f(*b, mc->value);
    }
}

// Counts the operators `fn` runs (following calls to local and module functions) into `stats`.
void count_ops(const FunctionNode& fn, const IRModule& mod, BackendStats& stats,
               ModuleReport& report, int depth = 0) {
  if (depth > 64) return;  // recursion in the module: not a dataflow graph we can summarise
  std::map<const VarNode*, const FunctionNode*> locals;
  for_each_binding(fn.body, [&](const BindingNode& b, const Expr& value) {
    if (const auto* f = value.as<FunctionNode>()) {
      locals[b.var.get()] = f;
      return;
    }
    const auto* call = value.as<CallNode>();
    if (!call) return;
    if (const auto* op = call->op.as<OpNode>()) {
      stats.op_counts[op->name]++;
      add_cost(stats, report, *call);
    } else if (const FunctionNode* callee = callee_of(*call, mod, locals)) {
      count_ops(*callee, mod, stats, report, depth + 1);
    }
  });
}

std::string short_op(const std::string& name) {
  return starts_with(name, "relax.") ? name.substr(6) : name;
}

}  // namespace

CallCost estimate_cost(const CallNode& call) {
  CallCost c;
  if (!op::callee_op_def(call)) return c;
  std::optional<PrimExpr> flops = op::call_flops(call), bytes = op::call_bytes(call);
  if (flops) c.flops = value_with_symbols_as_one(*flops, &c.symbolic);
  if (bytes) c.bytes = value_with_symbols_as_one(*bytes, &c.symbolic);
  c.unknown = !flops || !bytes;
  return c;
}

ModuleReport analyze_module(const IRModule& mod) {
  if (!mod.contains("main")) throw_error("KeyError", "the module has no function 'main'");
  const auto* main = mod.lookup("main").as<FunctionNode>();
  if (!main) throw_error("TypeError", "'main' is not a Relax function");
  ModuleReport r;
  r.backends["host"];
  std::map<const VarNode*, const FunctionNode*> locals;
  for_each_binding(main->body, [&](const BindingNode& b, const Expr& value) {
    if (const auto* f = value.as<FunctionNode>()) {
      locals[b.var.get()] = f;
      return;
    }
    const auto* call = value.as<CallNode>();
    if (!call) return;
    if (const auto* op = call->op.as<OpNode>()) {
      BackendStats& host = r.backends["host"];
      host.op_counts[op->name]++;
      add_cost(host, r, *call);
      return;
    }
    const FunctionNode* callee = callee_of(*call, mod, locals);
    if (!callee) return;
    std::optional<std::string> codegen = callee->attr_string("Codegen");
    BackendStats& stats = r.backends[codegen ? *codegen : "host"];
    if (codegen) stats.partitions++;
    count_ops(*callee, mod, stats, r);
  });
  for (const auto& [_, s] : r.backends) {
    r.total_flops += s.flops;
    r.total_bytes += s.bytes;
  }
  return r;
}

std::string format_report(const ModuleReport& report, const std::vector<std::string>& order) {
  std::vector<std::string> names;
  for (const std::string& b : order)
    if (b != "host" && std::find(names.begin(), names.end(), b) == names.end()) names.push_back(b);
  for (const auto& [b, _] : report.backends)
    if (b != "host" && std::find(names.begin(), names.end(), b) == names.end()) names.push_back(b);
  names.push_back("host");
  std::ostringstream os;
  char line[256];
  std::snprintf(line, sizeof line, "%-10s %10s %8s %14s %10s %8s  %s\n", "backend", "partitions",
                "ops", "MFLOPs", "MB moved", "share", "operators");
  os << line;
  for (const std::string& b : names) {
    auto it = report.backends.find(b);
    BackendStats empty;
    const BackendStats& s = it == report.backends.end() ? empty : it->second;
    int64_t nops = 0;
    std::string ops;
    for (const auto& [op, n] : s.op_counts) {
      nops += n;
      ops += (ops.empty() ? "" : ", ") + short_op(op) + " x" + std::to_string(n);
    }
    double share = report.total_flops > 0 ? 100.0 * s.flops / report.total_flops : 0.0;
    std::snprintf(line, sizeof line, "%-10s %10s %8lld %14.3f %10.3f %7.1f%%  ", b.c_str(),
                  b == "host" ? "-" : std::to_string(s.partitions).c_str(), (long long)nops,
                  s.flops / 1e6, s.bytes / 1e6, share);
    os << line << (ops.empty() ? "(none)" : ops) << "\n";
  }
  std::snprintf(line, sizeof line, "total: %.3f MFLOPs, %.3f MB moved", report.total_flops / 1e6,
                report.total_bytes / 1e6);
  os << line;
  if (report.symbolic_dims) os << " (symbolic dimensions counted as 1)";
  if (report.unknown_costs)
    os << " (" << report.unknown_costs << " operator call" << (report.unknown_costs == 1 ? "" : "s")
       << " of unknown cost counted as 0)";
  os << "\n";
  return os.str();
}

std::string backend_color(const std::string& backend) {
  if (backend == "host") return "#d9d9d9";
  // A registered backend's own colour (partita/backend/registry.h); patterns registered by a
  // user under another prefix get one from a small palette.
  if (auto info = backend::find_backend(backend)) return info->colour;
  static const char* palette[] = {"#e6a0a0", "#a0e6d8", "#e6e08f", "#b0b0f0"};
  return palette[std::hash<std::string>{}(backend) % 4];
}

namespace {

// The one-line description a backend registered (shown when hovering its legend entry).
std::string backend_description(const std::string& backend) {
  if (backend == "host") return "the host VM's built-in kernels";
  auto info = backend::find_backend(backend);
  return info ? info->description : "patterns registered under '" + backend + ".'";
}

std::string dot_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

std::string sinfo_text(const StructInfo& s) {
  if (!s.get()) return "";
  if (const auto* t = s.as<TensorStructInfoNode>()) {
    std::string text = t->dtype.str() + "[";
    if (t->shape) {
      for (size_t i = 0; i < t->shape->size(); ++i) {
        auto c = as_const_int((*t->shape)[i]);
        text += (i ? "," : "") + (c ? std::to_string(*c) : std::string("?"));
      }
    }
    return text + "]";
  }
  if (s.as<TupleStructInfoNode>()) return "tuple";
  return "";
}

// Variables an expression reads (not looking inside function definitions).
void used_vars(const Expr& e, std::vector<const VarNode*>& out) {
  if (!e.get()) return;
  if (const auto* v = e.as<VarNode>()) {
    out.push_back(v);
  } else if (const auto* c = e.as<CallNode>()) {
    for (const Expr& a : c->args) used_vars(a, out);
  } else if (const auto* t = e.as<TupleNode>()) {
    for (const Expr& f : t->fields) used_vars(f, out);
  } else if (const auto* g = e.as<TupleGetItemNode>()) {
    used_vars(g->tuple, out);
  }
}

class DotWriter {
 public:
  explicit DotWriter(const IRModule& mod, const std::map<std::string, PlacementNote>* notes = nullptr,
                     const std::vector<PlacementGroup>* groups = nullptr)
      : mod_(mod), notes_(notes), groups_(groups) {}

  std::string run() {
    const auto* main = mod_.lookup("main").as<FunctionNode>();
    if (!main) throw_error("TypeError", "'main' is not a Relax function");
    os_ << "digraph partita {\n  rankdir=TB;\n  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\", "
           "fontsize=10];\n  edge [color=\"#555555\"];\n";
    Env env;
    for (const Var& p : main->params) {
      std::string id = node("  ", p->name_hint + "\n" + sinfo_text(p->struct_info_), "#ffffff", "ellipse");
      env[p.get()] = {id};
    }
    walk(*main, env, "host", "  ");
    std::string out = node("  ", "output", "#ffffff", "ellipse");
    std::vector<const VarNode*> vars;
    if (const auto* seq = main->body.as<SeqExprNode>()) used_vars(seq->body, vars);
    for (const VarNode* v : vars)
      for (const std::string& src : env[v]) edge(src, out);
    // Placement groups: clusters naming nodes drawn above (a node joins the cluster it is listed in).
    if (groups_)
      for (const PlacementGroup& g : *groups_) {
        std::string members;
        for (const std::string& v : g.vars)
          if (auto it = ids_.find(v); it != ids_.end()) members += " " + it->second + ";";
        if (members.empty()) continue;
        os_ << "  subgraph cluster_" << next_cluster_++ << " {\n    label=\"" << dot_escape(g.label)
            << "\"; fontsize=10; style=filled; color=\"" << backend_color(g.backend) << "\"; fillcolor=\""
            << backend_color(g.backend) << "40\";\n   " << members << "\n  }\n";
      }
    // Legend: one entry per colour used.
    os_ << "  subgraph cluster_legend {\n    label=\"legend\"; fontsize=10; style=dashed;\n";
    for (const std::string& b : used_backends_)
      os_ << "    \"legend_" << dot_escape(b) << "\" [label=\"" << dot_escape(b) << "\", tooltip=\""
          << dot_escape(backend_description(b)) << "\", fillcolor=\"" << backend_color(b) << "\"];\n";
    os_ << "  }\n";
    for (const auto& [a, b] : edges_) os_ << "  " << a << " -> " << b << ";\n";
    os_ << "}\n";
    return os_.str();
  }

 private:
  using Env = std::map<const VarNode*, std::vector<std::string>>;

  std::string node(const std::string& indent, const std::string& label, const std::string& color,
                   const std::string& shape = "", const std::string& tooltip = "") {
    std::string id = "n" + std::to_string(next_++);
    os_ << indent << id << " [label=\"" << dot_escape(label) << "\", fillcolor=\"" << color << "\"";
    if (!shape.empty()) os_ << ", shape=" << shape;
    if (!tooltip.empty()) os_ << ", tooltip=\"" << dot_escape(tooltip) << "\"";
    os_ << "];\n";
    return id;
  }
  void edge(const std::string& a, const std::string& b) {
    if (a != b) edges_.insert({a, b});
  }

  std::vector<std::string> sources(const Expr& value, Env& env) {
    std::vector<const VarNode*> vars;
    used_vars(value, vars);
    std::vector<std::string> out;
    for (const VarNode* v : vars)
      for (const std::string& s : env[v])
        if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
    return out;
  }

  void note_backend(const std::string& b) {
    if (std::find(used_backends_.begin(), used_backends_.end(), b) == used_backends_.end())
      used_backends_.push_back(b);
  }

  // Ops of a composite function, for its node's label.
  static std::string composite_label(const FunctionNode& f) {
    std::string ops;
    for_each_binding(f.body, [&](const BindingNode&, const Expr& value) {
      if (const auto* c = value.as<CallNode>())
        if (const auto* op = c->op.as<OpNode>()) ops += (ops.empty() ? "" : " + ") + short_op(op->name);
    });
    return ops;
  }

  // Adds the bindings of `fn` (whose parameters are already in `env`) in colour `backend`.
  void walk(const FunctionNode& fn, Env& env, const std::string& backend, const std::string& indent) {
    std::map<const VarNode*, const FunctionNode*> locals;
    for_each_binding(fn.body, [&](const BindingNode& b, const Expr& value) {
      const VarNode* var = b.var.get();
      if (const auto* f = value.as<FunctionNode>()) {
        locals[var] = f;
        return;
      }
      const auto* call = value.as<CallNode>();
      if (!call) {  // tuples, projections, aliases: pass data through without a node
        env[var] = sources(value, env);
        return;
      }
      std::vector<std::string> srcs = sources(value, env);
      const FunctionNode* callee = call->op.as<OpNode>() ? nullptr : callee_of(*call, mod_, locals);
      std::optional<std::string> codegen = callee ? callee->attr_string("Codegen") : std::nullopt;
      if (callee && codegen) {
        // An offloaded partition: a cluster holding the partition's own bindings.
        note_backend(*codegen);
        std::string name = call->op.as<GlobalVarNode>() ? call->op.as<GlobalVarNode>()->name_hint : "partition";
        // Fused names run to hundreds of characters: the label stays short, the name is the tooltip.
        int number = ++partitions_drawn_[*codegen];
        os_ << indent << "subgraph cluster_" << next_cluster_++ << " {\n"
            << indent << "  label=\"" << dot_escape(*codegen + " partition " + std::to_string(number)) << "\"; tooltip=\""
            << dot_escape(name) << "\"; fontsize=10; style=filled; "
            << "color=\"" << backend_color(*codegen) << "\"; fillcolor=\"" << backend_color(*codegen)
            << "40\";\n";
        Env inner;
        for (size_t i = 0; i < callee->params.size() && i < call->args.size(); ++i) {
          inner[callee->params[i].get()] = sources(call->args[i], env);
        }
        walk(*callee, inner, *codegen, indent + "  ");
        os_ << indent << "}\n";
        std::vector<std::string> outs;
        if (const auto* seq = callee->body.as<SeqExprNode>()) outs = sources(seq->body, inner);
        env[var] = outs;
        return;
      }
      std::string label, color = backend_color(backend);
      if (const auto* op = call->op.as<OpNode>()) {
        label = short_op(op->name);
      } else if (callee) {
        std::optional<std::string> comp = callee->attr_string("Composite");
        label = comp ? *comp + "\n" + composite_label(*callee) : "call " + std::string(b.var->name_hint);
      } else {
        label = "call";
      }
      std::string placed = backend, tooltip;
      if (notes_)
        if (auto it = notes_->find(b.var->name_hint); it != notes_->end()) {
          placed = it->second.backend;
          color = backend_color(placed);
          label += "\n" + it->second.label;
          tooltip = it->second.tooltip;
        }
      note_backend(placed);
      label += "\n" + sinfo_text(b.var->struct_info_);
      std::string id = node(indent, label, color, "", tooltip);
      ids_[b.var->name_hint] = id;
      for (const std::string& s : srcs) edge(s, id);
      env[var] = {id};
    });
  }

  const IRModule& mod_;
  const std::map<std::string, PlacementNote>* notes_;
  const std::vector<PlacementGroup>* groups_;
  std::map<std::string, std::string> ids_;  // binding name -> node id
  std::ostringstream os_;
  std::set<std::pair<std::string, std::string>> edges_;
  std::vector<std::string> used_backends_;
  int next_ = 0, next_cluster_ = 0;
  std::map<std::string, int> partitions_drawn_;
};

}  // namespace

std::string module_to_dot(const IRModule& mod) {
  if (!mod.contains("main")) throw_error("KeyError", "the module has no function 'main'");
  return DotWriter(mod).run();
}

std::string placement_to_dot(const IRModule& mod, const std::map<std::string, PlacementNote>& notes,
                             const std::vector<PlacementGroup>& groups) {
  if (!mod.contains("main")) throw_error("KeyError", "the module has no function 'main'");
  return DotWriter(mod, &notes, &groups).run();
}

}  // namespace partita::cli
