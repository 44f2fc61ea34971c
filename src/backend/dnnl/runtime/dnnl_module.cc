// The "dnnl" runtime module: builds each function's graph (../module_format.h) into oneDNN
// primitives once, on the first call after the named constants arrived, then only executes.
//
// Layouts: conv2d lets oneDNN choose source, weight and destination layouts (format_tag::any),
// except that a source already in channel blocks (blocked_tag()) is read as it is; a value
// keeps the layout its producer chose, and a consumer that wants another layout gets one
// reorder (cached per value and layout), so consecutive convolutions, pools, eltwise and binary
// ops stay blocked and only partition outputs are reordered back to plain (NCHW). Constant
// weights are reordered into the primitive's preferred layout once, at build.
//
// Concatenations along the channels of one image, of whole channel blocks, are in place: the
// convolutions producing the sources write channel blocks straight into their channel ranges
// of the result (build_concat_in_place), and DenseNet's repeated concatenations of a block's
// growing list of feature maps share one buffer.
//
// Convolutions: 3x3 stride-1 ones run a Winograd convolution instead of oneDNN's direct one where
// it is faster: oneDNN's own on AVX-512 CPUs (timed against the direct one at build,
// faster_primitive.h), ours (winograd_conv.h) on AVX2 CPUs, where oneDNN has none and chooses
// nChw8c activations, by a rule measured once. The graph's "winograd" key: 0 never, 1 (default)
// where faster, 2 / 4 our F(2x2) / F(4x4) wherever it applies, 3 oneDNN's wherever it applies.
//
// Memory: intermediates share one arena, planned from their lifetimes (runtime/memory_plan.h),
// so a partition's working set stays small and warm in cache; reshapes are views, not copies.
#include <omp.h>

#include <functional>
#include <memory>
#include <numeric>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <nlohmann/json.hpp>
#include <oneapi/dnnl/dnnl.hpp>
#include <unordered_map>

#include "../binary_broadcast.h"
#include "../module_format.h"
#include "dnnl_runtime.h"
#include "partita/runtime/memory_plan.h"
#include "partita/support/error.h"
#include "faster_primitive.h"
#include "strided_layout.h"
#include "activations.h"
#include "winograd_conv.h"

namespace partita::backend::dnnl {
namespace {

using json = nlohmann::json;
namespace dn = ::dnnl;
using tag = dn::memory::format_tag;
using dt = dn::memory::data_type;

tag plain_tag(size_t ndim) {
  switch (ndim) {
    case 1: return tag::a;
    case 2: return tag::ab;
    case 3: return tag::abc;
    case 4: return tag::abcd;
    case 5: return tag::abcde;
    case 6: return tag::abcdef;
    default: return tag::undef;
  }
}

// The channel-blocked layout oneDNN's convolutions prefer on this CPU: 16-channel blocks with
// AVX-512, 8 without (AVX2; forcing 16 there would leave convolutions to slower kernels).
tag blocked_tag() {
  static const tag t = [] {
    const int isa = int(dn::get_effective_cpu_isa()), avx512 = int(dn::cpu_isa::avx512_core);
    return (isa & avx512) == avx512 ? tag::aBcd16b : tag::aBcd8b;
  }();
  return t;
}
int64_t channel_block() { return blocked_tag() == tag::aBcd16b ? 16 : 8; }

// Whether oneDNN chose its reference implementation (slow, scalar) for a primitive.
template <class PrimitiveDesc>
bool is_reference(const PrimitiveDesc& pd) {
  return std::string(pd.impl_info_str()).rfind("ref", 0) == 0;
}

// oneDNN has no 0-d memory: a scalar is the one element of a (1) tensor (same bytes).
dn::memory::dims dnnl_dims(const dn::memory::dims& dims) {
  return dims.empty() ? dn::memory::dims{1} : dims;
}

// Row-major memory of `dims` (0-d: one element; beyond the format tags: by strides).
dn::memory::desc plain_md(const dn::memory::dims& dims) {
  dn::memory::dims d = dnnl_dims(dims);
  if (d.size() > DNNL_MAX_NDIMS)
    throw_error("ValueError", "dnnl: tensors of " + std::to_string(d.size()) + " dimensions are not supported");
  tag t = plain_tag(d.size());
  if (t != tag::undef) return dn::memory::desc(d, dt::f32, t);
  dn::memory::dims strides(d.size(), 1);
  for (size_t k = d.size() - 1; k > 0; --k) strides[k - 1] = strides[k] * d[k];
  return dn::memory::desc(d, dt::f32, strides);
}

dn::algorithm eltwise_alg(const std::string& name) {
  static const std::map<std::string, dn::algorithm> m = {
      {"relu", dn::algorithm::eltwise_relu},         {"gelu_erf", dn::algorithm::eltwise_gelu_erf},
      {"gelu_tanh", dn::algorithm::eltwise_gelu_tanh}, {"swish", dn::algorithm::eltwise_swish},
      {"logistic", dn::algorithm::eltwise_logistic}, {"tanh", dn::algorithm::eltwise_tanh},
      {"exp", dn::algorithm::eltwise_exp},           {"sqrt", dn::algorithm::eltwise_sqrt},
      {"abs", dn::algorithm::eltwise_abs},           {"clip", dn::algorithm::eltwise_clip},
      {"linear", dn::algorithm::eltwise_linear},     {"hardswish", dn::algorithm::eltwise_hardswish}};
  auto it = m.find(name);
  if (it == m.end()) throw_error("ValueError", "dnnl: unknown eltwise algorithm '" + name + "'");
  return it->second;
}

// Threads: oneDNN here runs on OpenMP (libgomp, as Debian builds it), which this plug-in links
// for its Winograd kernel too, so both share one pool.
void set_threads(int n) {
  if (n > 0) omp_set_num_threads(n);
}

// A oneDNN primitive with its arguments, or (wino set) our Winograd convolution, which reads
// the same arguments (DNNL_ARG_SRC, DNNL_ARG_DST, DNNL_ARG_BIAS if any).
using Args = std::unordered_map<int, dn::memory>;

struct Step {
  dn::primitive prim;
  Args args;
  std::shared_ptr<WinogradConv> wino = nullptr;
  int64_t node = -1;  // the graph node it belongs to (-1: the outputs' reorders)
  // A step of our own on plain memory (pad), reading and writing the memories of `args`.
  std::function<void(const Args&)> custom = nullptr;

