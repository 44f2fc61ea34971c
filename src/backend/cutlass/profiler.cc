// The GEMM profiler and its cache (see profiler.h).
#include "profiler.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "device_code.h"
#include "partita/support/error.h"
#include "partita/support/temp_dir.h"

namespace partita::backend::cutlass {

namespace fs = std::filesystem;

namespace {

// The profiler program: fills the operands with random values once per workload, then for each
// candidate runs it once — checking it can, and that its result is the default candidate's (the
// configuration the GPU tests check against the host; a candidate that differs by more than
// the dtype's tolerance, or leaves an element unwritten, is refused with an "F" line, so a
// faster kernel is never a wrong one) —, warms up, and times it two ways on its own stream:
// a CUDA graph of a burst of calls (the kernels alone, as the VM replays a model: "R" lines,
// what the choice uses) and the same burst through the host path (the unit's per-call argument
// and descriptor setup and launch, back to back: "B" lines; slower than "R" where that host work
// is longer than the kernel).
constexpr const char* kProfilerMain = R"PT(
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

template <class T>
__global__ void pt_fill(T* p, size_t n, unsigned seed, float scale) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    unsigned h = unsigned(i) * 2654435761u ^ seed;
    h ^= h >> 13; h *= 0x5bd1e995u; h ^= h >> 15;
    float v = (float(h & 0xffff) / 32768.f - 1.f) * scale;
    p[i] = T(v);
  }
}
template <class T>
void* pt_random(size_t n, unsigned seed, float scale) {
  void* p = nullptr;
  if (cudaMalloc(&p, std::max<size_t>(n, 1) * sizeof(T)) != cudaSuccess) return nullptr;
  pt_fill<T><<<1024, 256>>>(static_cast<T*>(p), n, seed, scale);
  return p;
}

// out[0] = max |d - ref| (a NaN counts as the largest float), out[1] = max |ref|, as the bits of
// non-negative floats (which order as unsigned integers).
template <class T>
__global__ void pt_compare(const T* d, const T* ref, size_t n, unsigned* out) {
  float md = 0.f, mr = 0.f;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    float a = float(d[i]), b = float(ref[i]);
    float e = fabsf(a - b);
    md = fmaxf(md, e <= 3.0e38f ? e : 3.0e38f);
    mr = fmaxf(mr, fabsf(b) <= 3.0e38f ? fabsf(b) : 3.0e38f);
  }
  atomicMax(&out[0], __float_as_uint(md));
  atomicMax(&out[1], __float_as_uint(mr));
}

