// Helpers shared by the script tests.
#pragma once

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace partita::script::testing {

/// Lines of `text` with trailing whitespace removed and trailing empty lines dropped.
inline std::vector<std::string> normalized_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    while (!line.empty() && (line.back() == ' ' || line.back() == '\r' || line.back() == '\t')) line.pop_back();
    lines.push_back(line);
  }
  while (!lines.empty() && lines.back().empty()) lines.pop_back();
  return lines;
}

inline std::string read_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace partita::script::testing