  void execute(dn::stream& s, float* wino_work) {
    if (custom) return custom(args);
    if (!wino) return prim.execute(s, args);
    auto bias = args.find(DNNL_ARG_BIAS);
    wino->run(static_cast<const float*>(args.at(DNNL_ARG_SRC).get_data_handle()),
              bias == args.end() ? nullptr : static_cast<const float*>(bias->second.get_data_handle()),
              static_cast<float*>(args.at(DNNL_ARG_DST).get_data_handle()), wino_work);
  }
};

// The node's post-ops as the Winograd kernel's, or false when it lacks one of them.
bool winograd_post_ops(const json& post, std::vector<WinogradPostOp>& out) {
  for (const auto& p : post) {
    std::string kind = p.at("kind").get<std::string>();
    if (kind == "sum") {
      out.push_back({WinogradPostOp::Kind::kSum});
    } else if (kind == "eltwise" && p.at("alg") == "relu") {
      out.push_back({WinogradPostOp::Kind::kRelu, p.at("alpha").get<float>()});
    } else if (kind == "eltwise" && p.at("alg") == "clip") {
      out.push_back({WinogradPostOp::Kind::kClip, p.at("alpha").get<float>(), p.at("beta").get<float>()});
    } else {
      return false;
    }
  }
  return true;
}

// One function's built graph.
class Program {
 public:
  Program(const json& f, int num_threads, int winograd, const std::map<std::string, Tensor>& constants,
          dn::engine& eng)
      : eng_(eng), num_threads_(num_threads), winograd_(winograd) {
    symbol_ = f.at("symbol").get<std::string>();
    for (const auto& v : f.at("values")) dims_.push_back(v.get<dn::memory::dims>());
    mem_.resize(dims_.size());
    for (const auto& v : f.at("inputs")) {
      int id = checked(v.get<int>());
      inputs_.push_back(id);
      mem_[id] = dn::memory(plain_md(dims_[id]), eng_, DNNL_MEMORY_NONE);
    }
    for (const auto& c : f.at("constants")) {
      int id = checked(c.at("value").get<int>());
      std::string name = c.at("name").get<std::string>();
      auto it = constants.find(name);
      if (it == constants.end()) fail("constant '" + name + "' was not provided");
      const Tensor& t = it->second;
      if (t.dtype() != DataType::Float(32) || dn::memory::dims(t.shape()) != dims_[id])
        fail("constant '" + name + "' has another dtype or shape than compiled for");
      kept_.push_back(t);
      mem_[id] = dn::memory(plain_md(dims_[id]), eng_, t.data());
      is_const_.insert(id);
    }
    // The last node reading each value (outputs: past the end), for in-place accumulation; and
    // what reads each value (a residual or a source scale as "post").
    last_use_.assign(dims_.size(), -1);
    std::map<int, std::set<std::string>> readers;
    const json& nodes = f.at("nodes");
    for (size_t k = 0; k < nodes.size(); ++k) {
      auto read = [&](const json& v, const std::string& as) {
        last_use_[checked(v.get<int>())] = int64_t(k);
        readers[v.get<int>()].insert(as);
      };
      for (const auto& v : nodes[k].at("in")) read(v, nodes[k].at("op").get<std::string>());
      if (nodes[k].contains("scale_in")) read(nodes[k]["scale_in"], "post");
      if (nodes[k].contains("post"))
        for (const auto& p : nodes[k]["post"])
          if (p.contains("in")) read(p["in"], "post");
    }
    for (const auto& v : f.at("outputs")) {
      last_use_[checked(v.get<int>())] = int64_t(nodes.size());
      output_ids_.insert(v.get<int>());
    }
    // A permute read only by reshapes is a view (the reshape copies, if any copy is needed: a
    // channel shuffle's one copy), not a transposing reorder to plain memory.
    for (const auto& n : nodes) {
      int out = checked(n.at("out").get<int>());
      if (n.at("op") == "permute" && !output_ids_.count(out) && readers[out] == std::set<std::string>{"reshape"})
        permute_views_.insert(out);
    }
    // A reshape's result may be a view of its source's bytes: the source lives as long.
    for (size_t k = nodes.size(); k-- > 0;)
      if (nodes[k].at("op") == "reshape" || permute_views_.count(nodes[k].at("out").get<int>())) {
        int in = checked(nodes[k].at("in").at(0).get<int>()), out = checked(nodes[k].at("out").get<int>());
        last_use_[in] = std::max(last_use_[in], last_use_[out]);
      }
    // Values a concatenation could hold in place: their producing convolutions write channel
    // blocks (see build_concat_in_place).
    std::vector<std::pair<int, std::vector<int>>> concats;  // in place: result, sources
    for (const auto& n : nodes) {
      if (n.at("op") != "concat") continue;
      std::vector<int> in;
      for (const auto& v : n.at("in")) in.push_back(checked(v.get<int>()));
      int out = checked(n.at("out").get<int>());
      if (!in_place_concat(in, out, n.at("axis").get<int>())) continue;
      wants_blocked_.insert(in.begin(), in.end());
      concats.push_back({out, in});
    }
    for (size_t a = 0; a < concats.size(); ++a) {  // each one's home: see build_concat_in_place
      const auto& [out, in] = concats[a];
      concat_home_[out] = out;
      for (size_t b = a + 1; b < concats.size(); ++b)
        if (concats[b].second.size() > in.size() && std::equal(in.begin(), in.end(), concats[b].second.begin()))
          concat_home_[out] = concats[b].first;
    }
    for (size_t k = 0; k < nodes.size(); ++k) {
      node_index_ = int64_t(k);
      node_labels_.push_back(node_label(nodes[k], k));
      size_t first_step = steps_.size();
      try {
        build_node(nodes[k]);
      } catch (const dn::error& e) {
        fail(std::string("oneDNN rejected it: ") + e.what());
      }
      for (size_t i = first_step; i < steps_.size(); ++i) steps_[i].node = int64_t(k);
    }
    node_index_ = -1;
    for (const auto& v : f.at("outputs")) {
      int id = checked(v.get<int>());
      if (!mem_[id]) fail("output value " + std::to_string(id) + " is never computed");
      outputs_.push_back(id);
      // An output whose producer writes plain memory it owns gets the caller's buffer directly.
      bool direct = mem_[id].get_desc() == plain_md(dims_[id]) && produced_.count(id) && !is_const_.count(id) &&
                    !view_values_.count(id) &&
                    std::find(inputs_.begin(), inputs_.end(), id) == inputs_.end() && !direct_.count(id);
      if (direct) {
        direct_.insert(id);
        out_mem_.push_back(mem_[id]);
        out_copy_.push_back(false);
      } else {
        out_mem_.push_back(dn::memory(plain_md(dims_[id]), eng_, DNNL_MEMORY_NONE));
        out_copy_.push_back(true);
        out_reorder_.push_back(dn::reorder(mem_[id], out_mem_.back()));
      }
    }
    place_scratch();
    // One working area for all Winograd convolutions (they run one after another).
    int64_t work = 0;
    for (const auto& st : steps_)
      if (st.wino) work = std::max(work, st.wino->work_size());
    if (work) wino_work_ = Tensor::empty({work}, DataType::Float(32));  // 64-byte aligned
  }

  void run(dn::stream& s, std::span<const Tensor> in, std::span<Tensor> out) {
    if (in.size() != inputs_.size() || out.size() != outputs_.size())
      fail("expected " + std::to_string(inputs_.size()) + " inputs and " + std::to_string(outputs_.size()) +
                        " outputs, got " + std::to_string(in.size()) + " and " + std::to_string(out.size()));
    for (size_t i = 0; i < in.size(); ++i) {
      check_tensor(in[i], inputs_[i], "argument " + std::to_string(i));
      mem_[inputs_[i]].set_data_handle(in[i].data());
    }
    for (size_t k = 0; k < out.size(); ++k) {
      check_tensor(out[k], outputs_[k], "output " + std::to_string(k));
      out_mem_[k].set_data_handle(out[k].data());
    }
    for (auto& v : views_) v.view.set_data_handle(static_cast<uint8_t*>(v.base.get_data_handle()) + v.offset);
    set_threads(num_threads_);
    for (auto& st : steps_) {
      try {
        st.execute(s, wino_work_.defined() ? wino_work_.data_as<float>() : nullptr);
      } catch (const dn::error& e) {
        node_index_ = st.node;
        fail(std::string("oneDNN failed to run it: ") + e.what());
      }
    }
    size_t r = 0;
    for (size_t k = 0; k < out.size(); ++k)
      if (out_copy_[k]) out_reorder_[r++].execute(s, mem_[outputs_[k]], out_mem_[k]);
    s.wait();
  }

  // How many convolutions run our Winograd kernel, and oneDNN's.
  int64_t winograd_steps() const {
    return std::count_if(steps_.begin(), steps_.end(), [](const Step& st) { return st.wino != nullptr; });
  }
  int64_t onednn_winograd_steps() const { return onednn_winograd_convs_; }

 private:
  // "node 3 (conv2d, from relax.nn.conv2d + relax.add)": the graph node and the Relax operators
  // the codegen lowered into it, so an error names what the user wrote.
  static std::string node_label(const json& n, size_t k) {
    std::string label = "node " + std::to_string(k) + " (" + n.value("op", std::string("?"));
    if (n.contains("from") && n["from"].is_array() && !n["from"].empty()) {
      label += ", from ";
      for (size_t i = 0; i < n["from"].size(); ++i)
        label += (i ? " + " : "") + (n["from"][i].is_string() ? n["from"][i].get<std::string>() : "?");
    }
    return label + ")";
  }

  // Errors name the module, the function and, while a node is built or run, the node.
  [[noreturn]] void fail(const std::string& what) const {
    std::string where = "function '" + symbol_ + "'";
    if (node_index_ >= 0 && size_t(node_index_) < node_labels_.size())
      where += ", " + node_labels_[size_t(node_index_)];
    throw_error("ValueError", "dnnl module, " + where + ": " + what);
  }

  int checked(int id) const {
    if (id < 0 || size_t(id) >= dims_.size()) fail("value id " + std::to_string(id) + " is out of range");
    return id;
  }

  void check_tensor(const Tensor& t, int id, const std::string& what) const {
    if (t.dtype() != DataType::Float(32) || dn::memory::dims(t.shape()) != dims_[id]) {
      std::string s;
      for (auto d : dims_[id]) s += (s.empty() ? "" : ", ") + std::to_string(d);
      fail(what + " must be a float32 tensor of shape (" + s + ")");
    }
  }

  dn::memory value(int id) {
    if (!mem_[checked(id)]) fail("value " + std::to_string(id) + " is used before it is computed");
    return mem_[id];
  }

  // `id`'s memory in layout `md`: itself, or a cached reorder of it (constants: reordered now,
  // once; others: a reorder step before each use).
  dn::memory as_layout(int id, const dn::memory::desc& md) {
    dn::memory m = value(id);
    if (m.get_desc() == md) return m;
    for (auto& [desc, cached] : layouts_[id])
      if (desc == md) return cached;
    dn::memory r = reordered(m, md, is_const_.count(id) > 0);
    layouts_[id].emplace_back(md, r);
    return r;
  }

  // `m` reordered to `md`: of a constant once now (the result owns its bytes), else a step.
  dn::memory reordered(dn::memory m, const dn::memory::desc& md, bool constant) {
    dn::memory r = constant ? dn::memory(md, eng_) : scratch(md);
    if (constant) {
      dn::stream s(eng_);
      dn::reorder(m, r).execute(s, m, r);
      s.wait();
    } else {
      steps_.push_back({dn::reorder(m, r), {{DNNL_ARG_FROM, m}, {DNNL_ARG_TO, r}}});
    }
    return r;
  }

  dn::post_ops post_ops(const json& post, int& sum_input) {
    dn::post_ops po;
    sum_input = -1;
    for (const auto& p : post) {
      std::string kind = p.at("kind").get<std::string>();
      if (kind == "eltwise") {
        po.append_eltwise(1.0f, eltwise_alg(p.at("alg").get<std::string>()), p.at("alpha").get<float>(),
                          p.at("beta").get<float>());
      } else if (kind == "sum") {
        po.append_sum(1.0f);
        sum_input = checked(p.at("in").get<int>());
      } else {
        fail("unknown post-op '" + kind + "'");
      }
    }
    return po;
  }

  void set_output(int id, dn::memory m) {
    mem_[checked(id)] = m;
    produced_.insert(id);
  }

