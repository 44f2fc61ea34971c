// The VM's CUDA Graphs (internal to the runtime library; the rules are in runtime/vm.h): one
// graph per (function, input shapes), captured on the second call, launched from then on.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "partita/runtime/device_api.h"
#include "partita/runtime/vm.h"

namespace partita::runtime {

class GraphCache {
 public:
  /// Runs a function on given arguments the normal way (what a capture records).
  using RunFn = std::function<Value(std::vector<Value>)>;

  GraphCache(DeviceAPI* api, Device device) : api_(api), device_(device) {}
  ~GraphCache();
  GraphCache(const GraphCache&) = delete;
  GraphCache& operator=(const GraphCache&) = delete;

  /// The result of calling `fidx` through its graph, or nothing when this call must run
  /// normally: the warm-up call of an input signature, tuple arguments, too many graphs, or a
  /// capture that just failed (after which `failed(fidx)` is true). `caller` is the stream the
  /// call is ordered with.
  std::optional<Value> call(int32_t fidx, const std::vector<Value>& inputs, StreamHandle caller, const RunFn& run);
  /// While a run is being captured: every device buffer it allocates must be added here, so
  /// the graph keeps it (the allocator must not hand it to other work while the graph exists).
  std::vector<Tensor>* capture_keep() const { return keep_; }
  bool failed(int32_t fidx) const { return failed_.count(fidx) != 0; }
  /// Frees every graph (and forgets the warm-up calls).
  void clear();
  const GraphStats& stats() const { return stats_; }

 private:
  /// A graph owns its input buffers, the outputs every launch writes, and every buffer the
  /// captured run allocated.
  struct Graph {
    void* exec = nullptr;
    std::vector<Tensor> inputs;
    Value outputs;
    std::vector<Tensor> keep;
  };
  static constexpr size_t kMaxGraphs = 16;

  StreamHandle stream();
  bool capture(int32_t fidx, const std::vector<Value>& inputs, StreamHandle caller, const RunFn& run, Graph& g);
  Value launch(Graph& g, const std::vector<Value>& inputs, StreamHandle caller);

  DeviceAPI* api_;
  Device device_;
  std::map<std::pair<int32_t, std::string>, Graph> graphs_;
  std::set<std::pair<int32_t, std::string>> warmed_;  // seen once: the next call captures
  std::set<int32_t> failed_;
  std::vector<Tensor>* keep_ = nullptr;
  StreamHandle stream_ = nullptr;
  bool has_stream_ = false;
  GraphStats stats_;
};

}  // namespace partita::runtime
