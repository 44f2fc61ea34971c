// Kernel choice by measurement: for each GEMM workload (the whole of it: class — dtypes, the
// weight's layout, the epilogue —, M, N, K, batch, the architecture) the
// profiler compiles the class's candidate configurations into one program, times every one on
// the GPU in one run per class, and records the fastest in a persistent cache file that later
// builds read. Without a GPU, for symbolic shapes, or with profiling off, the class's default
// configuration is used (gemm_kernel.h).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gemm_kernel.h"
#include "nvcc.h"

namespace partita::backend::cutlass {

struct GemmWorkload {
  GemmClass cls;                            // the epilogue included
  int64_t m = -1, n = 0, k = 0, batch = 1;  // m < 0: symbolic
  /// The cache key: "sm90 f16_bk_c_f16_bias_relu_add m=.. n=.. k=.. batch=..".
  std::string key(int sm) const;
};

/// The persistent cache: one line per workload, "<key>\t<config id>\t<milliseconds>"; later
/// lines win, so appending is updating. Unreadable lines are skipped.
class ProfileCache {
 public:
  explicit ProfileCache(std::string path);
  std::optional<GemmConfig> lookup(const std::string& key) const;
  void store(const std::string& key, const GemmConfig& config, double ms);
  const std::string& path() const { return path_; }
  size_t size() const { return entries_.size(); }

 private:
  std::string path_;
  std::map<std::string, std::pair<std::string, double>> entries_;
};

struct ProfileOptions {
  bool enabled = true;     // measure workloads the cache does not know, when a GPU is present
  std::string cache_file;  // "" = <object cache dir>/gemm_profile.tsv
  int timeout_s = 120;     // for one profiler run
};

/// What choose_gemm_configs did.
struct ProfileReport {
  int from_cache = 0, measured = 0, defaulted = 0;
  std::string log;  // the profiler's table, for the build log
};

/// A configuration for every workload (same order). May compile and run profilers.
std::vector<GemmConfig> choose_gemm_configs(const std::vector<GemmWorkload>& workloads, const NvccOptions& nvcc,
                                            const ProfileOptions& options, ProfileReport* report = nullptr);

/// The profiler program's source for a class and its candidates (what choose_gemm_configs
/// compiles). Its arguments: a file of workloads, one per line "m n k batch bias act res post";
/// it prints "R <workload> <candidate> <ms>" (a CUDA graph of calls), "B ..." (the same calls
/// through the host path), "F <workload> <candidate> <why>", or NODEVICE.
std::string profiler_source(const GemmClass& cls, const std::vector<GemmConfig>& candidates);

/// Runs the profiler executable `exe` on `workloads`; returns per workload the milliseconds of
/// each candidate (negative: it failed) timed as a CUDA graph (the kernel alone), or nullopt
/// when there is no GPU; `host_path_ms` receives the same calls' time back to back through the
/// unit's host path (argument / descriptor setup and launch per call). Throws
/// Error("RuntimeError") when the program fails.
std::optional<std::vector<std::vector<double>>> run_profiler(
    const std::string& exe, const std::vector<GemmWorkload>& workloads, size_t num_candidates, int timeout_s,
    std::string* output = nullptr, std::vector<std::vector<double>>* host_path_ms = nullptr);

/// True when this machine has an NVIDIA GPU device node (no CUDA call from the compiler).
bool gpu_present();

}  // namespace partita::backend::cutlass
