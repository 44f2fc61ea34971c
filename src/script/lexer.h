// The lexer of the TVMScript subset: Python-like tokens with INDENT/DEDENT, comments skipped,
// newlines inside brackets ignored.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "partita/support/error.h"

namespace partita::script::detail {

enum class Tok : uint8_t { Name, Int, Float, String, Punct, Newline, Indent, Dedent, End };

struct Token {
  Tok kind;
  std::string_view text;  // for String: the quoted source text
  int line;
  int column;
};

/// Splits `text` into tokens; throws ParseError on bad characters, unterminated strings,
/// unbalanced brackets and inconsistent indentation.
std::vector<Token> tokenize(std::string_view text, const std::string& file);

/// The value of a String token (unescaped); throws ParseError on a bad escape.
std::string unquote(const Token& t, const std::string& file);

/// A readable description of a token for "expected ..., found ..." messages.
std::string describe(const Token& t);

[[noreturn]] void parse_error(const std::string& file, int line, int column, const std::string& msg);

}  // namespace partita::script::detail