// The median of 5 samples, each the mean of one burst of `reps` calls between two events.
template <class F>
float pt_median_burst(F burst, int reps, cudaStream_t s, cudaEvent_t e0, cudaEvent_t e1) {
  std::vector<float> times;
  for (int r = 0; r < 5; ++r) {
    cudaEventRecord(e0, s);
    burst();
    cudaEventRecord(e1, s);
    cudaEventSynchronize(e1);
    float ms = 0;
    cudaEventElapsedTime(&ms, e0, e1);
    times.push_back(ms / reps);
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

int main(int argc, char** argv) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::printf("NODEVICE\n");
    return 0;
  }
  if (argc != 2) return 2;
  FILE* f = std::fopen(argv[1], "r");
  if (!f) return 3;
  long long m, n, k, batch;
  int bias, act, res, post;
  int w = 0;
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  int sms = 132;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  while (std::fscanf(f, "%lld %lld %lld %lld %d %d %d %d", &m, &n, &k, &batch, &bias, &act, &res, &post) == 8) {
    float in_scale = PT_IN_IS_INT ? 3.f : 1.f;
    void* a = pt_random<PT_IN_T>(size_t(batch * m * k), 1, in_scale);
    void* b = pt_random<PT_IN_T>(size_t(batch * k * n), 2, in_scale);
    void* bv = pt_random<PT_OUT_T>(size_t(n), 3, 1.f);
    void* c = PT_HAS_C ? pt_random<PT_OUT_T>(size_t(batch * m * n), 4, 1.f) : nullptr;
    void* d = nullptr;
    void* ref = nullptr;
    size_t d_bytes = size_t(batch * m * n) * sizeof(PT_OUT_T);
    cudaMalloc(&d, d_bytes);
    cudaMalloc(&ref, d_bytes);
    unsigned* cmp = nullptr;
    cudaMalloc(&cmp, 2 * sizeof(unsigned));
    bool have_ref = false;
    cudaDeviceSynchronize();
    for (int ci = 0; ci < int(sizeof(kCandidates) / sizeof(kCandidates[0])); ++ci) {
      // A split count that makes more than two waves of CTAs only adds reduction work.
      long long tiles = batch * ((m + kCandidates[ci].tile_m - 1) / kCandidates[ci].tile_m) *
                        ((n + kCandidates[ci].tile_n - 1) / kCandidates[ci].tile_n);
      if (kCandidates[ci].splits > 1 && tiles * kCandidates[ci].splits > 2LL * sms) {
        std::printf("S %d %d %lld tiles x %d splits: more than two waves\n", w, ci, tiles, kCandidates[ci].splits);
        continue;
      }
      PtGemmArgs g = {};
      g.m = m; g.n = n; g.k = k; g.batch = batch;
      g.a = a; g.lda = k; g.batch_stride_a = m * k;
      g.b = b; g.ldb = PT_B_K_MAJOR ? k : n; g.batch_stride_b = k * n;
      g.bias = bias ? bv : nullptr;
      g.c = c; g.ldc = n; g.batch_stride_c = m * n;
      g.d = d; g.ldd = n; g.batch_stride_d = m * n;
      g.act = act; g.c_mode = res; g.post_act = post;
      g.splits = kCandidates[ci].splits;
      g.stream = s;
      g.workspace_size = kCandidates[ci].ws(&g);
      if (g.workspace_size) cudaMalloc(&g.workspace, g.workspace_size);
      char err[256] = {0};
      cudaMemsetAsync(d, 0xff, d_bytes, s);  // NaN (or -1): every element must be written
      if (kCandidates[ci].run(&g, err, sizeof err) != 0 || cudaStreamSynchronize(s) != cudaSuccess) {
        std::printf("F %d %d %s %s\n", w, ci, err, cudaGetErrorString(cudaGetLastError()));
        if (g.workspace) cudaFree(g.workspace);
        continue;
      }
      if (ci == 0) {
        have_ref = cudaMemcpyAsync(ref, d, d_bytes, cudaMemcpyDeviceToDevice, s) == cudaSuccess;
      } else {
        unsigned bits[2] = {0xffffffffu, 0u};
        if (have_ref) {
          cudaMemsetAsync(cmp, 0, 2 * sizeof(unsigned), s);
          pt_compare<PT_OUT_T><<<264, 256, 0, s>>>(static_cast<const PT_OUT_T*>(d), static_cast<const PT_OUT_T*>(ref),
                                                   size_t(batch * m * n), cmp);
          cudaMemcpyAsync(bits, cmp, sizeof bits, cudaMemcpyDeviceToHost, s);
          cudaStreamSynchronize(s);
        }
        float md, mr;
        std::memcpy(&md, &bits[0], sizeof md);
        std::memcpy(&mr, &bits[1], sizeof mr);
        if (!have_ref || !(md <= PT_CHECK_RTOL * mr)) {
          std::printf("F %d %d its result differs from the default kernel's (max |diff| %g, max %g)\n", w, ci,
                      double(md), double(mr));
          if (g.workspace) cudaFree(g.workspace);
          continue;
        }
      }
      for (int i = 0; i < 3; ++i) kCandidates[ci].run(&g, err, sizeof err);
      // Enough repetitions for ~4 ms a burst, between 5 and 200.
      cudaEventRecord(e0, s);
      kCandidates[ci].run(&g, err, sizeof err);
      cudaEventRecord(e1, s);
      cudaEventSynchronize(e1);
      float once = 0;
      cudaEventElapsedTime(&once, e0, e1);
      int reps = std::min(200, std::max(5, int(4.f / std::max(once, 1e-3f))));
      auto host_burst = [&] {
        for (int i = 0; i < reps; ++i) kCandidates[ci].run(&g, err, sizeof err);
      };
      float host_ms = pt_median_burst(host_burst, reps, s, e0, e1);
      // The burst as a graph; where capturing fails, the host path's time stands for both.
      cudaGraphExec_t exec = nullptr;
      bool captured = false;
      if (cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) == cudaSuccess) {
        bool ok = true;
        for (int i = 0; i < reps; ++i) ok = ok && kCandidates[ci].run(&g, err, sizeof err) == 0;
        cudaGraph_t graph = nullptr;
        captured = cudaStreamEndCapture(s, &graph) == cudaSuccess && ok && graph &&
                   cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess;
        if (graph) cudaGraphDestroy(graph);
      }
      cudaGetLastError();
      float graph_ms = host_ms;
      if (captured) {
        cudaGraphLaunch(exec, s);  // its first launch uploads it
        graph_ms = pt_median_burst([&] { cudaGraphLaunch(exec, s); }, reps, s, e0, e1);
        cudaGraphExecDestroy(exec);
      }
      if (cudaStreamSynchronize(s) != cudaSuccess) {
        std::printf("F %d %d timing: %s\n", w, ci, cudaGetErrorString(cudaGetLastError()));
      } else {
        std::printf("R %d %d %.6f\n", w, ci, graph_ms);
        std::printf("B %d %d %.6f\n", w, ci, host_ms);
      }
      if (g.workspace) cudaFree(g.workspace);
    }
    cudaFree(a); cudaFree(b); cudaFree(bv); if (c) cudaFree(c); cudaFree(d); cudaFree(ref); cudaFree(cmp);
    ++w;
  }
  std::fclose(f);
  return 0;
}
)PT";

