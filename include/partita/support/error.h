// Errors the user can act on: every error names what is wrong and, where known, where.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace partita {

/// A position in a source text (1-based line and column); line 0 means unknown.
struct SourceLocation {
  std::string file;
  int line = 0;
  int column = 0;
  std::string str() const;
};

/// The one exception type of Partita. `kind` says which layer raised it
/// ("ParseError", "TypeError", "ValueError", ...) so bindings can map it.
class Error : public std::runtime_error {
 public:
  Error(std::string kind, const std::string& message, SourceLocation loc = {});
  const std::string& kind() const { return kind_; }
  const SourceLocation& location() const { return loc_; }
  /// The message without the kind/location prefix.
  const std::string& message() const { return message_; }

 private:
  std::string kind_;
  std::string message_;
  SourceLocation loc_;
};

[[noreturn]] void throw_error(const std::string& kind, const std::string& message,
                              SourceLocation loc = {});

/// Internal invariant (a bug in Partita, not the user's input).
#define PARTITA_ICHECK(cond)                                                           \
  do {                                                                                 \
    if (!(cond))                                                                       \
      ::partita::throw_error("InternalError", std::string("check failed: " #cond " at ") + \
                                                  __FILE__ + ":" + std::to_string(__LINE__)); \
  } while (0)

}  // namespace partita
