// The metadata section of printed modules: non-scalar constants, referred to in the text as
// `metadata["relax.expr.Constant"][i]`, are listed after the module as comment lines
//
//   # Metadata (partita): relax.expr.Constant
//   # [0] float32 (2, 3) AACAPwAAAEA...
//
// one line per constant: index, dtype, shape and the raw little-endian bytes in base64.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "partita/runtime/tensor.h"

namespace partita::script::detail {

inline constexpr const char* kMetadataHeader = "# Metadata (partita): relax.expr.Constant";

std::string base64_encode(const void* data, size_t n);
/// Decodes `text`; returns false on a malformed input.
bool base64_decode(std::string_view text, std::vector<uint8_t>* out);

/// Appends the metadata section (a blank line, the header and one line per tensor) to `out`.
void append_metadata(const std::vector<Tensor>& constants, std::string* out);

}  // namespace partita::script::detail