std::string device_type(DataType t) {
  if (t == DataType::Float(16)) return "__half";
  if (t == DataType::BFloat16()) return "__nv_bfloat16";
  if (t == DataType::Float(32)) return "float";
  if (t == DataType::Int(8)) return "int8_t";
  return "int32_t";
}

}  // namespace

std::string GemmWorkload::key(int sm) const {
  std::ostringstream s;
  s << "sm" << sm << " " << cls.id() << " m=" << m << " n=" << n << " k=" << k << " batch=" << batch;
  return s.str();
}

ProfileCache::ProfileCache(std::string path) : path_(std::move(path)) {
  std::ifstream in(path_);
  std::string line;
  while (std::getline(in, line)) {
    size_t a = line.find('\t'), b = a == std::string::npos ? a : line.find('\t', a + 1);
    if (b == std::string::npos) continue;
    try {
      GemmConfig::parse(line.substr(a + 1, b - a - 1));
      entries_[line.substr(0, a)] = {line.substr(a + 1, b - a - 1), std::stod(line.substr(b + 1))};
    } catch (...) {
      // A line from another version or a torn write: ignored.
    }
  }
}

std::optional<GemmConfig> ProfileCache::lookup(const std::string& key) const {
  auto it = entries_.find(key);
  if (it == entries_.end()) return std::nullopt;
  return GemmConfig::parse(it->second.first);
}

void ProfileCache::store(const std::string& key, const GemmConfig& config, double ms) {
  entries_[key] = {config.id(), ms};
  std::ofstream out(path_, std::ios::app);
  out << key << "\t" << config.id() << "\t" << ms << "\n";
  if (!out) throw_error("IOError", "cutlass: cannot append to the profile cache " + path_);
}

bool gpu_present() {
  if (const char* e = std::getenv("PARTITA_CUTLASS_PROFILE"); e && std::string(e) == "0") return false;
  std::error_code ec;
  return fs::exists("/dev/nvidia0", ec) || fs::exists("/dev/nvidiactl", ec);
}

