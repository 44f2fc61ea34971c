// nvcc with an object cache (see nvcc.h).
#include "nvcc.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "partita/support/error.h"
#include "partita/support/temp_dir.h"

namespace partita::backend::cutlass {

namespace fs = std::filesystem;

namespace {

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}

void write_file_atomically(const fs::path& path, const std::string& bytes) {
  fs::path tmp = path;
  tmp += ".tmp" + std::to_string(::getpid()) + "_" +
         std::to_string(std::hash<std::thread::id>()(std::this_thread::get_id()));
  {
    std::ofstream out(tmp, std::ios::binary);
    out << bytes;
    if (!out) throw_error("IOError", "cutlass: cannot write " + tmp.string());
  }
  fs::rename(tmp, path);
}

std::string arch_flag(int sm) {
  // sm90a (wgmma, setmaxnreg) is spelled with -gencode: the -arch shorthand also runs an sm_90
  // pass that rejects them.
  std::string a = std::to_string(sm) + (sm == 90 ? "a" : "");
  return "-gencode=arch=compute_" + a + ",code=sm_" + a;
}

// The flags that decide what an object holds (hashed). Include directories are not: the same
// CUTLASS release may live anywhere (a build machine, the GPU machine a cache was carried to).
std::string code_flags(const NvccOptions& o) {
  std::string f = "-std=c++17 -O3 " + arch_flag(o.sm) + " --expt-relaxed-constexpr -Xcompiler -fPIC -DNDEBUG -w";
  if (o.fast_math) f += " --use_fast_math";
  for (const auto& x : o.extra_flags) f += " " + shell_quote(x);
  return f;
}

std::string include_flags(const NvccOptions& o) {
  std::string f;
  for (const auto& d : o.include_dirs) f += " -I" + shell_quote(d);
  return f;
}

struct Job {
  std::string name, source, object, command, log;
  int rc = 0;
};

}  // namespace

NvccStats& nvcc_stats() {
  static NvccStats s;
  return s;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string content_hash(const std::string& text) {
  auto fnv = [&](uint64_t h) {
    for (unsigned char c : text) {
      h ^= c;
      h *= 1099511628211ull;
    }
    return h;
  };
  char buf[40];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(fnv(14695981039346656037ull)),
                static_cast<unsigned long long>(fnv(0x9e3779b97f4a7c15ull)));
  return buf;
}

std::string resolve_cache_dir(const NvccOptions& o) {
  fs::path dir;
  if (o.cache_dir == "none") {
    static std::once_flag once;
    static std::string tmp;
    std::call_once(once, [] { tmp = make_temp_dir("partita_cutlass_", "cutlass").string(); });
    dir = tmp;
  } else if (!o.cache_dir.empty()) {
    dir = o.cache_dir;
  } else if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) {
    dir = fs::path(x) / "partita" / "cutlass";
  } else if (const char* h = std::getenv("HOME"); h && *h) {
    dir = fs::path(h) / ".cache" / "partita" / "cutlass";
  } else {
    dir = fs::temp_directory_path() / "partita_cutlass_cache";
  }
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw_error("IOError", "cutlass: cannot create the cache directory " + dir.string() + ": " + ec.message());
  return dir.string();
}