  void build_node(const json& n) {
    std::string op = n.at("op").get<std::string>();
    std::vector<int> in;
    for (const auto& v : n.at("in")) in.push_back(checked(v.get<int>()));
    int out = checked(n.at("out").get<int>());
    const dn::memory::dims& od = dims_[out];
    auto need = [&](size_t k) {
      if (in.size() < k) fail(op + " needs " + std::to_string(k) + " inputs");
    };
    if (op == "conv2d") {
      need(2);
      bool has_bias = n.at("has_bias").get<bool>();
      if (has_bias) need(3);
      auto strides = n.at("strides").get<dn::memory::dims>();
      auto dil = n.at("dilation").get<dn::memory::dims>();
      auto pad = n.at("padding").get<dn::memory::dims>();
      int64_t groups = n.at("groups").get<int64_t>();
      const auto& xd = dims_[in[0]];
      const auto& wd = dims_[in[1]];
      if (xd.size() != 4 || wd.size() != 4 || od.size() != 4 || groups < 1) fail("conv2d shapes");
      dn::memory::dims wdims = wd;
      tag wtag = tag::oihw;
      if (groups > 1) {
        wdims = {groups, wd[0] / groups, wd[1], wd[2], wd[3]};
        wtag = tag::goihw;
      }
      const dn::memory::desc any_src(xd, dt::f32, tag::any), any_dst(od, dt::f32, tag::any);
      dn::memory::desc src_any = any_src, w_any(wdims, dt::f32, tag::any), dst_any = any_dst,
                       bias_md({od[1]}, dt::f32, tag::a);
      // A source already in channel blocks is read as it is (no reorder of a large input to the
      // layout oneDNN would pick); a result a concatenation will hold is written in them.
      if (groups == 1 && layout_tag(value(in[0]).get_desc(), xd) == blocked_tag()) src_any = value(in[0]).get_desc();
      if (groups == 1 && wants_blocked_.count(out) && od[1] % channel_block() == 0)
        dst_any = dn::memory::desc(od, dt::f32, blocked_tag());
      auto desc = [&](dn::algorithm alg) {
        return has_bias ? dn::convolution_forward::desc(dn::prop_kind::forward_inference, alg, src_any, w_any, bias_md,
                                                        dst_any, strides, {dil[0] - 1, dil[1] - 1}, {pad[0], pad[1]},
                                                        {pad[2], pad[3]})
                        : dn::convolution_forward::desc(dn::prop_kind::forward_inference, alg, src_any, w_any, dst_any,
                                                        strides, {dil[0] - 1, dil[1] - 1}, {pad[0], pad[1]},
                                                        {pad[2], pad[3]});
      };
      int sum_in;
      dn::primitive_attr attr;
      json post = n.at("post");
      const std::optional<Activation> own_act = pop_trailing_activation(post);
      attr.set_post_ops(post_ops(post, sum_in));
      dn::convolution_forward::primitive_desc pd(desc(dn::algorithm::convolution_direct), attr, eng_);
      if (is_reference(pd) && (src_any != any_src || dst_any != any_dst)) {
        // No fast kernel for those layouts (odd channel counts, AVX2): oneDNN's own choice.
        src_any = any_src, dst_any = any_dst;
        pd = dn::convolution_forward::primitive_desc(desc(dn::algorithm::convolution_direct), attr, eng_);
      }
      if (auto wino = onednn_winograd(n, desc(dn::algorithm::convolution_winograd), attr, pd, value(in[0]).get_desc()))
        pd = *wino;
      dn::memory src = as_layout(in[0], pd.src_desc());
      // Grouped: the weight's plain memory seen with the grouped dims (same bytes; a view that
      // follows a non-constant weight's buffer).
      dn::memory w_plain = groups > 1 ? reinterpret(in[1], dn::memory::desc(wdims, dt::f32, wtag)) : value(in[1]);
      std::shared_ptr<WinogradConv> wino = winograd_for(n, xd, wd, od, in[1], pd);
      dn::memory w = n.contains("scale_in") ? scaled_weights(n, in[1], pd.weights_desc())
                     : wino                 ? w_plain
                                            : weights_in(in[1], w_plain, pd.weights_desc());
      // The sum post-op accumulates into dst, which must hold the residual first: when this is
      // the residual's last use, it is an intermediate in dst's layout and not also read by
      // this convolution, accumulate in place.
      bool in_place = sum_in >= 0 && last_use_[sum_in] == node_index_ && produced_.count(sum_in) && !in_concat_buffer(sum_in) &&
                      !view_values_.count(sum_in) &&
                      std::find(in.begin(), in.end(), sum_in) == in.end() && value(sum_in).get_desc() == pd.dst_desc();
      dn::memory dst = in_place ? value(sum_in) : scratch(pd.dst_desc());
      std::unordered_map<int, dn::memory> args{{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DST, dst}};
      if (has_bias) args[DNNL_ARG_BIAS] = value_plain_as(in[2], bias_md);
      if (sum_in >= 0 && !in_place) {
        dn::memory r = value(sum_in);
        steps_.push_back({dn::reorder(r, dst), {{DNNL_ARG_FROM, r}, {DNNL_ARG_TO, dst}}});
      }
      if (wino) {  // our Winograd kernel applies the node's own post-ops
        steps_.push_back({dn::primitive(), std::move(args), std::move(wino)});
      } else {
        steps_.push_back({dn::convolution_forward(pd), std::move(args)});
        if (own_act) add_activation_step(*own_act, dst, dst);
      }
      set_output(out, dst);
    } else if (op == "matmul") {
      need(2);
      bool tb = n.at("transpose_b").get<bool>(), has_bias = n.at("has_bias").get<bool>();
      if (has_bias) need(3);
      const auto& ad = dims_[in[0]];
      dn::memory::dims bs = dims_[in[1]];  // as stored: (..., N, K) when transposed
      if (ad.size() < 2 || bs.size() < 2 || od.size() != std::max(ad.size(), bs.size()))
        fail("matmul operand ranks");
      auto numel = [](const dn::memory::dims& d) {
        return std::accumulate(d.begin(), d.end(), dn::memory::dim(1), std::multiplies<>());
      };
      // (..., M, K) x (K, N) is one (prod(...) * M, K) x (K, N) product: oneDNN would otherwise
      // run a broadcast product per batch entry (GEMVs for a transformer's (seq, 1, d) layout).
      bool fold_batch = ad.size() >= 3 && bs.size() == 2;
      dn::memory::dims a2 = ad, o2 = od;
      if (fold_batch) a2 = {numel(ad) / ad.back(), ad.back()}, o2 = {numel(od) / od.back(), od.back()};
      // oneDNN wants operands of the result's rank: a lower-rank one gets leading 1s (broadcast).
      const size_t rank = o2.size();
      a2.insert(a2.begin(), rank - a2.size(), 1);
      bs.insert(bs.begin(), rank - bs.size(), 1);
      // b's (..., K, N) dims over its stored bytes: transposed, the last two dims and strides swap.
      dn::memory::dims bdims = bs, bstrides(rank, 1);
      for (size_t k = rank - 1; k > 0; --k) bstrides[k - 1] = bstrides[k] * bs[k];
      if (tb) {
        std::swap(bdims[rank - 1], bdims[rank - 2]);
        std::swap(bstrides[rank - 1], bstrides[rank - 2]);
      }
      dn::memory::desc a_md = plain_md(a2), dst_md = plain_md(o2);
      dn::memory::desc b_plain(bdims, dt::f32, bstrides);
      bool b_const = is_const_.count(in[1]) > 0;
      dn::memory::desc b_md = b_const ? dn::memory::desc(bdims, dt::f32, tag::any) : b_plain;
      dn::memory::dims biasd(o2.size(), 1);
      biasd.back() = o2.back();
      dn::memory::desc bias_md = plain_md(biasd);
      dn::matmul::desc d = has_bias ? dn::matmul::desc(a_md, b_md, bias_md, dst_md) : dn::matmul::desc(a_md, b_md, dst_md);
      int sum_in;
      dn::primitive_attr attr;
      json post = n.at("post");
      const std::optional<Activation> own_act = pop_trailing_activation(post);
      attr.set_post_ops(post_ops(post, sum_in));
      if (sum_in >= 0) fail("matmul with a sum post-op");
      dn::matmul::primitive_desc pd(d, attr, eng_);
      dn::memory a = reinterpret(in[0], a_md);
      dn::memory b_src = value(in[1]);
      dn::memory b_view(b_plain, eng_, DNNL_MEMORY_NONE);
      if (b_const) {
        b_view.set_data_handle(b_src.get_data_handle());
        grouped_views_.push_back(b_view);
      }
      dn::memory b = b_const ? weights_in(in[1], b_view, pd.weights_desc()) : reinterpret(in[1], b_plain);
      // The value keeps its own shape; a folded product writes through a 2-d view of it.
      dn::memory dst = scratch(plain_md(od)), dst_view = dst;
      if (o2 != od) {
        dst_view = dn::memory(dst_md, eng_, DNNL_MEMORY_NONE);
        views_.push_back({dst_view, dst});
      }
      std::unordered_map<int, dn::memory> args{{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, dst_view}};
      if (has_bias) args[DNNL_ARG_BIAS] = value_plain_as(in[2], bias_md);
      steps_.push_back({dn::matmul(pd), std::move(args)});
      if (own_act) add_activation_step(*own_act, dst, dst);
      set_output(out, dst);
    } else if (op == "pool") {
      need(1);
      std::string alg = n.at("alg").get<std::string>();
      auto kernel = n.at("kernel").get<dn::memory::dims>();
      auto strides = n.at("strides").get<dn::memory::dims>();
      auto pad = n.at("padding").get<dn::memory::dims>();
      const auto& xd = dims_[in[0]];
      // ceil_mode: extend the bottom/right padding so oneDNN's output size matches.
      dn::memory::dims pr = {(od[2] - 1) * strides[0] + kernel[0] - xd[2] - pad[0],
                             (od[3] - 1) * strides[1] + kernel[1] - xd[3] - pad[1]};
      dn::algorithm a = alg == "max"           ? dn::algorithm::pooling_max
                        : alg == "avg_include" ? dn::algorithm::pooling_avg_include_padding
                                               : dn::algorithm::pooling_avg_exclude_padding;
      dn::memory src = value(in[0]);
      dn::pooling_forward::desc d(dn::prop_kind::forward_inference, a, src.get_desc(),
                                  dn::memory::desc(od, dt::f32, tag::any), strides, kernel, {pad[0], pad[1]}, pr);
      dn::pooling_forward::primitive_desc pd(d, eng_);
      dn::memory dst = scratch(pd.dst_desc());
      steps_.push_back({dn::pooling_forward(pd), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}}});
      set_output(out, dst);
    } else if (op == "eltwise") {
      need(1);
      dn::memory src = value(in[0]);
      if (auto f = own_activation(n)) {
        dn::memory dst = scratch(src.get_desc());
        add_activation_step(*f, src, dst);
        set_output(out, dst);
        return;
      }
      auto eltwise = [&] {
        dn::eltwise_forward::desc d(dn::prop_kind::forward_inference, eltwise_alg(n.at("alg").get<std::string>()),
                                    src.get_desc(), n.at("alpha").get<float>(), n.at("beta").get<float>());
        return dn::eltwise_forward::primitive_desc(d, eng_);
      };
      dn::eltwise_forward::primitive_desc pd = eltwise();
      // A blocked source whose channels do not fill their blocks: on AVX2 CPUs oneDNN 2.6 has only
      // its reference kernel for that; the plain layout has a fast one.
      if (is_reference(pd) && src.get_desc() != plain_md(dims_[in[0]])) {
        src = as_layout(in[0], plain_md(dims_[in[0]]));
        pd = eltwise();
      }
      dn::memory dst = scratch(pd.dst_desc());
      steps_.push_back({dn::eltwise_forward(pd), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}}});
      set_output(out, dst);
    } else if (op == "binary") {
      build_binary(n.at("alg").get<std::string>(), in, out);
    } else if (op == "softmax") {
      // Over the last axis, or one followed only by 1s: (rows, elements) memory, which oneDNN's
      // jit kernel runs (softmax over an inner axis runs on its reference kernel; the check
      // keeps those on the host).
      need(1);
      int64_t axis = n.at("axis").get<int64_t>();
      if (axis < 0 || size_t(axis) >= std::max<size_t>(od.size(), 1)) fail("softmax axis out of range");
      dn::memory::dim outer = 1, inner = 1, len = od.empty() ? 1 : od[size_t(axis)];
      for (size_t k = 0; k < od.size(); ++k)
        if (int64_t(k) != axis) (int64_t(k) < axis ? outer : inner) *= od[k];
      dn::memory::desc md = inner == 1 ? plain_md({outer, len}) : plain_md(od);
      dn::softmax_forward::desc d(dn::prop_kind::forward_inference, md, inner == 1 ? 1 : int(axis));
      dn::softmax_forward::primitive_desc pd(d, eng_);
      dn::memory src = reinterpret(in[0], md);
      dn::memory dst = scratch(plain_md(od)), dst_view(md, eng_, DNNL_MEMORY_NONE);
      views_.push_back({dst_view, dst});
      steps_.push_back({dn::softmax_forward(pd), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst_view}}});
      set_output(out, dst);
    } else if (op == "layer_norm") {
      // Over the last `axes` dims (1 in graphs that predate the key): oneDNN normalizes the last
      // dim of 2-d to 5-d memory, so the data is seen as (rows, elements per row).
      need(3);
      const auto& xd = dims_[in[0]];
      int64_t axes = n.value("axes", int64_t(1));
      if (axes < 1 || size_t(axes) > xd.size() || xd != od) fail("layer_norm shapes");
      dn::memory::dim inner = 1, total = 1;
      for (size_t k = 0; k < xd.size(); ++k) (k + size_t(axes) >= xd.size() ? inner : total) *= xd[k];
      dn::memory::desc md = plain_md({total, inner});
      bool scale = n.at("scale").get<bool>(), shift = n.at("shift").get<bool>();
      auto flags = dn::normalization_flags::none;
      if (scale) flags |= dn::normalization_flags::use_scale;
      if (shift) flags |= dn::normalization_flags::use_shift;
      dn::layer_normalization_forward::desc d(dn::prop_kind::forward_inference, md, n.at("eps").get<float>(), flags);
      dn::layer_normalization_forward::primitive_desc pd(d, eng_);
      dn::memory src = reinterpret(in[0], md);
      dn::memory dst = scratch(plain_md(od)), dst_view(md, eng_, DNNL_MEMORY_NONE);
      views_.push_back({dst_view, dst});
      std::unordered_map<int, dn::memory> args{{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst_view}};
      dn::memory::desc cmd = plain_md({inner});
      if (scale) args[DNNL_ARG_SCALE] = value_plain_as(in[1], cmd);
      if (shift) args[DNNL_ARG_SHIFT] = value_plain_as(in[2], cmd);
      if (pd.mean_desc().get_size()) args[DNNL_ARG_MEAN] = scratch(pd.mean_desc());
      if (pd.variance_desc().get_size()) args[DNNL_ARG_VARIANCE] = scratch(pd.variance_desc());
      steps_.push_back({dn::layer_normalization_forward(pd), std::move(args)});
      set_output(out, dst);
    } else if (op == "permute") {
      need(1);
      auto axes = n.at("axes").get<std::vector<int>>();
      const auto& xd = dims_[in[0]];
      if (axes.size() != xd.size()) fail("permute axes do not match the input's rank");
      std::vector<int> perm(axes.size());
      for (size_t k = 0; k < axes.size(); ++k) perm.at(size_t(axes[k])) = int(k);
      // The source viewed with its axes permuted: the value itself where only reshapes read it,
      // else copied to plain memory (the copy transposes).
      const bool as_view = permute_views_.count(out) > 0;
      dn::memory src = as_view ? strided_value(in[0]) : as_layout(in[0], plain_md(xd));
      dn::memory view = view_of(in[0], src, src.get_desc().permute_axes(perm));
      if (as_view) set_view(out, in[0], view);
      else set_derived(out, in[0], reordered(view, plain_md(od), is_const_.count(in[0]) > 0));
    } else if (op == "reshape") {
      need(1);
      build_reshape(in[0], out);
    } else if (op == "slice") {
      need(1);
      build_slice(in[0], out, n.at("begin").get<dn::memory::dims>());
    } else if (op == "concat") {
      build_concat(in, out, n.at("axis").get<int>());
    } else if (op == "batch_norm") {
      // Inference: the moving statistics normalize; a fused ReLU where one followed. Runs in
      // the source's layout (blocked activations stay blocked).
      need(5);
      const auto& xd = dims_[in[0]];
      if (xd.size() < 2 || od != xd) fail("batch_norm shapes");
      bool scale = n.at("scale").get<bool>(), shift = n.at("shift").get<bool>();
      auto flags = dn::normalization_flags::use_global_stats;
      if (scale) flags |= dn::normalization_flags::use_scale;
      if (shift) flags |= dn::normalization_flags::use_shift;
      if (n.value("relu", false)) flags |= dn::normalization_flags::fuse_norm_relu;
      dn::memory src = value(in[0]);
      dn::batch_normalization_forward::desc d(dn::prop_kind::forward_inference, src.get_desc(),
                                              n.at("eps").get<float>(), flags);
      dn::batch_normalization_forward::primitive_desc pd(d, eng_);
      dn::memory dst = scratch(pd.dst_desc());
      const dn::memory::desc cmd = plain_md({xd[1]});
      Args args{{DNNL_ARG_SRC, src},
                {DNNL_ARG_DST, dst},
                {DNNL_ARG_MEAN, value_plain_as(in[3], cmd)},
                {DNNL_ARG_VARIANCE, value_plain_as(in[4], cmd)}};
      if (scale) args[DNNL_ARG_SCALE] = value_plain_as(in[1], cmd);
      if (shift) args[DNNL_ARG_SHIFT] = value_plain_as(in[2], cmd);
      steps_.push_back({dn::batch_normalization_forward(pd), std::move(args)});
      set_output(out, dst);
    } else if (op == "resample") {
      // Nearest or linear over the spatial axes, in the source's layout.
      need(1);
      const auto& xd = dims_[in[0]];
      if (xd.size() != 4 || od.size() != 4 || xd[0] != od[0] || xd[1] != od[1]) fail("resample shapes");
      const std::string alg = n.at("alg").get<std::string>();
      if (alg != "nearest" && alg != "linear") fail("resample algorithm '" + alg + "'");
      dn::memory src = value(in[0]);
      dn::resampling_forward::desc d(dn::prop_kind::forward_inference,
                                     alg == "nearest" ? dn::algorithm::resampling_nearest
                                                      : dn::algorithm::resampling_linear,
                                     src.get_desc(), dn::memory::desc(od, dt::f32, tag::any));
      dn::resampling_forward::primitive_desc pd(d, eng_);
      dn::memory dst = scratch(pd.dst_desc());
      steps_.push_back({dn::resampling_forward(pd), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}}});
      set_output(out, dst);
    } else if (op == "pad") {
      need(1);
      build_pad(n, in[0], out);
    } else {
      fail("unknown node op '" + op + "'");
    }
  }

  // SiLU and GELU (erf) run on the plug-in's kernels where they are vectorized (activations.h:
  // oneDNN's cost several times its ReLU's).
  static std::optional<Activation> own_activation(const json& p) {
    if (best_vector_path() == VectorPath::kScalar) return std::nullopt;
    if (p.at("alg") == "swish" && p.at("alpha").get<float>() == 1.0f) return Activation::kSilu;
    if (p.at("alg") == "gelu_erf") return Activation::kGelu;
    return std::nullopt;
  }
  // Takes a trailing SiLU or GELU off a primitive's post-ops (add_activation_step then runs it).
  static std::optional<Activation> pop_trailing_activation(json& post) {
    if (post.empty() || post.back().at("kind") != "eltwise") return std::nullopt;
    auto f = own_activation(post.back());
    if (f) post.erase(post.size() - 1);
    return f;
  }
  // dst = f(src), a step over the whole buffer (f(0) = 0: a blocked layout's padding stays zero).
  void add_activation_step(Activation f, const dn::memory& src, const dn::memory& dst) {
    const int64_t n = int64_t(src.get_desc().get_size() / sizeof(float));
    Step st;
    st.args = {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}};
    st.custom = [f, n, threads = num_threads_](const Args& a) {
      activation(f, static_cast<const float*>(a.at(DNNL_ARG_SRC).get_data_handle()),
                 static_cast<float*>(a.at(DNNL_ARG_DST).get_data_handle()), n, threads);
    };
    steps_.push_back(std::move(st));
  }

  // Whether `m` is in a strided layout (not channel-blocked, no offset).
  static bool is_strided(const dn::memory& m) {
    const dnnl_memory_desc_t& d = m.get_desc().data;
    return d.format_kind == dnnl_blocked && d.format_desc.blocking.inner_nblks == 0 && d.offset0 == 0;
  }

  // `id`'s memory in a strided layout: itself, or its plain reorder.
  dn::memory strided_value(int id) {
    dn::memory m = value(id);
    return is_strided(m) ? m : as_layout(id, plain_md(dims_[id]));
  }

  static dn::memory::dims strides_of(const dn::memory& m) { return strides_of(m.get_desc()); }
  static dn::memory::dims strides_of(const dn::memory::desc& md) {
    const dnnl_memory_desc_t& d = md.data;
    return dn::memory::dims(d.format_desc.blocking.strides, d.format_desc.blocking.strides + d.ndims);
  }

  // `out`, computed from `in` as `m`: a constant exactly when `in` is one.
  void set_derived(int out, int in, const dn::memory& m) {
    if (!is_const_.count(in)) return set_output(out, m);
    mem_[out] = m;
    is_const_.insert(out);
  }

  // A view of `base`'s bytes (at a byte offset) as `md`, `base` being value `in`'s: of a
  // constant the bytes are there now; otherwise the view takes its base's handle at each call.
  dn::memory view_of(int in, const dn::memory& base, const dn::memory::desc& md, size_t offset = 0) {
    if (is_const_.count(in)) return dn::memory(md, eng_, static_cast<uint8_t*>(base.get_data_handle()) + offset);
    dn::memory view(md, eng_, DNNL_MEMORY_NONE);
    views_.push_back({view, base, offset});
    return view;
  }

  // `out` is `view` (of `in`'s bytes): never a direct output or an in-place accumulation target.
  void set_view(int out, int in, const dn::memory& view) {
    if (!is_const_.count(in)) view_values_.insert(out);
    set_derived(out, in, view);
  }

  // A reshape: a view of its source where the source's layout allows (a plain or channels-last
  // tensor whose merged axes are contiguous), else a view of one reorder of it into the nearest
  // layout that does (a channel shuffle: one copy, back to channels-last).
  void build_reshape(int in, int out) {
    const dn::memory::dims xd = dnnl_dims(dims_[in]), od = dnnl_dims(dims_[out]);
    // The source's strides (a channel-blocked source: plain memory's), then the layout to view.
    const dn::memory::dims st = is_strided(value(in)) ? strides_of(value(in)) : strides_of(plain_md(xd));
    const bool viewable = reshape_view_strides(xd, st, od).has_value();
    dn::memory src = as_layout(in, dn::memory::desc(xd, dt::f32, viewable ? st : reshapeable_strides(xd, st, od)));
    auto strides = reshape_view_strides(xd, strides_of(src), od);
    if (!strides) fail("reshape: no layout of the source is a view of the result");
    set_view(out, in, view_of(in, src, dn::memory::desc(od, dt::f32, *strides)));
  }

  // A unit-stride slice: a copy of the source's window, dense in the source's axis order (a
  // channel range of a channels-last map stays channels-last). The window is the source's
  // strides at the byte offset of its first element (not oneDNN's submemory offset, with which
  // only its generic reorder copies).
  void build_slice(int in, int out, const dn::memory::dims& begin) {
    const dn::memory::dims& od = dims_[out];
    dn::memory src = strided_value(in);
    if (begin.size() != od.size() || dims_[in].size() != od.size()) fail("slice of another rank");
    for (size_t k = 0; k < od.size(); ++k)
      if (begin[k] < 0 || begin[k] + od[k] > dims_[in][k]) fail("slice window outside the source");
    const dn::memory::dims st = strides_of(src), d = dnnl_dims(od);
    size_t offset = 0;
    for (size_t k = 0; k < begin.size(); ++k) offset += size_t(begin[k] * st[k]) * sizeof(float);
    dn::memory window = view_of(in, src, dn::memory::desc(d, dt::f32, st), offset);
    dn::memory::desc dense(d, dt::f32, dense_strides(d, memory_order(d, st)));
    set_derived(out, in, reordered(window, dense, is_const_.count(in) > 0));
  }

  // Whether a concat node can hold its sources in place: along the channels of a single image,
  // every source a whole number of channel blocks. In nChw16c (nChw8c) with batch 1, such a
  // channel range of the result is itself a dense nChw16c (nChw8c) tensor at an offset, so a
  // source written there needs no copy (oneDNN 2.6 runs its convolutions on a strided slice
  // only with its reference kernel, so the slice must be dense).
  bool in_place_concat(const std::vector<int>& in, int out, int axis) const {
    const dn::memory::dims& od = dims_[out];
    if (axis != 1 || od.size() != 4 || od[0] != 1) return false;
    for (int v : in)
      if (dims_[v].size() != 4 || dims_[v][1] % channel_block() != 0) return false;
    return true;
  }

  // Whether `v` lies in a concatenation's buffer (a held source or an in-place result): its
  // bytes must not be accumulated into in place.
  bool in_concat_buffer(int v) const { return held_.count(v) || concat_home_.count(v); }

  // The concatenation in place. Its result lies at the front of its home's buffer (blocked):
  // the last concatenation of the function whose sources begin with all of its own (DenseNet
  // concatenates every earlier feature map of a block again at each layer, so each layer's
  // result is the front of the block's last one; usually the home is the node itself). Each
  // source that is an intermediate of this program written in that layout, not held elsewhere,
  // becomes its channel range of the buffer (place_scratch puts it there); the others are
  // reordered into theirs, once per home.
  void build_concat_in_place(const std::vector<int>& in, int out) {
    const int home = concat_home_.at(out);
    const dn::memory::dims& hd = dims_[home];
    auto [buffer_it, fresh] = concat_buffer_.try_emplace(home);
    if (fresh) buffer_it->second = scratch(dn::memory::desc(hd, dt::f32, blocked_tag()));
    dn::memory buffer = buffer_it->second, dst = buffer;
    if (home != out) {
      dst = dn::memory(dn::memory::desc(dims_[out], dt::f32, blocked_tag()), eng_, DNNL_MEMORY_NONE);
      held_in_.push_back({dst, buffer, 0});
    }
    std::set<dnnl_memory_t> owned;
    for (const auto& m : scratch_) owned.insert(m.get());
    int64_t channel = 0;
    for (int v : in) {
      const dn::memory::desc md(dims_[v], dt::f32, blocked_tag());
      const size_t offset = size_t(channel * hd[2] * hd[3]) * sizeof(float);
      channel += dims_[v][1];
      auto [slot_it, empty] = placed_.try_emplace({home, offset}, v);
      if (!empty) {
        if (slot_it->second != v) fail("concat in place: another value already at this channel offset");
        continue;  // an earlier concatenation of this home put it there
      }
      dn::memory m = value(v);
      bool hold = produced_.count(v) && !is_const_.count(v) && !output_ids_.count(v) && !held_.count(v) &&
                  m.get_desc() == md && owned.count(m.get());
      if (hold) {
        held_.insert(v);
        held_in_.push_back({m, buffer, offset});
        continue;
      }
      dn::memory slot(md, eng_, DNNL_MEMORY_NONE);
      held_in_.push_back({slot, buffer, offset});
      steps_.push_back({dn::reorder(m, slot), {{DNNL_ARG_FROM, m}, {DNNL_ARG_TO, slot}}});
    }
    set_output(out, dst);
  }

  // Concatenation in place where it can be (above); else in one layout for every source and the
  // result: of the sources' own layouts (blocked or channels-last) that fit all of them (blocked
  // by channels along the channels: each source's a multiple of the block), the one holding the
  // most elements, else plain; sources in another layout are reordered to it (once per value and
  // layout), so oneDNN copies without reordering inside ("simple" concat).
  void build_concat(const std::vector<int>& in, int out, int axis) {
    if (in.empty()) fail("concat needs inputs");
    const dn::memory::dims& od = dims_[out];
    if (axis < 0 || size_t(axis) >= od.size()) fail("concat axis out of range");
    if (in_place_concat(in, out, axis)) return build_concat_in_place(in, out);
    auto fits_all = [&](tag t) {
      const int64_t block = t == tag::aBcd16b ? 16 : t == tag::aBcd8b ? 8 : t == tag::aBcd4b ? 4 : 1;
      for (int v : in)
        if (dims_[v].size() != 4 || (axis == 1 && dims_[v][1] % block != 0)) return false;
      return true;
    };
    std::map<tag, int64_t> held;  // layout -> elements of the sources in it
    for (int v : in)
      if (auto t = layout_tag(value(v).get_desc(), dims_[v]); t && fits_all(*t))
        held[*t] += std::accumulate(dims_[v].begin(), dims_[v].end(), int64_t(1), std::multiplies<>());
    std::optional<tag> t;
    for (const auto& [candidate, elements] : held)
      if (!t || elements > held[*t]) t = candidate;
    std::vector<dn::memory::desc> mds;
    std::vector<dn::memory> srcs;
    for (int v : in) {
      if (dims_[v].size() != od.size()) fail("concat of values of another rank");
      mds.push_back(t ? dn::memory::desc(dims_[v], dt::f32, *t) : plain_md(dims_[v]));
      srcs.push_back(as_layout(v, mds.back()));
    }
    const dn::memory::desc dst_md = t ? dn::memory::desc(od, dt::f32, *t) : plain_md(od);
    dn::concat::primitive_desc pd(dst_md, axis, mds, eng_);
    dn::memory dst = scratch(pd.dst_desc());
    Args args{{DNNL_ARG_DST, dst}};
    for (size_t k = 0; k < srcs.size(); ++k) args[DNNL_ARG_MULTIPLE_SRC + int(k)] = srcs[k];
    steps_.push_back({dn::concat(pd), std::move(args)});
    set_output(out, dst);
  }

  // Padding (constant, edge, reflect; negative widths crop) on plain memory: each output
  // coordinate's source coordinate is worked out once per axis at build (-1: the fill value),
  // then rows along the last axis are gathered through that map, rows spread over the threads.
  void build_pad(const json& n, int in, int out) {
    const dn::memory::dims xd = dims_[in], od = dims_[out];
    const auto widths = n.at("widths").get<std::vector<int64_t>>();
    const std::string mode = n.at("mode").get<std::string>();
    const float fill = n.at("value").get<float>();
    if (widths.size() != 2 * xd.size() || od.size() != xd.size()) fail("pad widths do not match the rank");
    if (mode != "constant" && mode != "edge" && mode != "reflect") fail("pad mode '" + mode + "'");
    auto source = std::make_shared<std::vector<std::vector<int64_t>>>(xd.size());
    for (size_t d = 0; d < xd.size(); ++d) {
      if (od[d] != xd[d] + widths[2 * d] + widths[2 * d + 1]) fail("pad widths do not give the result's shape");
      for (int64_t o = 0; o < od[d]; ++o) {
        int64_t i = o - widths[2 * d];
        const int64_t dim = xd[d];
        if (i < 0 || i >= dim) {
          if (mode == "constant") {
            i = -1;
          } else if (mode == "edge") {
            i = std::clamp<int64_t>(i, 0, dim - 1);
          } else {
            const int64_t period = dim == 1 ? 1 : 2 * (dim - 1);
            i = ((i % period) + period) % period;
            if (i >= dim) i = period - i;
          }
        }
        (*source)[d].push_back(i);
      }
    }
    dn::memory src = as_layout(in, plain_md(xd)), dst = scratch(plain_md(od));
    const int threads = num_threads_;
    auto run = [source, xd, od, fill, threads](const Args& args) {
      const float* x = static_cast<const float*>(args.at(DNNL_ARG_SRC).get_data_handle());
      float* y = static_cast<float*>(args.at(DNNL_ARG_DST).get_data_handle());
      const size_t nd = od.size();
      if (nd == 0) {
        y[0] = x[0];
        return;
      }
      std::vector<int64_t> xs(nd, 1);
      for (size_t d = nd - 1; d > 0; --d) xs[d - 1] = xs[d] * xd[d];
      const int64_t row = od.back();
      int64_t rows = 1;
      for (size_t d = 0; d + 1 < nd; ++d) rows *= od[d];
      const std::vector<int64_t>& last = source->back();
#pragma omp parallel for schedule(static) num_threads(threads > 0 ? threads : omp_get_max_threads())
      for (int64_t r = 0; r < rows; ++r) {
        int64_t off = 0, rest = r;
        bool inside = true;
        for (size_t d = nd - 1; d-- > 0;) {  // r's coordinates, innermost of the leading axes first
          const int64_t i = (*source)[d][size_t(rest % od[d])];
          rest /= od[d];
          inside = inside && i >= 0;
          off += i * xs[d];
        }
        float* yr = y + r * row;
        if (!inside) {
          std::fill_n(yr, row, fill);
          continue;
        }
        const float* xr = x + off;
        for (int64_t j = 0; j < row; ++j) yr[j] = last[size_t(j)] >= 0 ? xr[last[size_t(j)]] : fill;
      }
    };
    Step st;
    st.args = {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}};
    st.custom = std::move(run);
    steps_.push_back(std::move(st));
    set_output(out, dst);
  }

  // out = in[0] (+ or *) in[1], in[0] of the result's shape (the codegen puts it first). The
  // second source, when broadcast, is laid out the way oneDNN's jit kernel wants it
  // (binary_broadcast.h), tried in order until oneDNN picks a jit implementation for it:
  //  1. the whole tensor in the first source's layout, whatever it is, or a scalar;
  //  2. a per-channel operand against a blocked or channels-last activation: in the
  //     activation's layout (oneDNN 2.6 runs its reference kernel for nChw8c on AVX-512 CPUs,
  //     e.g. after a grouped convolution: then 3.);
  //  3. the same against the activation reordered to channels-last (one reorder per call);
  //  4. plain memory seen as the broadcast's runs of dims (a blocked activation reordered to
  //     plain first).
  void build_binary(const std::string& alg_name, const std::vector<int>& in, int out) {
    if (in.size() < 2) fail("binary needs 2 inputs");
    const dn::memory::dims& od = dims_[out];
    const dn::memory::dims& bd = dims_[in[1]];
    if (dims_[in[0]] != od || bd.size() > od.size()) fail("binary operand shapes");
    const dn::algorithm alg = alg_name == "add"   ? dn::algorithm::binary_add
                              : alg_name == "mul" ? dn::algorithm::binary_mul
                              : alg_name == "div" ? dn::algorithm::binary_div
                                                  : (fail("unknown binary algorithm '" + alg_name + "'"), dn::algorithm::undef);
    dn::memory::dims full(od.size() - bd.size(), 1);  // bd right-aligned to the result's rank
    full.insert(full.end(), bd.begin(), bd.end());
    const dn::memory::desc a_md = value(in[0]).get_desc();
    const auto numel = [](const dn::memory::dims& d) {
      return std::accumulate(d.begin(), d.end(), dn::memory::dim(1), std::multiplies<>());
    };
    const auto make_pd = [&](const dn::memory::desc& a, const dn::memory::desc& b) {
      return dn::binary::primitive_desc(dn::binary::desc(alg, a, b, a), eng_);
    };
    dn::memory a, b;
    std::optional<dn::binary::primitive_desc> pd;
    if (bd == od || numel(full) == 1) {  // 1.
      dn::memory::desc b_md = bd == od ? a_md : plain_md(full);
      if (auto p = make_pd(a_md, b_md); !is_reference(p)) {
        a = value(in[0]);
        b = bd == od ? as_layout(in[1], a_md) : reinterpret(in[1], b_md);
        pd = p;
      }
    }
    const bool per_channel = od.size() == 4 && full[1] == od[1] && numel(full) == od[1];
    if (!pd && per_channel && layout_tag(a_md, od)) {  // 2.
      dn::memory::desc b_md(full, dt::f32, *layout_tag(a_md, od));
      if (auto p = make_pd(a_md, b_md); !is_reference(p)) {
        a = value(in[0]);
        b = weights_in(in[1], reinterpret(in[1], plain_md(full)), b_md);
        pd = p;
      }
    }
    if (!pd && per_channel && layout_tag(a_md, od)) {  // 3.
      dn::memory::desc nhwc(od, dt::f32, tag::acdb), b_md(full, dt::f32, tag::acdb);
      if (auto p = make_pd(nhwc, b_md); !is_reference(p)) {
        a = as_layout(in[0], nhwc);
        b = weights_in(in[1], reinterpret(in[1], plain_md(full)), b_md);
        pd = p;
      }
    }
    if (!pd) {  // 4.
      BroadcastRuns runs = broadcast_runs(od, full);
      a = reinterpret(in[0], plain_md(runs.result_dims));
      b = reinterpret(in[1], plain_md(runs.operand_dims));
      pd = make_pd(a.get_desc(), b.get_desc());
    }
    dn::memory dst, dst_view;
    const dn::memory::desc src_md = a.get_desc();
    if (dn::memory::dims(src_md.data.dims, src_md.data.dims + src_md.data.ndims) == od) {
      dst = dst_view = scratch(pd->dst_desc());
    } else {  // runs' dims: the result's plain memory seen through a view
      dst = scratch(plain_md(od));
      dst_view = dn::memory(pd->dst_desc(), eng_, DNNL_MEMORY_NONE);
      views_.push_back({dst_view, dst});
    }
    steps_.push_back({dn::binary(*pd), {{DNNL_ARG_SRC_0, a}, {DNNL_ARG_SRC_1, b}, {DNNL_ARG_DST, dst_view}}});
    set_output(out, dst);
  }

  // The format tag of `md` among the layouts oneDNN's convolutions and pools pick for 4-d
  // activations (blocked by 16, 8 or 4 channels, channels-last), or none.
  static std::optional<tag> layout_tag(const dn::memory::desc& md, const dn::memory::dims& dims) {
    if (dims.size() != 4) return std::nullopt;
    for (tag t : {tag::aBcd16b, tag::aBcd8b, tag::aBcd4b, tag::acdb})
      if (dn::memory::desc(dims, dt::f32, t) == md) return t;
    return std::nullopt;
  }

  // oneDNN's Winograd convolution for a conv2d node where it applies (oneDNN 2.6: AVX-512, 3x3,
  // stride 1, ungrouped; it has no implementation elsewhere) and, with winograd_ == 1, measured
  // faster than the direct one `direct` here (winograd_ == 3: always); else nullopt. `src` is
  // the layout the input has now. Our own kernel (winograd_for, below) is for AVX2 CPUs.
  std::optional<dn::convolution_forward::primitive_desc> onednn_winograd(const json& n,
                                                                         const dn::convolution_forward::desc& d,
                                                                         const dn::primitive_attr& attr,
                                                                         const dn::convolution_forward::primitive_desc& direct,
                                                                         const dn::memory::desc& src) {
    if ((winograd_ != 1 && winograd_ != 3) || n.at("groups").get<int64_t>() != 1) return std::nullopt;
    dn::convolution_forward::primitive_desc wino;
    try {
      wino = dn::convolution_forward::primitive_desc(d, attr, eng_, /*allow_empty=*/true);
    } catch (const dn::error&) {
      return std::nullopt;
    }
    if (!wino) return std::nullopt;
    // What decides the two times: the shapes, bias, the post-ops, the threads.
    std::string key = "conv2d";
    for (const auto& md : {direct.src_desc(), direct.weights_desc(), direct.dst_desc(), direct.bias_desc()})
      for (auto x : md.dims()) key += " " + std::to_string(x);
    key += " from " + std::string(src == direct.src_desc() ? "direct's layout" : src == wino.src_desc() ? "winograd's" : "another");
    key += " | " + n.at("padding").dump() + " threads " + std::to_string(omp_get_max_threads());
    for (const auto& p : n.at("post")) {  // not "in": a sum's operand differs from node to node
      json what = p;
      what.erase("in");
      key += " " + what.dump();
    }
    // Timed alone, a convolution has its weights warm in cache; in a graph they are cold, and
    // Winograd's transformed weights are 16 / 9 the direct ones. DenseNet's 128 -> 32 layers at
    // 28 x 28 ran 7 % faster on Winograd alone and slower in the model (27.6 against 28.9 ms
    // with them all on the direct one): so Winograd must win by 15 %.
    if (winograd_ == 1 && !runs_faster(wino, direct, src, key, eng_, /*margin=*/0.85)) return std::nullopt;
    ++onednn_winograd_convs_;
    return wino;
  }

  // The Winograd kernel for a conv2d node, or null where oneDNN's convolution runs instead:
  // 3x3, stride 1, dilation 1, padding 1, groups 1, a constant weight, channels that are
  // multiples of 8, oneDNN choosing nChw8c for source and destination, supported post-ops,
  // and (winograd_ == 1) a shape where it measured faster, with the tile size that did.
  std::shared_ptr<WinogradConv> winograd_for(const json& n, const dn::memory::dims& xd, const dn::memory::dims& wd,
                                             const dn::memory::dims& od, int w_id,
                                             const dn::convolution_forward::primitive_desc& pd) {
    if (winograd_ == 0 || !WinogradConv::cpu_supported()) return nullptr;
    using dims = dn::memory::dims;
    if (n.at("strides").get<dims>() != dims{1, 1} || n.at("dilation").get<dims>() != dims{1, 1} ||
        n.at("padding").get<dims>() != dims{1, 1, 1, 1} || n.at("groups").get<int64_t>() != 1)
      return nullptr;
    if (wd[2] != 3 || wd[3] != 3 || wd[1] != xd[1] || od[2] != xd[2] || od[3] != xd[3] || od[0] != xd[0] ||
        !is_const_.count(w_id) || !WinogradConv::shape_supported(xd[1], od[1]))
      return nullptr;
    if (pd.src_desc() != dn::memory::desc(xd, dt::f32, tag::aBcd8b) ||
        pd.dst_desc() != dn::memory::desc(od, dt::f32, tag::aBcd8b))
      return nullptr;
    std::vector<WinogradPostOp> post;
    if (!winograd_post_ops(n.at("post"), post)) return nullptr;
    int tile = winograd_ == 1 ? WinogradConv::preferred_tile(xd[2], xd[3], xd[1], od[1]) : winograd_;
    if (tile != 2 && tile != 4) return nullptr;
    return std::make_shared<WinogradConv>(tile, xd[0], xd[1], xd[2], xd[3], od[1],
                                          static_cast<const float*>(value(w_id).get_data_handle()), std::move(post),
                                          num_threads_);
  }

  // A 1x1 convolution's weights with each input channel c scaled by the node's "scale_in"
  // value s (1, C, 1, 1) at every call (the codegen folded x * s into the convolution):
  // w (Cout, C, 1, 1) * s broadcast over Cout, then reordered into `md`.
  dn::memory scaled_weights(const json& n, int w_id, const dn::memory::desc& md) {
    const dn::memory::dims& wd = dims_[w_id];
    if (wd.size() != 4 || wd[2] != 1 || wd[3] != 1 || n.at("groups").get<int64_t>() != 1)
      fail("scale_in on a convolution that is not 1x1 and ungrouped");
    // As (Cout, C) by (1, C): the per-channel broadcast oneDNN's jit kernel runs (plain 2-d views
    // of the same bytes; s may be held channels-last, which for 1 x 1 maps is the same bytes).
    const dn::memory::desc w2 = plain_md({wd[0], wd[1]}), s2 = plain_md({1, wd[1]});
    dn::memory s = reinterpret(checked(n.at("scale_in").get<int>()), s2), w = reinterpret(w_id, w2);
    dn::memory scaled = scratch(plain_md(wd)), scaled2(w2, eng_, DNNL_MEMORY_NONE);
    views_.push_back({scaled2, scaled});
    dn::binary::primitive_desc pd(dn::binary::desc(dn::algorithm::binary_mul, w2, s2, w2), eng_);
    steps_.push_back({dn::binary(pd), {{DNNL_ARG_SRC_0, w}, {DNNL_ARG_SRC_1, s}, {DNNL_ARG_DST, scaled2}}});
    if (md == scaled.get_desc()) return scaled;
    dn::memory r = scratch(md);
    steps_.push_back({dn::reorder(scaled, r), {{DNNL_ARG_FROM, scaled}, {DNNL_ARG_TO, r}}});
    return r;
  }

  // Constant weights: reordered into `md` once. Others: a reorder step per call.
  dn::memory weights_in(int id, const dn::memory& plain, const dn::memory::desc& md) {
    if (plain.get_desc() == md) return plain;
    dn::memory r = is_const_.count(id) ? dn::memory(md, eng_) : scratch(md);
    if (is_const_.count(id)) {
      dn::stream s(eng_);
      dn::reorder(plain, r).execute(s, const_cast<dn::memory&>(plain), r);
      s.wait();
    } else {
      steps_.push_back({dn::reorder(plain, r), {{DNNL_ARG_FROM, plain}, {DNNL_ARG_TO, r}}});
    }
    return r;
  }

  // `id` (a plain value) seen with another plain desc of the same size (bias reshapes).
  dn::memory value_plain_as(int id, const dn::memory::desc& md) { return reinterpret(id, md); }

  dn::memory reinterpret(int id, const dn::memory::desc& md) {
    dn::memory m = as_layout(id, plain_md(dims_[id]));
    if (m.get_desc() == md) return m;
    if (md.get_size() != m.get_desc().get_size()) fail("a reshaped operand has another size");
    if (is_const_.count(id)) {
      dn::memory v(md, eng_, m.get_data_handle());
      grouped_views_.push_back(v);
      return v;
    }
    // Not a constant: a view whose handle follows `m`'s, set at the start of every call
    // (after the inputs' and outputs' handles), so reshaping copies nothing.
    dn::memory v(md, eng_, DNNL_MEMORY_NONE);
    views_.push_back({v, m});
    return v;
  }

  // Memory for an intermediate: placed in the arena by place_scratch once the graph is built.
  dn::memory scratch(const dn::memory::desc& md) {
    dn::memory m(md, eng_, DNNL_MEMORY_NONE);
    scratch_.push_back(m);
    return m;
  }

  // Gives every intermediate a place in one arena, sharing bytes between those whose lifetimes
  // (first to last step that uses them or a view of them) do not overlap. Outputs the caller's
  // buffers receive directly are not intermediates; other outputs live to the end.
  void place_scratch() {
    std::unordered_map<dnnl_memory_t, size_t> index;
    for (size_t i = 0; i < scratch_.size(); ++i) index[scratch_[i].get()] = i;
    std::unordered_map<dnnl_memory_t, dnnl_memory_t> base_of;  // views are created after their bases
    for (auto& [view, base, offset] : views_) {
      auto it = base_of.find(base.get());
      base_of[view.get()] = it == base_of.end() ? base.get() : it->second;
    }
    // A memory a concatenation holds lives in its result's bytes: its uses are the result's.
    std::unordered_map<dnnl_memory_t, std::pair<dnnl_memory_t, size_t>> held;
    for (const auto& h : held_in_) held[h.part.get()] = {h.whole.get(), h.offset};
    auto outermost = [&](dnnl_memory_t h, size_t& offset) {
      offset = 0;
      for (auto it = held.find(h); it != held.end(); it = held.find(h)) h = it->second.first, offset += it->second.second;
      return h;
    };
    const int64_t end = int64_t(steps_.size());
    std::vector<runtime::BufferLifetime> life(scratch_.size(), {0, end, -1});
    auto touch = [&](const dn::memory& m, int64_t step) {
      dnnl_memory_t h = m.get();
      if (auto b = base_of.find(h); b != base_of.end()) h = b->second;
      size_t offset;
      h = outermost(h, offset);
      if (auto it = index.find(h); it != index.end()) {
        life[it->second].first = std::min(life[it->second].first, step);
        life[it->second].last = std::max(life[it->second].last, step);
      }
    };
    for (int64_t s = 0; s < end; ++s)
      for (const auto& [arg, m] : steps_[size_t(s)].args) touch(m, s);
    for (size_t k = 0; k < outputs_.size(); ++k)
      if (out_copy_[k]) touch(mem_[outputs_[k]], end);
    std::set<dnnl_memory_t> direct;
    for (size_t k = 0; k < outputs_.size(); ++k)
      if (!out_copy_[k]) direct.insert(out_mem_[k].get());
    for (size_t i = 0; i < scratch_.size(); ++i) {
      life[i].bytes = direct.count(scratch_[i].get()) || held.count(scratch_[i].get()) ? 0 : scratch_[i].get_desc().get_size();
      if (life[i].last < life[i].first) life[i] = {life[i].bytes, 0, end};  // never used: keep apart
    }
    runtime::ArenaPlan plan = runtime::plan_arena(life);
    arena_ = Tensor::empty({int64_t(plan.total / sizeof(float)) + 16}, DataType::Float(32));
    auto* base = static_cast<uint8_t*>(arena_.data());
    base += (64 - reinterpret_cast<uintptr_t>(base) % 64) % 64;
    for (size_t i = 0; i < scratch_.size(); ++i)
      if (life[i].bytes) scratch_[i].set_data_handle(base + plan.offsets[i]);
    for (auto& h : held_in_) {
      size_t offset;
      dnnl_memory_t whole = outermost(h.part.get(), offset);
      h.part.set_data_handle(static_cast<uint8_t*>(scratch_[index.at(whole)].get_data_handle()) + offset);
    }
  }

  dn::engine& eng_;
  int num_threads_;
  int winograd_;  // the graph's "winograd" (0 off, 1 where faster, 2 / 4 our tile, 3 oneDNN's, wherever supported)
  int64_t onednn_winograd_convs_ = 0;
  std::set<int> output_ids_;
  // Concatenations in place (build_concat_in_place): the values whose producers write channel
  // blocks for one, the values held in one, and each held memory with the result it lies in and
  // its byte offset there.
  std::set<int> wants_blocked_, held_;
  std::map<int, int> concat_home_;                // result -> the result whose buffer it is the front of
  std::map<int, dn::memory> concat_buffer_;       // home -> its buffer
  std::map<std::pair<int, size_t>, int> placed_;  // (home, byte offset) -> the value there
  struct Held {
    dn::memory part, whole;
    size_t offset;
  };
  std::vector<Held> held_in_;
  std::string symbol_;
  std::vector<dn::memory::dims> dims_;
  std::vector<dn::memory> mem_;
  std::vector<int> inputs_, outputs_;
  std::set<int> is_const_, produced_, direct_;
  std::vector<Tensor> kept_;
  std::map<int, std::vector<std::pair<dn::memory::desc, dn::memory>>> layouts_;
  std::vector<Step> steps_;
  std::vector<dn::memory> out_mem_, grouped_views_;
  std::vector<bool> out_copy_;
  std::vector<dn::reorder> out_reorder_;
  // Views over non-constant memories (reshapes, permutations) take their base's handle at
  // each call.
  // Memories over another's bytes (at a byte offset: a slice's window), set before each run.
  struct View {
    dn::memory view, base;
    size_t offset = 0;
  };
  std::vector<View> views_;
  std::set<int> view_values_;    // values that are views of another's bytes (reshapes)
  std::set<int> permute_views_;  // permutes built as views (read by reshapes only)
  std::vector<dn::memory> scratch_;  // intermediates, placed in arena_
  std::vector<int64_t> last_use_;    // per value: the last node that reads it
  int64_t node_index_ = -1;          // the node being built (or run, in an error)
  std::vector<std::string> node_labels_;
  Tensor arena_;
  Tensor wino_work_;                 // Winograd convolutions' shared working memory
};

