// The .npy file format (NumPy's format version 1.0): a magic string, a little-endian header
// length, a Python-dict header (descr, fortran_order, shape) and the raw C-order data.
// Only little-endian (or byte-order-free) C-order arrays of Partita's dtypes are handled.
#pragma once

#include <string>

#include "partita/runtime/tensor.h"

namespace partita::cli {

/// Reads `path`; Error("IOError") if unreadable, Error("ValueError") naming the file for a
/// malformed header, a Fortran-order or big-endian array, or an unsupported dtype.
Tensor read_npy(const std::string& path);
/// Parses the bytes of a .npy file (`name` is used in error messages).
Tensor parse_npy(const std::string& bytes, const std::string& name);
/// Writes `t` as a version 1.0 .npy file; Error("IOError") on failure.
void write_npy(const std::string& path, const Tensor& t);
/// The bytes of `t` as a .npy file.
std::string serialize_npy(const Tensor& t);

}  // namespace partita::cli