std::vector<std::string> compile_objects(const std::vector<std::pair<std::string, std::string>>& units,
                                         const NvccOptions& o) {
  fs::path dir = resolve_cache_dir(o);
  std::string flags = code_flags(o);
  std::vector<Job> jobs;
  std::vector<std::string> objects;
  for (const auto& [name, source] : units) {
    // The hash covers the command line too, so other flags never reuse an object.
    std::string h = content_hash(fs::path(o.nvcc).filename().string() + "\n" + flags + "\n" + source);
    fs::path obj = dir / (h + ".o"), src = dir / (h + ".cu");
    objects.push_back(obj.string());
    // A cached object counts only when the source kept beside it is exactly this one.
    if (fs::exists(obj) && fs::exists(src) && read_file(src.string()) == source) {
      ++nvcc_stats().cached;
      continue;
    }
    bool dup = false;
    for (const auto& j : jobs) dup = dup || j.object == obj.string();
    if (dup) continue;
    Job j;
    j.name = name;
    j.source = source;
    j.object = obj.string();
    jobs.push_back(std::move(j));
  }
  if (jobs.empty()) return objects;
  bool needs_cutlass = false;
  for (const auto& j : jobs) needs_cutlass = needs_cutlass || j.source.find("#include \"cutlass/") != std::string::npos;
  for (const auto& d : o.include_dirs)
    if (needs_cutlass && !fs::is_directory(d))
      throw_error("CompileError", "cutlass: the CUTLASS headers are not at " + d +
                                      " (run scripts/fetch_cuda_headers.sh, or set the target's cutlass_dir)");
  TempDir temp("partita_nvcc_", "cutlass");
  const fs::path& work = temp.path();
  for (size_t i = 0; i < jobs.size(); ++i) {
    Job& j = jobs[i];
    fs::path src = work / (std::to_string(i) + ".cu"), obj = work / (std::to_string(i) + ".o");
    j.log = (work / (std::to_string(i) + ".log")).string();
    write_file_atomically(src, j.source);
    j.command = shell_quote(o.nvcc) + " " + flags + include_flags(o) + " -c " + shell_quote(src.string()) + " -o " +
                shell_quote(obj.string()) + " > " + shell_quote(j.log) + " 2>&1";
  }
  int width = o.jobs > 0 ? o.jobs : int(std::max(1u, std::thread::hardware_concurrency()));
  std::atomic<size_t> next{0};
  std::vector<std::thread> pool;
  // Each object enters the cache as soon as it is compiled, so an interrupted build keeps what
  // it finished.
  std::mutex stats_mutex;
  for (int t = 0; t < std::min<int>(width, int(jobs.size())); ++t)
    pool.emplace_back([&] {
      for (size_t i; (i = next++) < jobs.size();) {
        Job& j = jobs[i];
        j.rc = std::system(j.command.c_str());
        fs::path obj = work / (std::to_string(i) + ".o");
        if (j.rc != 0 || !fs::exists(obj)) continue;
        fs::path final_obj(j.object), final_src(j.object);
        final_src.replace_extension(".cu");
        write_file_atomically(final_src, j.source);
        write_file_atomically(final_obj, read_file(obj.string()));
        std::lock_guard<std::mutex> lock(stats_mutex);
        ++nvcc_stats().compiled;
      }
    });
  for (auto& t : pool) t.join();
  for (size_t i = 0; i < jobs.size(); ++i) {
    const Job& j = jobs[i];
    if (j.rc != 0 || !fs::exists(j.object)) {
      std::string out = read_file(j.log);
      if (out.size() > 6000) out = out.substr(0, 6000) + "\n...";
      throw_error("CompileError",
                  "cutlass: nvcc failed on " + j.name + " (exit status " + std::to_string(j.rc) + "):\n" + out);
    }
  }
  return objects;
}

std::string link(const std::vector<std::string>& objects, bool shared, const NvccOptions& o) {
  fs::path dir = resolve_cache_dir(o);
  std::string key = o.nvcc + (shared ? " shared" : " exe") + arch_flag(o.sm);
  for (const auto& obj : objects) key += "\n" + fs::path(obj).filename().string();
  fs::path out = dir / (content_hash(key) + (shared ? ".so" : ".exe"));
  if (fs::exists(out)) return out.string();
  fs::path tmp = out;
  tmp += ".tmp" + std::to_string(::getpid());
  fs::path log = tmp;
  log += ".log";
  // The shared CUDA runtime (the one the VM's device API uses), found through an rpath to the
  // toolkit's libraries as well as the loader's path.
  fs::path lib = fs::path(o.nvcc).parent_path().parent_path() / "lib64";
  std::string cmd = shell_quote(o.nvcc) + " " + arch_flag(o.sm) + " -cudart shared" + (shared ? " -shared" : "") +
                    " -Xlinker -rpath -Xlinker " + shell_quote(lib.string()) + " -o " + shell_quote(tmp.string());
  for (const auto& obj : objects) cmd += " " + shell_quote(obj);
  cmd += " > " + shell_quote(log.string()) + " 2>&1";
  int rc = std::system(cmd.c_str());
  std::string output = read_file(log.string());
  std::error_code ec;
  fs::remove(log, ec);
  if (rc != 0 || !fs::exists(tmp))
    throw_error("CompileError", "cutlass: linking with nvcc failed (exit status " + std::to_string(rc) + "):\n" +
                                    output.substr(0, 4000));
  ++nvcc_stats().linked;
  fs::rename(tmp, out);
  return out.string();
}

}  // namespace partita::backend::cutlass