class DnnlModule : public runtime::RuntimeModule {
 public:
  explicit DnnlModule(std::string graph) : graph_text_(std::move(graph)) {
    try {
      graph_ = json::parse(graph_text_);
    } catch (const json::exception& e) {
      throw_error("ValueError", std::string("dnnl module: malformed graph: ") + e.what());
    }
    if (!graph_.is_object() || graph_.value("version", 0) != 1 || !graph_.contains("functions"))
      throw_error("ValueError", "dnnl module: not a version-1 graph");
    for (const auto& f : graph_["functions"]) {
      symbols_.push_back(f.at("symbol").get<std::string>());
      for (const auto& c : f.at("constants")) const_names_.push_back(c.at("name").get<std::string>());
    }
    std::sort(const_names_.begin(), const_names_.end());
    const_names_.erase(std::unique(const_names_.begin(), const_names_.end()), const_names_.end());
  }

  std::string type_key() const override { return "dnnl"; }
  std::vector<std::string> function_names() const override { return symbols_; }
  std::vector<std::string> const_names() const override { return const_names_; }
  void init_constants(const std::map<std::string, Tensor>& constants) override {
    std::lock_guard lock(mu_);
    constants_ = constants;
    programs_.clear();
  }
  void save_to_binary(std::string& out) const override {
    out += runtime::write_module_sections(kModuleFormat, {graph_text_});
  }
  std::string get_source(const std::string& format) const override {
    return format.empty() || format == "json" ? graph_text_ : "";
  }

