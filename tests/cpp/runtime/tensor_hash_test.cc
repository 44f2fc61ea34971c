// Tensor::content_hash samples large tensors; deduplication must still compare every byte.
#include <gtest/gtest.h>

#include <cstring>

#include "partita/runtime/executable.h"
#include "partita/runtime/tensor.h"

namespace partita {
namespace {

Tensor filled(std::vector<int64_t> shape, float value) {
  Tensor t = Tensor::empty(shape, DataType::Float(32));
  for (int64_t i = 0; i < t.numel(); ++i) t.data_as<float>()[i] = value;
  return t;
}

TEST(TensorHash, EqualContentHashesEqual) {
  Tensor a = filled({1 << 20}, 1.5f), b = filled({1 << 20}, 1.5f);
  EXPECT_EQ(a.content_hash(), b.content_hash());
  EXPECT_TRUE(a.content_equal(b));
  EXPECT_NE(a.content_hash(), filled({1 << 20}, 2.5f).content_hash());
  EXPECT_NE(a.content_hash(), filled({1 << 19, 2}, 1.5f).content_hash());  // shape is hashed
}

TEST(TensorHash, SmallTensorsHashEveryByte) {
  Tensor a = filled({1000}, 1.0f), b = filled({1000}, 1.0f);
  b.data_as<float>()[517] = 2.0f;
  EXPECT_NE(a.content_hash(), b.content_hash());
}

TEST(TensorHash, DeduplicationComparesEveryByteOfLargeTensors) {
  // Find an element the sampled hash does not read, so the hashes collide.
  Tensor a = filled({1 << 20}, 1.0f);
  Tensor b = a.copy();
  size_t h = a.content_hash();
  int64_t changed = -1;
  for (int64_t i = 1; i < b.numel() && changed < 0; i += 997) {
    b.data_as<float>()[i] = 3.0f;
    if (b.content_hash() == h) changed = i;
    else b.data_as<float>()[i] = 1.0f;
  }
  ASSERT_GE(changed, 0) << "every probed element is sampled; the hash reads the whole tensor";
  EXPECT_FALSE(a.content_equal(b));
  runtime::Executable ex;
  int32_t ia = ex.add_constant(a);
  EXPECT_NE(ex.add_constant(b), ia);
  EXPECT_EQ(ex.add_constant(a.copy()), ia);
  EXPECT_EQ(ex.constants.size(), 2u);
}

}  // namespace
}  // namespace partita
