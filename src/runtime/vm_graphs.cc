#include "vm_graphs.h"

#include "partita/support/error.h"

namespace partita::runtime {

namespace {

bool all_on(const Value& v, Device device) {
  if (v.tuple) {
    for (auto& f : *v.tuple)
      if (!all_on(f, device)) return false;
    return true;
  }
  return v.tensor.defined() && v.tensor.device() == device;
}

/// A deep copy on the same devices (on the current stream).
Value copy_value(const Value& v) {
  if (v.tuple) {
    std::vector<Value> fields;
    for (auto& f : *v.tuple) fields.push_back(copy_value(f));
    return Value::make_tuple(std::move(fields));
  }
  return Value(v.tensor.copy());
}

}  // namespace

GraphCache::~GraphCache() {
  clear();
  if (has_stream_) {
    try {
      api_->free_stream(device_.id, stream_);
    } catch (const Error&) {
    }
  }
}

void GraphCache::clear() {
  for (auto& [key, g] : graphs_) api_->free_graph(device_.id, g.exec);
  graphs_.clear();
  warmed_.clear();
}

StreamHandle GraphCache::stream() {
  if (!has_stream_) {
    stream_ = api_->create_stream(device_.id);  // the default stream cannot be captured
    has_stream_ = true;
  }
  return stream_;
}

bool GraphCache::capture(int32_t fidx, const std::vector<Value>& inputs, StreamHandle caller, const RunFn& run,
                         Graph& g) {
  int id = device_.id;
  StreamHandle s = stream();
  StreamGuard guard(device_, s);
  for (auto& v : inputs) g.inputs.push_back(Tensor::empty(v.tensor.shape(), v.tensor.dtype(), device_));
  api_->stream_wait(id, s, caller);
  if (!api_->begin_capture(id, s)) return false;
  keep_ = &g.keep;
  bool ran = true;
  try {
    g.outputs = run(std::vector<Value>(g.inputs.begin(), g.inputs.end()));
  } catch (const Error&) {
    ran = false;  // e.g. a synchronization the capture refused; the normal run will tell
  }
  keep_ = nullptr;
  void* exec = api_->end_capture(id, s);
  if (!ran || !exec || !all_on(g.outputs, device_)) {
    if (exec) api_->free_graph(id, exec);
    return false;
  }
  g.exec = exec;
  return true;
}

Value GraphCache::launch(Graph& g, const std::vector<Value>& inputs, StreamHandle caller) {
  int id = device_.id;
  StreamHandle s = stream();
  Value out;
  {
    StreamGuard guard(device_, s);
    api_->stream_wait(id, s, caller);
    for (size_t i = 0; i < inputs.size(); ++i) g.inputs[i].copy_from(inputs[i].tensor);
    api_->launch_graph(id, g.exec, s);
    out = copy_value(g.outputs);  // later launches overwrite the graph's outputs
  }
  api_->stream_wait(id, caller, s);
  ++stats_.launches;
  return out;
}

std::optional<Value> GraphCache::call(int32_t fidx, const std::vector<Value>& inputs, StreamHandle caller,
                                      const RunFn& run) {
  if (failed(fidx)) return std::nullopt;
  std::string sig;
  for (const Value& v : inputs) {
    if (v.tuple || !v.tensor.defined()) return std::nullopt;
    sig += v.tensor.dtype().str() + "(";  // any device: inputs are copied in outside the graph
    for (int64_t d : v.tensor.shape()) sig += std::to_string(d) + ",";
    sig += ")";
  }
  auto key = std::make_pair(fidx, sig);
  auto it = graphs_.find(key);
  if (it == graphs_.end()) {
    if (warmed_.insert(key).second || graphs_.size() >= kMaxGraphs) return std::nullopt;
    Graph g;
    if (!capture(fidx, inputs, caller, run, g)) {
      failed_.insert(fidx);
      ++stats_.fallbacks;
      return std::nullopt;
    }
    ++stats_.captures;
    it = graphs_.emplace(key, std::move(g)).first;
  }
  return launch(it->second, inputs, caller);
}

}  // namespace partita::runtime
