#include "partita/support/error.h"

namespace partita {

std::string SourceLocation::str() const {
  if (line <= 0) return file;
  std::string s = file.empty() ? std::string("<input>") : file;
  return s + ":" + std::to_string(line) + ":" + std::to_string(column);
}

static std::string format_what(const std::string& kind, const std::string& message,
                               const SourceLocation& loc) {
  std::string w = kind + ": ";
  if (loc.line > 0 || !loc.file.empty()) w += loc.str() + ": ";
  return w + message;
}

Error::Error(std::string kind, const std::string& message, SourceLocation loc)
    : std::runtime_error(format_what(kind, message, loc)),
      kind_(std::move(kind)),
      message_(message),
      loc_(std::move(loc)) {}

void throw_error(const std::string& kind, const std::string& message, SourceLocation loc) {
  throw Error(kind, message, std::move(loc));
}

}  // namespace partita
