// `partita`: the command line of the compiler (modelled on TVM's tvmc).
//
//   partita compile model.onnx --backends NAME,...|auto[:NAME,...] [--path 1|2] [--target "NAME -option=value"]
//                   [--precision fp32|fp16] -o m.partita
//   partita run m.partita [--input name=file.npy]... [--repeat N] [--output-dir DIR] [--profile]
//   partita show model.onnx|module.py [--backends ...]
//   partita report model.onnx --backends NAME,...|auto[:...] [--placement] [--svg out.svg] [--dot out.dot]
//
// NAME is a registered backend (the help lists them, from the backend registry).
//
// Every error is one line `partita: error: ...` on stderr and exit status 1.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <unistd.h>

#include "model_io.h"
#include "progress.h"
#include "report.h"
#include "run_cmd.h"
#include "partita/backend/registry.h"
#include "partita/codegen/build.h"
#include "partita/runtime/executable.h"
#include "partita/runtime/omp_wait_policy.h"
#include "partita/script/printer.h"
#include "partita/support/error.h"
#include "partita/transform/to_mixed_precision.h"

using namespace partita;
using namespace partita::cli;

namespace {

struct CompileArgs {
  std::string model, output;
  std::vector<std::string> backends, targets;
  int path = 2;
  bool quiet = false;
  std::string precision = "fp32";
};

std::string size_text(uintmax_t bytes) {
  char buf[64];
  if (bytes >= (1u << 20)) std::snprintf(buf, sizeof buf, "%.2f MiB", double(bytes) / double(1u << 20));
  else if (bytes >= 1024) std::snprintf(buf, sizeof buf, "%.1f KiB", double(bytes) / 1024.0);
  else std::snprintf(buf, sizeof buf, "%ju B", bytes);
  return buf;
}

// What the built executable runs where, counted in its bytecode (after build's own grouping, such
// as the cuda target's fusion by kind): the external functions called on each device module,
// the operators left to host kernels (views of host tensors included), and the copies between
// devices that remain in it.
std::string where_it_runs(const runtime::Executable& ex) {
  std::map<std::string, int64_t> per_module;  // device modules' type keys (CPU backends are
                                              // counted as partitions above)
  std::vector<std::string> order;
  int64_t host_ops = 0, copies = 0;
  std::map<std::string, int64_t> host_kernels;  // which operators stay on the host, by name
  for (const runtime::VMFunction& f : ex.functions)
    for (const runtime::Instruction& in : f.code) {
      if (in.op == runtime::Opcode::CallExtern) {
        const std::string& symbol = ex.extern_symbols[size_t(in.index)];
        for (const auto& m : ex.external_modules)
          if (m->find_function(symbol)) {
            if (m->device_kind() != DeviceKind::kCPU) {
              std::string key = m->type_key() + " on " + Device{m->device_kind(), 0}.str();
              if (!per_module.count(key)) order.push_back(key);
              ++per_module[key];
            }
            break;
          }
      } else if (in.op == runtime::Opcode::CallKernel) {
        const std::string& name = ex.kernel_names[size_t(in.index)];
        if (name == "relax.to_vdevice") ++copies;
        else if (runtime::kernel_placement(name) == runtime::KernelPlacement::kHost) {
          ++host_ops;
          ++host_kernels[name];
        }
      } else if (in.op == runtime::Opcode::View && !in.outs.empty() && in.outs[0].device.is_cpu()) {
        ++host_ops;
        ++host_kernels["view"];
      }
    }
  std::string out;
  for (const std::string& key : order)
    out += key + ": " + std::to_string(per_module[key]) + (per_module[key] == 1 ? " call, " : " calls, ");
  out += "host: " + std::to_string(host_ops) + " ops";
  // Name the host operators when a device module runs the rest: they are what to look at when a
  // GPU model is slower than expected (each one is a synchronizing copy and a break in capture).
  if (!order.empty() && !host_kernels.empty()) {
    std::string names;
    for (const auto& [name, n] : host_kernels)
      names += (names.empty() ? "" : ", ") + name + (n > 1 ? " x" + std::to_string(n) : "");
    out += " (" + names + ")";
  }
  if (copies) out += ", device copies: " + std::to_string(copies);
  return out;
}

// Import and partition, with progress stages; returns the partitioned module.
// With precision "fp16", ToMixedPrecision (float16 compute, float32 accumulation) runs before
// partitioning, so backends see the float16 operators.
IRModule import_and_partition(const std::string& model, const BackendChoice& choice, int path, bool progress,
                              const std::vector<codegen::Target>& targets = {},
                              codegen::CollageResult* placement = nullptr,
                              const std::string& precision = "fp32") {
  IRModule mod;
  {
    Stage s("import " + std::filesystem::path(model).filename().string(), progress);
    mod = load_model(model);
    s.done();
  }
  if (precision == "fp16") {
    Stage s("mixed precision", progress);
    mod = transform::ToMixedPrecision(DataType::Float(32))(mod);
    s.done();
  }
  // Every backend's prepare step before the first partitions (cudnn's attention before cublas
  // could take its matmuls), for a fixed order and for Collage alike.
  mod = backend::prepare_for(choice.backends, std::move(mod));
  if (choice.collage) {
    Stage s("place by measurement (Collage) on " + std::to_string(choice.backends.size()) + " backends", progress);
    mod = partition(mod, choice, true, targets, progress, placement);
    s.done();
    return mod;
  }
  for (const std::string& b : choice.backends) {
    Stage s("partition " + b, progress);
    mod = partition(mod, BackendChoice{{b}}, path == 2);
    s.done();
  }
  return mod;
}

int compile_command(const CompileArgs& a) {
  BackendChoice choice = parse_backend_choice(a.backends);
  const std::vector<std::string>& backends = choice.backends;
  codegen::BuildOptions options;
  for (const std::string& t : a.targets) options.targets.push_back(parse_target(t));
  IRModule mod = import_and_partition(a.model, choice, a.path, !a.quiet, options.targets, nullptr, a.precision);
  ModuleReport report = analyze_module(mod);
  std::shared_ptr<runtime::Executable> exec;
  {
    Stage s("build", !a.quiet);
    exec = codegen::build(mod, options);
    s.done();
  }
  {
    Stage s("export", !a.quiet);
    exec->export_library(a.output);
    s.done();
  }
  std::string summary;
  for (const std::string& b : backends) {
    auto it = report.backends.find(b);
    int64_t n = it == report.backends.end() ? 0 : it->second.partitions;
    summary += b + ": " + std::to_string(n) + (n == 1 ? " partition" : " partitions") + ", ";
  }
  summary += where_it_runs(*exec);
  std::printf("compiled %s -> %s (%s; %s)\n", a.model.c_str(), a.output.c_str(), summary.c_str(),
              size_text(std::filesystem::file_size(a.output)).c_str());
  return 0;
}

// The directory of PATH holding an executable `dot`, or "".
std::string find_dot() {
  const char* path = std::getenv("PATH");
  if (!path) return "";
  std::stringstream ss(path);
  std::string dir;
  while (std::getline(ss, dir, ':')) {
    std::string candidate = (dir.empty() ? "." : dir) + "/dot";
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  if (!out || !out.write(text.data(), std::streamsize(text.size())))
    throw_error("IOError", "cannot write '" + path + "'");
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Collage's explanation: every operator's alternatives, and the predicted against the measured
// time of one call.
void print_placement(const codegen::CollageResult& placed) {
  std::printf("\nplacement by measurement (Collage):\n%s\n%s", placed.summary().c_str(),
              placed.alternatives_table().c_str());
  double measured = median_latency_ms(codegen::build(placed.mod), "main", 20) * 1000.0;
  std::printf("\npredicted %.1f us, measured %.1f us (median of 20 on random inputs): %+.1f%%\n",
              placed.predicted_us(), measured, 100.0 * (placed.predicted_us() - measured) / measured);
}

// Collage's placement on the graph before partitioning: each operator in its backend's colour,
// with the measured cost of each alternative (label: the cheapest per backend; tooltip: all).
std::string placement_dot(const codegen::CollageResult& placed) {
  std::map<std::string, PlacementNote> notes;
  for (const codegen::CollageAlternatives& a : placed.alternatives) {
    PlacementNote n;
    n.backend = a.chosen;
    char buf[200];
    std::snprintf(buf, sizeof buf, "on %s; host %.1f", a.chosen.c_str(), a.host_us);
    n.label = buf;
    std::snprintf(buf, sizeof buf, "\nhost: %.1f us", a.host_us);
    n.tooltip = a.var + " = " + a.op + ": placed on " + a.chosen + buf;
    for (const auto& o : a.backends) {
      // A match of several bindings costs them all: say how many.
      std::snprintf(buf, sizeof buf, ", %s %.1f", o.backend.c_str(), o.cost_us);
      n.label += buf;
      if (o.bindings > 1) n.label += " (" + std::to_string(o.bindings) + " ops)";
      std::snprintf(buf, sizeof buf, "\n%s: %s %.1f us (a match of %zu bindings)", o.backend.c_str(), o.pattern.c_str(),
                    o.cost_us, o.bindings);
      n.tooltip += buf;
    }
    n.label += " us";
    notes[a.var] = n;
  }
  std::vector<PlacementGroup> groups;
  std::map<std::string, int> numbers;
  for (const codegen::CollagePartitionInfo& p : placed.partitions) {
    if (p.backend == "host" || p.function != "main") continue;
    char buf[160];
    std::snprintf(buf, sizeof buf, "%s partition %d: %.1f us", p.backend.c_str(), ++numbers[p.backend], p.cost_us);
    groups.push_back({p.backend, buf, p.vars});
  }
  return placement_to_dot(placed.input, notes, groups);
}

int report_command(const std::string& model, const std::vector<std::string>& backend_specs, int path,
                   const std::string& svg, const std::string& dot_out, bool placement) {
  BackendChoice choice = parse_backend_choice(backend_specs);
  if (placement && !choice.collage)
    throw_error("ValueError", "--placement explains placement by measurement: use it with --backends auto[:NAME,...]");
  codegen::CollageResult placed;
  IRModule mod = import_and_partition(model, choice, path, false, {}, placement ? &placed : nullptr);
  ModuleReport report = analyze_module(mod);
  std::printf("%s", format_report(report, choice.backends).c_str());
  if (placement) print_placement(placed);
  if (svg.empty() && dot_out.empty()) return 0;
  std::string dot_text = placement ? placement_dot(placed) : module_to_dot(mod);
  if (!dot_out.empty()) {
    write_file(dot_out, dot_text);
    std::printf("graph: %s\n", dot_out.c_str());
  }
  if (svg.empty()) return 0;
  std::string dot = find_dot();
  if (dot.empty())
    throw_error("IOError", "cannot draw '" + svg + "': Graphviz's 'dot' was not found on PATH (install graphviz, "
                           "or use --dot to write the graph source)");
  std::string tmp = svg + ".dot.tmp";
  write_file(tmp, dot_text);
  std::string cmd = shell_quote(dot) + " -Tsvg -o " + shell_quote(svg) + " " + shell_quote(tmp);
  int rc = std::system(cmd.c_str());
  std::filesystem::remove(tmp);
  if (rc != 0) throw_error("IOError", "Graphviz 'dot' failed (status " + std::to_string(rc) + ") writing '" + svg + "'");
  std::printf("graph: %s\n", svg.c_str());
  return 0;
}

int show_command(const std::string& model, const std::vector<std::string>& backend_specs, int path, bool metadata) {
  IRModule mod = import_and_partition(model, parse_backend_choice(backend_specs), path, false);
  script::PrintOptions po;
  po.show_metadata = metadata;
  std::printf("%s\n", script::print_module(mod, po).c_str());
  return 0;
}

[[noreturn]] void fail(const std::string& message) {
  std::fflush(stdout);
  std::fprintf(stderr, "partita: error: %s\n", message.c_str());
  std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  runtime::restart_with_passive_omp_wait(argv);
  CLI::App app{"partita: a bring-your-own-codegen deep-learning compiler"};
  app.require_subcommand(1);

  CompileArgs ca;
  // The backends the help names: those registered in this build.
  std::string registered;
  for (const std::string& b : backend::list_backends()) registered += (registered.empty() ? "" : ", ") + b;
  CLI::App* compile = app.add_subcommand("compile", "import a model, partition it for backends, build and export it");
  compile->add_option("model", ca.model, "ONNX model (.onnx) or TVMScript module (.py)")->required();
  compile->add_option("--backends,-b", ca.backends, "backends in priority order (the first gets the first pick), of " +
                      registered + "; or auto / auto:NAME,...: placement by measurement (Collage)")->delimiter(',');
  compile->add_option("--path", ca.path, "1: one function per composite; 2: merged partitions")
      ->check(CLI::IsMember({1, 2}));
  compile->add_option("--target,-t", ca.targets, "a backend's target with options: \"NAME -option=value\"");
  compile->add_option("-o,--output", ca.output, "artifact to write")->required();
  compile->add_flag("--quiet,-q", ca.quiet, "no progress display");
  compile->add_option("--precision", ca.precision,
                      "fp16: compute in float16 with float32 accumulation (ToMixedPrecision) before partitioning")
      ->check(CLI::IsMember({"fp32", "fp16"}));

  RunOptions ro;
  CLI::App* run = app.add_subcommand("run", "run an exported artifact, print outputs and latency");
  run->add_option("artifact", ro.artifact, "file written by partita compile")->required();
  run->add_option("--input,-i", ro.inputs, "NAME=FILE.npy (repeatable); missing inputs are random");
  run->add_option("--repeat,-n", ro.repeat, "timed runs");
  run->add_option("--warmup", ro.warmup, "untimed runs first");
  run->add_option("--seed", ro.seed, "seed of random inputs");
  run->add_option("--output-dir", ro.output_dir, "write outputs as output_<k>.npy");
  run->add_option("--function", ro.function, "function to run");
  run->add_option("--show", ro.show_values, "values printed per output");
  run->add_option("--device,-d", ro.device, "device of the VM: cpu (default), cuda, cuda:N");
  run->add_flag("--profile", ro.profile, "time every kernel and backend call of one more run");

  std::string show_model;
  std::vector<std::string> show_backends;
  int show_path = 2;
  bool show_metadata = false;
  CLI::App* show = app.add_subcommand("show", "print the (partitioned) module as TVMScript");
  show->add_option("model", show_model, "ONNX model (.onnx) or TVMScript module (.py)")->required();
  show->add_option("--backends,-b", show_backends, "partition for these backends first")->delimiter(',');
  show->add_option("--path", show_path, "1 or 2 (see compile)")->check(CLI::IsMember({1, 2}));
  show->add_flag("--metadata", show_metadata, "include the metadata section (constants)");

  std::string rep_model, rep_svg, rep_dot;
  std::vector<std::string> rep_backends;
  int rep_path = 2;
  CLI::App* report = app.add_subcommand("report", "operators, FLOPs and partitions per backend; graph picture");
  report->add_option("model", rep_model, "ONNX model (.onnx) or TVMScript module (.py)")->required();
  report->add_option("--backends,-b", rep_backends, "backends in priority order (see compile)")->delimiter(',');
  report->add_option("--path", rep_path, "1 or 2 (see compile)")->check(CLI::IsMember({1, 2}));
  report->add_option("--svg", rep_svg, "draw the partitioned graph (needs Graphviz)");
  report->add_option("--dot", rep_dot, "write the graph in the dot language");
  bool rep_placement = false;
  report->add_flag("--placement", rep_placement,
                   "with --backends auto[:NAME,...]: each operator's alternatives and their measured costs, and the "
                   "predicted against the measured time; --svg / --dot then draw the placement (each operator in "
                   "its backend's colour, with its alternatives' costs)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    fail(std::string(e.what()) + " (see partita --help)");
  }

  try {
    if (*compile) return compile_command(ca);
    if (*run) return run_command(ro);
    if (*show) return show_command(show_model, show_backends, show_path, show_metadata);
    if (*report) return report_command(rep_model, rep_backends, rep_path, rep_svg, rep_dot, rep_placement);
  } catch (const Error& e) {
    fail(e.what());
  } catch (const std::exception& e) {
    fail(e.what());
  }
  return 1;
}
