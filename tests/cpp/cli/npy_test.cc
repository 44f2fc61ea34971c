// The .npy reader/writer of the partita command line (tools/partita_cli/npy.cc).
#include <gtest/gtest.h>

#include <cstring>

#include "npy.h"
#include "partita/support/error.h"

using namespace partita;
using namespace partita::cli;

namespace {

Tensor iota(std::vector<int64_t> shape, DataType dt) {
  Tensor t = Tensor::empty(std::move(shape), dt);
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (dt == DataType::Float(32)) t.data_as<float>()[i] = float(i) * 0.5f;
    else if (dt == DataType::Float(64)) t.data_as<double>()[i] = double(i) * 0.25;
    else if (dt == DataType::Int(64)) t.data_as<int64_t>()[i] = -i;
    else if (dt == DataType::Int(32)) t.data_as<int32_t>()[i] = int32_t(i * 3);
    else t.data_as<uint8_t>()[i] = uint8_t(i % 2);
  }
  return t;
}

TEST(Npy, RoundTripsDtypesAndShapes) {
  for (DataType dt : {DataType::Float(32), DataType::Float(64), DataType::Int(64), DataType::Int(32), DataType::Bool()})
    for (std::vector<int64_t> shape : {std::vector<int64_t>{}, {5}, {2, 3}, {1, 3, 2, 2}, {0, 4}}) {
      Tensor t = iota(shape, dt);
      std::string bytes = serialize_npy(t);
      size_t header_len = uint8_t(bytes[8]) | (size_t(uint8_t(bytes[9])) << 8);
      EXPECT_EQ((10 + header_len) % 64, 0u);  // data aligned as numpy writes it
      EXPECT_EQ(bytes[10 + header_len - 1], '\n');
      Tensor back = parse_npy(bytes, "t.npy");
      EXPECT_TRUE(back.content_equal(t)) << dt.str() << " ndim " << shape.size();
    }
}

TEST(Npy, HeaderText) {
  std::string bytes = serialize_npy(iota({3}, DataType::Float(32)));
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  EXPECT_NE(bytes.find("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }"), std::string::npos);
  bytes = serialize_npy(iota({2, 3}, DataType::Bool()));
  EXPECT_NE(bytes.find("'descr': '|b1'"), std::string::npos);
  EXPECT_NE(bytes.find("'shape': (2, 3)"), std::string::npos);
}

std::string npy_with_header(const std::string& dict, size_t data_bytes) {
  std::string h = dict;
  while ((10 + h.size() + 1) % 64) h += ' ';
  h += '\n';
  std::string out("\x93NUMPY\x01\x00", 8);
  out += char(h.size() & 0xff);
  out += char(h.size() >> 8);
  return out + h + std::string(data_bytes, '\0');
}

TEST(Npy, RejectsWhatItCannotRead) {
  auto fails = [](const std::string& bytes, const std::string& what) {
    try {
      parse_npy(bytes, "x.npy");
      ADD_FAILURE() << "accepted: " << what;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("x.npy"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  fails("hello", "not a .npy file");
  fails(npy_with_header("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", 8), "big-endian");
  fails(npy_with_header("{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }", 8), "Fortran");
  fails(npy_with_header("{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", 16), "unsupported dtype");
  fails(npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", 4), "truncated");
  fails(npy_with_header("{'descr': '<f4', 'fortran_order': False}", 4), "'shape'");
  // A header written with double quotes and no trailing comma still reads.
  Tensor t = parse_npy(npy_with_header("{\"descr\": \"<i8\", \"fortran_order\": False, \"shape\": (2, 1)}", 16), "x.npy");
  EXPECT_EQ(t.shape(), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(t.dtype(), DataType::Int(64));
}

}  // namespace
