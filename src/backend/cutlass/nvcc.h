// Running nvcc for the cutlass backend: objects cached on disk by a hash of their source and
// the full command line (a second build of the same model runs no nvcc), several units compiled
// in parallel, then linked into one shared object (a module) or an executable (the profiler).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace partita::backend::cutlass {

struct NvccOptions {
  std::string nvcc;                       // the compiler
  std::vector<std::string> include_dirs;  // CUTLASS's include/ and tools/util/include/
  int sm = 90;                            // GEMM units need 90 (sm90a: wgmma, TMA)
  bool fast_math = false;
  int jobs = 0;           // parallel nvcc processes (0: the machine's cores)
  std::string cache_dir;  // "" = $XDG_CACHE_HOME/partita/cutlass; "none" = no cache
  std::vector<std::string> extra_flags;
};

/// The cache directory these options use (created on demand); a fresh temporary directory when
/// caching is off.
std::string resolve_cache_dir(const NvccOptions& o);

/// What happened, for tests and the build log.
struct NvccStats {
  int compiled = 0;  // nvcc runs for objects
  int cached = 0;    // objects found in the cache
  int linked = 0;    // link runs
};
NvccStats& nvcc_stats();

/// Compiles each (name, source) into an object and returns their paths in order. Objects whose
/// hash is cached are reused; the rest are compiled, `jobs` at a time. Throws
/// Error("CompileError") with nvcc's output (naming the unit) when one fails.
std::vector<std::string> compile_objects(const std::vector<std::pair<std::string, std::string>>& units,
                                         const NvccOptions& o);

/// Links objects into a shared object (`shared`) or an executable with the shared CUDA runtime
/// (cached by the objects' names, which are hashes); returns the output's path.
std::string link(const std::vector<std::string>& objects, bool shared, const NvccOptions& o);

/// A 128-bit hex digest of `text` (two FNV-1a 64 passes).
std::string content_hash(const std::string& text);
std::string read_file(const std::string& path);

}  // namespace partita::backend::cutlass