std::string profiler_source(const GemmClass& cls, const std::vector<GemmConfig>& candidates) {
  std::string s = "// CUTLASS GEMM profiler for class " + cls.id() + " (generated by Partita's cutlass backend)\n";
  s += kGemmAbi;
  s += "typedef size_t (*PtWorkspaceFn)(const PtGemmArgs*);\n";
  s += "typedef int32_t (*PtRunFn)(const PtGemmArgs*, char*, size_t);\n";
  for (const auto& [sym, source] : gemm_units(cls, candidates)) {
    s += "extern \"C\" size_t " + sym + "_workspace(const PtGemmArgs*);\n";
    s += "extern \"C\" int32_t " + sym + "(const PtGemmArgs*, char*, size_t);\n";
  }
  s += "static const struct { const char* id; PtWorkspaceFn ws; PtRunFn run; int splits, tile_m, tile_n; } "
       "kCandidates[] = {\n";
  for (const auto& c : candidates) {
    std::string sym = gemm_symbol(cls, c);
    s += "    {\"" + c.id() + "\", " + sym + "_workspace, " + sym + ", " + std::to_string(c.splits) + ", " +
         std::to_string(c.tile_m) + ", " + std::to_string(c.tile_n) + "},\n";
  }
  s += "};\n";
  s += "#define PT_IN_T " + device_type(cls.in) + "\n";
  s += "#define PT_OUT_T " + device_type(cls.out) + "\n";
  s += std::string("#define PT_IN_IS_INT ") + (cls.in == DataType::Int(8) ? "1" : "0") + "\n";
  s += std::string("#define PT_B_K_MAJOR ") + (cls.b_k_major ? "1" : "0") + "\n";
  s += std::string("#define PT_HAS_C ") + (cls.has_c() ? "1" : "0") + "\n";
  // How far a candidate's result may be from the default's, relative to the largest value: the
  // tilings sum K in other orders (fp32 accumulators), then round to the result's dtype.
  s += std::string("#define PT_CHECK_RTOL ") +
       (cls.out == DataType::Int(32) ? "0.f" : cls.out == DataType::Float(32) ? "1e-3f" : "2e-2f") + "\n";
  s += kProfilerMain;
  return s;
}

std::optional<std::vector<std::vector<double>>> run_profiler(const std::string& exe,
                                                             const std::vector<GemmWorkload>& workloads,
                                                             size_t num_candidates, int timeout_s,
                                                             std::string* output,
                                                             std::vector<std::vector<double>>* host_path_ms) {
  TempDir temp("partita_profile_", "cutlass");
  const fs::path& dir = temp.path();
  {
    std::ofstream w(dir / "workloads.txt");
    for (const auto& x : workloads)
      w << x.m << " " << x.n << " " << x.k << " " << x.batch << " " << int(x.cls.epilogue.bias) << " "
        << x.cls.epilogue.act << " " << x.cls.epilogue.residual_mode << " " << x.cls.epilogue.post_act << "\n";
  }
  fs::path log = dir / "out.txt";
  std::string cmd = "timeout " + std::to_string(timeout_s) + " '" + exe + "' '" + (dir / "workloads.txt").string() +
                    "' > '" + log.string() + "' 2>&1";
  int rc = std::system(cmd.c_str());
  std::string out = read_file(log.string());
  if (output) *output = out;
  if (out.find("NODEVICE") != std::string::npos) return std::nullopt;
  if (rc != 0)
    throw_error("RuntimeError",
                "cutlass: the GEMM profiler failed (exit status " + std::to_string(rc) + "):\n" + out.substr(0, 4000));
  std::vector<std::vector<double>> ms(workloads.size(), std::vector<double>(num_candidates, -1.0));
  if (host_path_ms) *host_path_ms = ms;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream l(line);
    std::string tag;
    size_t w, c;
    double t;
    if (!(l >> tag) || (tag != "R" && tag != "B") || !(l >> w >> c >> t) || w >= ms.size() || c >= num_candidates)
      continue;
    if (tag == "R") ms[w][c] = t;
    else if (host_path_ms) (*host_path_ms)[w][c] = t;
  }
  return ms;
}

