#include "metadata.h"

namespace partita::script::detail {

namespace {
const char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
int decode_char(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}
}  // namespace

std::string base64_encode(const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  std::string out;
  out.reserve((n + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < n; i += 3) {
    uint32_t v = (uint32_t(p[i]) << 16) | (uint32_t(p[i + 1]) << 8) | p[i + 2];
    out += kAlphabet[v >> 18];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += kAlphabet[v & 63];
  }
  if (i < n) {
    uint32_t v = uint32_t(p[i]) << 16;
    if (i + 1 < n) v |= uint32_t(p[i + 1]) << 8;
    out += kAlphabet[v >> 18];
    out += kAlphabet[(v >> 12) & 63];
    out += i + 1 < n ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

bool base64_decode(std::string_view text, std::vector<uint8_t>* out) {
  out->clear();
  if (text.size() % 4 != 0) return false;
  out->reserve(text.size() / 4 * 3);
  for (size_t i = 0; i < text.size(); i += 4) {
    int v[4];
    int pad = 0;
    for (int k = 0; k < 4; ++k) {
      char c = text[i + k];
      if (c == '=' && i + 4 == text.size() && k >= 2) {
        v[k] = 0;
        ++pad;
      } else {
        if (pad) return false;
        v[k] = decode_char(c);
        if (v[k] < 0) return false;
      }
    }
    uint32_t w = (uint32_t(v[0]) << 18) | (uint32_t(v[1]) << 12) | (uint32_t(v[2]) << 6) | uint32_t(v[3]);
    out->push_back(uint8_t(w >> 16));
    if (pad < 2) out->push_back(uint8_t(w >> 8));
    if (pad < 1) out->push_back(uint8_t(w));
  }
  return true;
}

void append_metadata(const std::vector<Tensor>& constants, std::string* out) {
  if (constants.empty()) return;
  *out += "\n\n";
  *out += kMetadataHeader;
  for (size_t i = 0; i < constants.size(); ++i) {
    const Tensor& t = constants[i];
    *out += "\n# [" + std::to_string(i) + "] " + t.dtype().str() + " (";
    for (int d = 0; d < t.ndim(); ++d) {
      if (d) *out += ", ";
      *out += std::to_string(t.shape()[d]);
    }
    if (t.ndim() == 1) *out += ",";
    *out += ") ";
    *out += base64_encode(t.data(), t.nbytes());
  }
}

}  // namespace partita::script::detail
