// A private directory under the system's temporary folder, removed with all it holds when the
// object goes: where compiler and profiler runs write their sources, objects and logs.
#pragma once

#include <filesystem>
#include <string>

namespace partita {

/// Makes `<tmp>/<prefix>XXXXXX` (mkdtemp: mode 0700, a fresh name); Error("IOError") naming
/// `owner` when it cannot.
std::filesystem::path make_temp_dir(const std::string& prefix, const std::string& owner);

class TempDir {
 public:
  TempDir(const std::string& prefix, const std::string& owner) : path_(make_temp_dir(prefix, owner)) {}
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace partita