std::vector<GemmConfig> choose_gemm_configs(const std::vector<GemmWorkload>& workloads, const NvccOptions& nvcc,
                                            const ProfileOptions& options, ProfileReport* report) {
  ProfileReport local;
  ProfileReport& rep = report ? *report : local;
  std::vector<GemmConfig> out(workloads.size());
  std::string cache_file = options.cache_file.empty()
                               ? (fs::path(resolve_cache_dir(nvcc)) / "gemm_profile.tsv").string()
                               : options.cache_file;
  ProfileCache cache(cache_file);
  std::map<std::string, std::vector<size_t>> missing;  // class id -> workload indices
  std::map<std::string, GemmClass> classes;
  for (size_t i = 0; i < workloads.size(); ++i) {
    const GemmWorkload& w = workloads[i];
    out[i] = default_config(w.cls, nvcc.sm);
    if (w.m < 0) {
      ++rep.defaulted;
      continue;
    }
    if (auto c = cache.lookup(w.key(nvcc.sm))) {
      out[i] = *c;
      ++rep.from_cache;
      continue;
    }
    missing[w.cls.id()].push_back(i);
    classes[w.cls.id()] = w.cls;
  }
  if (missing.empty()) return out;
  if (!options.enabled || !gpu_present()) {
    for (const auto& [id, idx] : missing) rep.defaulted += int(idx.size());
    return out;
  }
  // Every class's candidates and profiler in one parallel compile, then one run per class.
  std::vector<std::pair<std::string, std::string>> units;
  std::map<std::string, std::pair<size_t, size_t>> unit_range;  // class -> [first, last) in units
  for (const auto& [id, cls] : classes) {
    size_t first = units.size();
    auto cands = candidate_configs(cls, nvcc.sm);
    for (auto& u : gemm_units(cls, cands)) units.push_back(std::move(u));
    units.emplace_back("profiler_" + id, profiler_source(cls, cands));
    unit_range[id] = {first, units.size()};
  }
  std::vector<std::string> objects = compile_objects(units, nvcc);
  for (const auto& [id, idx] : missing) {
    const GemmClass& cls = classes[id];
    auto cands = candidate_configs(cls, nvcc.sm);
    auto [first, last] = unit_range[id];
    std::string exe =
        link(std::vector<std::string>(objects.begin() + long(first), objects.begin() + long(last)), false, nvcc);
    std::vector<GemmWorkload> ws;
    for (size_t i : idx) ws.push_back(workloads[i]);
    std::string text;
    std::vector<std::vector<double>> host_ms;
    auto ms = run_profiler(exe, ws, cands.size(), options.timeout_s, &text, &host_ms);
    if (!ms) {
      rep.defaulted += int(idx.size());
      continue;
    }
    for (size_t j = 0; j < idx.size(); ++j) {
      int best = -1;
      for (size_t c = 0; c < cands.size(); ++c)
        if ((*ms)[j][c] > 0 && (best < 0 || (*ms)[j][c] < (*ms)[j][size_t(best)])) best = int(c);
      rep.log += ws[j].key(nvcc.sm) + ":";
      // "<config>=<graph ms>/<host path ms>"
      for (size_t c = 0; c < cands.size(); ++c)
        rep.log += " " + cands[c].id() + "=" + std::to_string((*ms)[j][c]) + "/" + std::to_string(host_ms[j][c]);
      rep.log += "\n";
      if (best < 0) {
        ++rep.defaulted;
        continue;
      }
      out[idx[j]] = cands[size_t(best)];
      cache.store(ws[j].key(nvcc.sm), cands[size_t(best)], (*ms)[j][size_t(best)]);
      ++rep.measured;
    }
  }
  return out;
}

}  // namespace partita::backend::cutlass