  runtime::PackedFunc get_function(const std::string& symbol) override {
    size_t index = std::find(symbols_.begin(), symbols_.end(), symbol) - symbols_.begin();
    if (index == symbols_.size()) return {};
    return [this, index](std::span<const Tensor> in, std::span<Tensor> out) {
      std::lock_guard lock(mu_);
      Program& p = program(index);
      p.run(*stream_, in, out);
    };
  }

  // `onednn`: oneDNN's Winograd convolutions, else our kernel's.
  int64_t winograd_convs(bool onednn) {
    std::lock_guard lock(mu_);
    int64_t count = 0;
    for (const auto& [_, p] : programs_) count += onednn ? p->onednn_winograd_steps() : p->winograd_steps();
    return count;
  }

 private:
  Program& program(size_t index);

  std::string graph_text_;
  json graph_;
  std::vector<std::string> symbols_, const_names_;
  std::map<std::string, Tensor> constants_;
  std::mutex mu_;
  std::unique_ptr<dn::engine> engine_;
  std::unique_ptr<dn::stream> stream_;
  std::map<size_t, std::unique_ptr<Program>> programs_;
};

Program& DnnlModule::program(size_t index) {
  auto it = programs_.find(index);
  if (it != programs_.end()) return *it->second;
  if (!engine_) {
    engine_ = std::make_unique<dn::engine>(dn::engine::kind::cpu, 0);
    stream_ = std::make_unique<dn::stream>(*engine_);
  }
  int threads = graph_.value("num_threads", 0);
  set_threads(threads);
  try {
    auto p = std::make_unique<Program>(graph_["functions"][index], threads, graph_.value("winograd", 1), constants_,
                                       *engine_);
    return *(programs_[index] = std::move(p));
  } catch (const dn::error& e) {
    throw_error("ValueError", "dnnl module, function '" + symbols_[index] + "': oneDNN rejected the graph: " +
                                  e.what());
  } catch (const json::exception& e) {
    throw_error("ValueError", "dnnl module, function '" + symbols_[index] + "': malformed graph: " + e.what());
  } catch (const Error& e) {
    if (e.message().rfind("dnnl module", 0) == 0) throw;
    throw_error(e.kind(), "dnnl module, function '" + symbols_[index] + "': " + e.message());
  }
}

runtime::ModulePtr load_dnnl(std::string_view bytes) {
  auto sections = runtime::read_module_sections(kModuleFormat, bytes, {"graph"});
  return std::make_shared<DnnlModule>(std::move(sections[0]));
}

}  // namespace

PARTITA_REGISTER_MODULE_LOADER(kModuleFormat.type_key, load_dnnl);

runtime::ModulePtr make_dnnl_module(std::string graph_json) { return std::make_shared<DnnlModule>(std::move(graph_json)); }

int64_t dnnl_module_winograd_convs(runtime::RuntimeModule& module) {
  if (auto* m = dynamic_cast<DnnlModule*>(&module)) return m->winograd_convs(/*onednn=*/false);
  return 0;
}

int64_t dnnl_module_onednn_winograd_convs(runtime::RuntimeModule& module) {
  if (auto* m = dynamic_cast<DnnlModule*>(&module)) return m->winograd_convs(/*onednn=*/true);
  return 0;
}

}  // namespace partita::backend::dnnl
