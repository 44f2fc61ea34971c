// NVRTC compilation with a cache keyed by the exact source and options: in memory for the
// process, and on disk (one file per cubin, holding the text it was compiled from, so a hash
// collision can never hand back the wrong cubin).
#include <nvrtc.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <unistd.h>
#include <unordered_map>
#include <vector>

#include "../cuda_codegen.h"
#include "partita/runtime/serialize.h"

namespace partita::backend::cuda {
namespace {

constexpr const char* kCacheMagic = "PARTITA-CUBIN-1\n";


std::string hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

struct MemoryCache {
  std::mutex mutex;
  std::unordered_map<uint64_t, std::pair<std::string, std::string>> entries;  // key -> (text, cubin)
  CompileCacheStats stats;
};

MemoryCache& memory_cache() {
  static MemoryCache cache;
  return cache;
}

std::filesystem::path cache_dir(const codegen::Target& target) {
  const std::string& dir = target.get_string("cache_dir");
  if (dir == "none") return {};
  if (!dir.empty()) return dir;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return std::filesystem::path(xdg) / "partita" / "cuda";
  if (const char* home = std::getenv("HOME"); home && *home)
    return std::filesystem::path(home) / ".cache" / "partita" / "cuda";
  return {};
}

std::optional<std::string> read_cached(const std::filesystem::path& file, const std::string& text) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  std::string data = ss.str();
  std::string head = kCacheMagic + std::to_string(text.size()) + "\n";
  if (data.compare(0, head.size(), head) != 0 || data.size() < head.size() + text.size()) return std::nullopt;
  if (data.compare(head.size(), text.size(), text) != 0) return std::nullopt;
  std::string cubin = data.substr(head.size() + text.size());
  if (cubin.empty()) return std::nullopt;
  return cubin;
}

// Best effort: a cache that cannot be written only costs the next build a compile.
void write_cached(const std::filesystem::path& dir, const std::filesystem::path& file, const std::string& text,
                  const std::string& cubin) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return;
  std::filesystem::path tmp = dir / (file.filename().string() + ".tmp" + std::to_string(::getpid()));
  {
    std::ofstream out(tmp, std::ios::binary);
    out << kCacheMagic << text.size() << "\n" << text << cubin;
    if (!out) return;
  }
  std::filesystem::rename(tmp, file, ec);
  if (ec) std::filesystem::remove(tmp, ec);
}

void check_nvrtc(nvrtcResult r, const char* what) {
  if (r != NVRTC_SUCCESS) throw_error("CompileError", std::string("cuda: ") + what + ": " + nvrtcGetErrorString(r));
}

// NVRTC's log with its error messages (each with the two lines that show where) ahead of the
// rest: a long log of warnings would otherwise push the errors past the truncation.
std::string errors_first(const std::string& log) {
  std::vector<std::string> lines;
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::string errors;
  for (size_t i = 0; i < lines.size(); ++i)
    if (lines[i].find(": error") != std::string::npos)
      for (size_t j = i; j < std::min(lines.size(), i + 3); ++j) errors += lines[j] + "\n";
  return errors.empty() ? log : errors + "\n" + log;
}

std::string run_nvrtc(const std::string& source, const std::vector<std::string>& options) {
  nvrtcProgram prog = nullptr;
  check_nvrtc(nvrtcCreateProgram(&prog, source.c_str(), "partita_kernels.cu", 0, nullptr, nullptr),
              "nvrtcCreateProgram");
  struct Destroy {
    nvrtcProgram* p;
    ~Destroy() { nvrtcDestroyProgram(p); }
  } destroy{&prog};
  std::vector<const char*> opts;
  for (const auto& o : options) opts.push_back(o.c_str());
  nvrtcResult r = nvrtcCompileProgram(prog, int(opts.size()), opts.data());
  if (r != NVRTC_SUCCESS) {
    size_t n = 0;
    nvrtcGetProgramLogSize(prog, &n);
    std::string log(n, '\0');
    if (n) nvrtcGetProgramLog(prog, log.data());
    log = errors_first(log);
    if (log.size() > 6000) log = log.substr(0, 6000) + "\n...";
    throw_error("CompileError", std::string("cuda: NVRTC could not compile the generated kernels (") +
                                    nvrtcGetErrorString(r) + "):\n" + log);
  }
  size_t size = 0;
  check_nvrtc(nvrtcGetCUBINSize(prog, &size), "nvrtcGetCUBINSize");
  if (size == 0)
    throw_error("CompileError", "cuda: NVRTC produced no cubin (the arch must name a real GPU, such as sm_90)");
  std::string cubin(size, '\0');
  check_nvrtc(nvrtcGetCUBIN(prog, cubin.data()), "nvrtcGetCUBIN");
  return cubin;
}

}  // namespace

std::string compile_cubin(const std::string& source, const codegen::Target& target) {
  std::vector<std::string> options = {"--gpu-architecture=" + target.get_string("arch"), "-default-device",
                                      "-std=c++17"};
  for (const auto& d : target.get_string_list("include_dirs")) options.push_back("-I" + d);
  for (const auto& o : target.get_string_list("options")) options.push_back(o);
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  std::string text = "nvrtc " + std::to_string(major) + "." + std::to_string(minor) + "\n";
  for (const auto& o : options) text += o + "\n";
  text += source;
  uint64_t key = runtime::fnv1a64(text);

  MemoryCache& mem = memory_cache();
  {
    std::lock_guard<std::mutex> lock(mem.mutex);
    auto it = mem.entries.find(key);
    if (it != mem.entries.end() && it->second.first == text) {
      ++mem.stats.memory_hits;
      return it->second.second;
    }
  }
  std::filesystem::path dir = cache_dir(target);
  std::filesystem::path file = dir.empty() ? std::filesystem::path() : dir / (hex(key) + ".cubin");
  std::optional<std::string> cubin;
  if (!dir.empty()) cubin = read_cached(file, text);
  bool from_disk = cubin.has_value();
  if (!cubin) {
    cubin = run_nvrtc(source, options);
    if (!dir.empty()) write_cached(dir, file, text, *cubin);
  }
  std::lock_guard<std::mutex> lock(mem.mutex);
  if (from_disk) ++mem.stats.disk_hits;
  else ++mem.stats.compiles;
  mem.entries[key] = {text, *cubin};
  return *cubin;
}

CompileCacheStats compile_cache_stats() {
  MemoryCache& mem = memory_cache();
  std::lock_guard<std::mutex> lock(mem.mutex);
  return mem.stats;
}

void clear_compile_memory_cache() {
  MemoryCache& mem = memory_cache();
  std::lock_guard<std::mutex> lock(mem.mutex);
  mem.entries.clear();
}

}  // namespace partita::backend::cuda
