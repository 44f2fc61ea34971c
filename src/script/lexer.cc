#include "lexer.h"

#include <cctype>

namespace partita::script::detail {

void parse_error(const std::string& file, int line, int column, const std::string& msg) {
  throw Error("ParseError", msg, SourceLocation{file, line, column});
}

std::string describe(const Token& t) {
  switch (t.kind) {
    case Tok::Newline: return "end of line";
    case Tok::Indent: return "an indented block";
    case Tok::Dedent: return "end of the indented block";
    case Tok::End: return "end of input";
    case Tok::String: return "string " + std::string(t.text);
    default: return "'" + std::string(t.text) + "'";
  }
}

namespace {

bool is_name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

}  // namespace

std::vector<Token> tokenize(std::string_view src, const std::string& file) {
  std::vector<Token> toks;
  toks.reserve(src.size() / 4 + 16);
  std::vector<int> indents{0};
  std::vector<Token> brackets;  // open brackets, for balance errors
  size_t i = 0, n = src.size();
  int line = 1;
  size_t line_start = 0;
  bool at_line_start = true;
  auto col = [&](size_t pos) { return int(pos - line_start) + 1; };

  while (i < n) {
    if (at_line_start && brackets.empty()) {
      // Measure indentation; skip blank and comment-only lines.
      size_t j = i;
      int width = 0;
      while (j < n && (src[j] == ' ' || src[j] == '\t')) {
        if (src[j] == '\t') parse_error(file, line, col(j), "tab characters are not allowed in indentation");
        ++width;
        ++j;
      }
      if (j >= n) { i = j; break; }
      if (src[j] == '\n' || src[j] == '\r' || src[j] == '#') {
        while (j < n && src[j] != '\n') ++j;
        if (j < n) {
          ++j;
          ++line;
          line_start = j;
        }
        i = j;
        continue;
      }
      at_line_start = false;
      if (width > indents.back()) {
        indents.push_back(width);
        toks.push_back({Tok::Indent, src.substr(j, 0), line, col(j)});
      } else {
        while (width < indents.back()) {
          indents.pop_back();
          toks.push_back({Tok::Dedent, src.substr(j, 0), line, col(j)});
        }
        if (width != indents.back())
          parse_error(file, line, col(j), "unindent does not match any outer indentation level");
      }
      i = j;
      continue;
    }
    char c = src[i];
    if (c == '\n') {
      if (brackets.empty()) {
        toks.push_back({Tok::Newline, src.substr(i, 0), line, col(i)});
        at_line_start = true;
      }
      ++i;
      ++line;
      line_start = i;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r') { ++i; continue; }
    if (c == '\\' && i + 1 < n && src[i + 1] == '\n') {  // explicit line continuation
      i += 2;
      ++line;
      line_start = i;
      continue;
    }
    if (c == '#') {
      while (i < n && src[i] != '\n') ++i;
      continue;
    }
    size_t start = i;
    if (is_name_start(c)) {
      while (i < n && is_name_char(src[i])) ++i;
      toks.push_back({Tok::Name, src.substr(start, i - start), line, col(start)});
      continue;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) ||
        (c == '.' && i + 1 < n && std::isdigit(static_cast<unsigned char>(src[i + 1])))) {
      bool is_float = false;
      while (i < n && std::isdigit(static_cast<unsigned char>(src[i]))) ++i;
      if (i < n && src[i] == '.') {
        is_float = true;
        ++i;
        while (i < n && std::isdigit(static_cast<unsigned char>(src[i]))) ++i;
      }
      if (i < n && (src[i] == 'e' || src[i] == 'E')) {
        size_t k = i + 1;
        if (k < n && (src[k] == '+' || src[k] == '-')) ++k;
        if (k < n && std::isdigit(static_cast<unsigned char>(src[k]))) {
          is_float = true;
          i = k;
          while (i < n && std::isdigit(static_cast<unsigned char>(src[i]))) ++i;
        }
      }
      if (i < n && is_name_char(src[i]))
        parse_error(file, line, col(start), "malformed number '" + std::string(src.substr(start, i + 1 - start)) + "'");
      toks.push_back({is_float ? Tok::Float : Tok::Int, src.substr(start, i - start), line, col(start)});
      continue;
    }
    if (c == '"' || c == '\'') {
      ++i;
      while (i < n && src[i] != c && src[i] != '\n') {
        if (src[i] == '\\' && i + 1 < n && src[i + 1] != '\n') ++i;
        ++i;
      }
      if (i >= n || src[i] != c) parse_error(file, line, col(start), "unterminated string literal");
      ++i;
      toks.push_back({Tok::String, src.substr(start, i - start), line, col(start)});
      continue;
    }
    // Punctuation (longest match first).
    static const char* const kPunct[] = {"->", "//", "**", "==", "!=", "<=", ">=", "(", ")", "[", "]", "{", "}",
                                         ",", ":", ".", "=", "@", "+", "-", "*", "%", "<", ">"};
    std::string_view p;
    for (const char* cand : kPunct) {
      std::string_view sv(cand);
      if (src.substr(i, sv.size()) == sv) {
        p = src.substr(i, sv.size());
        break;
      }
    }
    if (p.empty()) {
      std::string shown = (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f)
                              ? "byte 0x" + std::to_string(static_cast<unsigned char>(c))
                              : "'" + std::string(1, c) + "'";
      parse_error(file, line, col(i), "unexpected character " + shown);
    }
    Token t{Tok::Punct, p, line, col(i)};
    if (p == "(" || p == "[" || p == "{") {
      brackets.push_back(t);
    } else if (p == ")" || p == "]" || p == "}") {
      char want = p == ")" ? '(' : p == "]" ? '[' : '{';
      if (brackets.empty())
        parse_error(file, line, col(i), "unmatched '" + std::string(p) + "'");
      if (brackets.back().text[0] != want)
        parse_error(file, line, col(i),
                    "closing '" + std::string(p) + "' does not match '" + std::string(brackets.back().text) +
                        "' opened at line " + std::to_string(brackets.back().line) + ":" +
                        std::to_string(brackets.back().column));
      brackets.pop_back();
    }
    toks.push_back(t);
    i += p.size();
  }
  if (!brackets.empty())
    parse_error(file, brackets.back().line, brackets.back().column,
                "'" + std::string(brackets.back().text) + "' is never closed");
  if (!toks.empty() && toks.back().kind != Tok::Newline && toks.back().kind != Tok::Dedent)
    toks.push_back({Tok::Newline, src.substr(n, 0), line, col(n)});
  while (indents.size() > 1) {
    indents.pop_back();
    toks.push_back({Tok::Dedent, src.substr(n, 0), line, col(n)});
  }
  toks.push_back({Tok::End, src.substr(n, 0), line, col(n)});
  return toks;
}

std::string unquote(const Token& t, const std::string& file) {
  std::string_view s = t.text.substr(1, t.text.size() - 2);
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\') {
      out += s[i];
      continue;
    }
    if (++i >= s.size()) parse_error(file, t.line, t.column, "bad escape at the end of a string");
    switch (s[i]) {
      case 'n': out += '\n'; break;
      case 't': out += '\t'; break;
      case 'r': out += '\r'; break;
      case '\\': out += '\\'; break;
      case '"': out += '"'; break;
      case '\'': out += '\''; break;
      case '0': out += '\0'; break;
      case 'x': {
        int v = 0;
        for (int k = 1; k <= 2; ++k) {
          if (i + k >= s.size() || !std::isxdigit(static_cast<unsigned char>(s[i + k])))
            parse_error(file, t.line, t.column, "bad \\x escape in string");
          char h = s[i + k];
          v = v * 16 + (std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : (std::tolower(h) - 'a' + 10));
        }
        out += char(v);
        i += 2;
        break;
      }
      default: parse_error(file, t.line, t.column, std::string("unknown escape '\\") + s[i] + "' in string");
    }
  }
  return out;
}

}  // namespace partita::script::detail
