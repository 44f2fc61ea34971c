#include "npy.h"

#include <cstring>
#include <fstream>
#include <sstream>

#include "partita/support/error.h"

namespace partita::cli {
namespace {

// NumPy type strings ("<f4", "|b1", ...) <-> DataType.
std::string descr_of(DataType dt, const std::string& name) {
  if (dt.is_bool()) return "|b1";
  char kind = dt.is_float() && dt.code() == DataType::Code::Float ? 'f' : dt.is_int() ? 'i' : dt.is_uint() ? 'u' : '?';
  if (kind == '?') throw_error("ValueError", name + ": dtype " + dt.str() + " cannot be stored in .npy");
  if (dt.bytes() == 1) return std::string("|") + kind + "1";
  return std::string("<") + kind + std::to_string(dt.bytes());
}

DataType dtype_of(const std::string& descr, const std::string& name) {
  auto bad = [&](const std::string& why) -> DataType {
    throw_error("ValueError", name + ": " + why + " (descr '" + descr + "')");
  };
  if (descr.size() < 3) return bad("unrecognised dtype");
  char order = descr[0], kind = descr[1];
  int bytes = 0;
  try {
    bytes = std::stoi(descr.substr(2));
  } catch (...) {
    return bad("unrecognised dtype");
  }
  if (order == '>' && bytes > 1) return bad("big-endian arrays are not supported");
  if (order != '<' && order != '|' && order != '=' && order != '>') return bad("unrecognised byte order");
  if (kind == 'b' && bytes == 1) return DataType::Bool();
  if (kind == 'f' && (bytes == 2 || bytes == 4 || bytes == 8)) return DataType::Float(bytes * 8);
  if (kind == 'i' && (bytes == 1 || bytes == 2 || bytes == 4 || bytes == 8)) return DataType::Int(bytes * 8);
  if (kind == 'u' && (bytes == 1 || bytes == 2 || bytes == 4 || bytes == 8)) return DataType::UInt(bytes * 8);
  return bad("unsupported dtype");
}

// The value text following 'key': in the header dict, up to (excluding) the terminator.
std::string dict_value(const std::string& header, const std::string& key, const std::string& name) {
  for (const char* q : {"'", "\""}) {
    std::string k = std::string(q) + key + q;
    size_t p = header.find(k);
    if (p == std::string::npos) continue;
    p = header.find(':', p + k.size());
    if (p == std::string::npos) break;
    ++p;
    while (p < header.size() && header[p] == ' ') ++p;
    if (p < header.size() && header[p] == '(') {
      size_t e = header.find(')', p);
      if (e == std::string::npos) break;
      return header.substr(p, e - p + 1);
    }
    if (p < header.size() && (header[p] == '\'' || header[p] == '"')) {
      size_t e = header.find(header[p], p + 1);
      if (e == std::string::npos) break;
      return header.substr(p + 1, e - p - 1);
    }
    size_t e = header.find_first_of(",}", p);
    std::string v = header.substr(p, e == std::string::npos ? std::string::npos : e - p);
    while (!v.empty() && v.back() == ' ') v.pop_back();
    return v;
  }
  throw_error("ValueError", name + ": the .npy header has no '" + key + "'");
}

}  // namespace

Tensor parse_npy(const std::string& bytes, const std::string& name) {
  static const char kMagic[] = "\x93NUMPY";
  if (bytes.size() < 10 || std::memcmp(bytes.data(), kMagic, 6) != 0)
    throw_error("ValueError", name + ": not a .npy file (bad magic)");
  int major = uint8_t(bytes[6]);
  size_t header_len = 0, offset = 0;
  if (major == 1) {
    header_len = uint8_t(bytes[8]) | (size_t(uint8_t(bytes[9])) << 8);
    offset = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) throw_error("ValueError", name + ": truncated .npy header");
    for (int i = 0; i < 4; ++i) header_len |= size_t(uint8_t(bytes[8 + size_t(i)])) << (8 * i);
    offset = 12;
  } else {
    throw_error("ValueError", name + ": unsupported .npy format version " + std::to_string(major));
  }
  if (bytes.size() < offset + header_len) throw_error("ValueError", name + ": truncated .npy header");
  std::string header = bytes.substr(offset, header_len);
  DataType dt = dtype_of(dict_value(header, "descr", name), name);
  if (dict_value(header, "fortran_order", name) != "False")
    throw_error("ValueError", name + ": Fortran-order arrays are not supported");
  std::string shape_text = dict_value(header, "shape", name);
  std::vector<int64_t> shape;
  {
    std::string s = shape_text;
    for (char& c : s)
      if (c == '(' || c == ')' || c == ',') c = ' ';
    std::istringstream in(s);
    std::string tok;
    while (in >> tok) {
      if (tok.back() == 'L') tok.pop_back();
      try {
        size_t used = 0;
        long long v = std::stoll(tok, &used);
        if (used != tok.size() || v < 0) throw 0;
        shape.push_back(v);
      } catch (...) {
        throw_error("ValueError", name + ": bad shape " + shape_text + " in the .npy header");
      }
    }
  }
  int64_t numel = 1;
  for (int64_t d : shape) numel *= d;
  size_t nbytes = size_t(numel) * size_t(dt.bytes());
  size_t data_at = offset + header_len;
  if (bytes.size() - data_at < nbytes)
    throw_error("ValueError", name + ": truncated .npy data (expected " + std::to_string(nbytes) + " bytes, found " +
                                  std::to_string(bytes.size() - data_at) + ")");
  return Tensor::from_bytes(shape, dt, bytes.data() + data_at, nbytes);
}

Tensor read_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_error("IOError", "cannot read '" + path + "'");
  std::ostringstream ss;
  ss << in.rdbuf();
  return parse_npy(ss.str(), path);
}

std::string serialize_npy(const Tensor& t) {
  std::string header = "{'descr': '" + descr_of(t.dtype(), "tensor") + "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < t.shape().size(); ++i) header += std::to_string(t.shape()[i]) + ", ";
  if (t.shape().size() > 1) header.resize(header.size() - 2);
  else if (t.shape().size() == 1) header.pop_back();  // "(3,)"
  header += "), }";
  // Total header (magic + version + length + dict + '\n') padded to a multiple of 64.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string out("\x93NUMPY\x01\x00", 8);
  out += char(header.size() & 0xff);
  out += char((header.size() >> 8) & 0xff);
  out += header;
  out.append(static_cast<const char*>(t.data()), t.nbytes());
  return out;
}

void write_npy(const std::string& path, const Tensor& t) {
  std::string bytes = serialize_npy(t);
  std::ofstream out(path, std::ios::binary);
  if (!out || !out.write(bytes.data(), std::streamsize(bytes.size())))
    throw_error("IOError", "cannot write '" + path + "'");
}

}  // namespace partita::cli
