// The host kernels of the operators ONNX imports added: search (argmax, topk), indexing
// (gather / scatter), flip, tile, tril / triu, cumsum, resize2d, conv2d_transpose, and the new
// element-wise ones, against values worked out by hand (the ONNX node tests check them too).
#include <gtest/gtest.h>

#include <cmath>

#include "partita/runtime/kernel.h"
#include "partita/support/error.h"

using namespace partita;
using namespace partita::runtime;

namespace {

const DataType f32 = DataType::Float(32), i64 = DataType::Int(64), boolean = DataType::Bool();

Tensor floats(std::vector<int64_t> shape, std::vector<float> v) {
  Tensor t = Tensor::empty(std::move(shape), f32);
  std::copy(v.begin(), v.end(), t.data_as<float>());
  return t;
}
Tensor ints(std::vector<int64_t> shape, std::vector<int64_t> v) {
  Tensor t = Tensor::empty(std::move(shape), i64);
  std::copy(v.begin(), v.end(), t.data_as<int64_t>());
  return t;
}
std::vector<float> fvals(const Tensor& t) { return {t.data_as<float>(), t.data_as<float>() + t.numel()}; }
std::vector<int64_t> ivals(const Tensor& t) { return {t.data_as<int64_t>(), t.data_as<int64_t>() + t.numel()}; }

std::vector<Tensor> run(const std::string& op, std::vector<Tensor> in, KernelAttrs attrs,
                        std::vector<std::pair<std::vector<int64_t>, DataType>> outs) {
  std::vector<Tensor> out;
  for (auto& [s, d] : outs) out.push_back(Tensor::empty(s, d));
  run_kernel(op, in, attrs, out);
  return out;
}
KernelAttrs A(std::initializer_list<std::pair<const std::string, KernelAttrValue>> kv) {
  KernelAttrs a;
  for (auto& [k, v] : kv) a.values[k] = v;
  return a;
}

TEST(SearchKernels, ArgmaxFirstExtremeAndTopkTiesByIndex) {
  Tensor x = floats({2, 4}, {1, 7, 7, 2, 5, 5, 9, 0});
  EXPECT_EQ(ivals(run("relax.argmax", {x}, A({{"axis", int64_t(1)}}), {{{2}, i64}})[0]), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(ivals(run("relax.argmin", {x}, A({{"axis", int64_t(0)}}), {{{4}, i64}})[0]),
            (std::vector<int64_t>{0, 1, 0, 1}));
  EXPECT_EQ(ivals(run("relax.argmax", {x}, A({}), {{{}, i64}})[0]), (std::vector<int64_t>{6}));  // flattened
  auto r = run("relax.topk", {x}, A({{"k", int64_t(2)}, {"axis", int64_t(1)}, {"dtype", i64}}), {{{2, 2}, f32}, {{2, 2}, i64}});
  EXPECT_EQ(fvals(r[0]), (std::vector<float>{7, 7, 9, 5}));
  EXPECT_EQ(ivals(r[1]), (std::vector<int64_t>{1, 2, 2, 0}));  // equal values: the lower index first
  auto s = run("relax.topk", {x}, A({{"k", int64_t(3)}, {"largest", false}, {"ret_type", std::string("values")}}),
               {{{2, 3}, f32}});
  EXPECT_EQ(fvals(s[0]), (std::vector<float>{1, 2, 7, 0, 5, 5}));
}

TEST(IndexKernels, GatherAndScatter) {
  Tensor data = floats({2, 3}, {1, 2, 3, 4, 5, 6});
  // gather_elements along axis 1, a negative index counting from the end.
  EXPECT_EQ(fvals(run("relax.gather_elements", {data, ints({2, 2}, {2, -3, 1, 1})}, A({{"axis", int64_t(1)}}),
                      {{{2, 2}, f32}})[0]),
            (std::vector<float>{3, 1, 5, 5}));
  // gather_nd: rows by index, then single elements.
  EXPECT_EQ(fvals(run("relax.gather_nd", {data, ints({1, 1}, {1})}, A({}), {{{1, 3}, f32}})[0]),
            (std::vector<float>{4, 5, 6}));
  EXPECT_EQ(fvals(run("relax.gather_nd", {data, ints({2, 2}, {0, 2, 1, 0})}, A({}), {{{2}, f32}})[0]),
            (std::vector<float>{3, 4}));
  // gather_nd with one batch dimension: row b picks element indices[b].
  EXPECT_EQ(fvals(run("relax.gather_nd", {data, ints({2, 1}, {2, 0})}, A({{"batch_dims", int64_t(1)}}), {{{2}, f32}})[0]),
            (std::vector<float>{3, 4}));
  // scatter_nd adds two updates into the same row.
  EXPECT_EQ(fvals(run("relax.scatter_nd", {data, ints({2, 1}, {1, 1}), floats({2, 3}, {10, 20, 30, 1, 1, 1})},
                      A({{"reduction", std::string("add")}}), {{{2, 3}, f32}})[0]),
            (std::vector<float>{1, 2, 3, 15, 26, 37}));
  EXPECT_EQ(fvals(run("relax.scatter_elements", {data, ints({1, 2}, {2, 0}), floats({1, 2}, {-1, -2})},
                      A({{"axis", int64_t(1)}}), {{{2, 3}, f32}})[0]),
            (std::vector<float>{-2, 2, -1, 4, 5, 6}));
  EXPECT_THROW(run("relax.gather_elements", {data, ints({1, 1}, {3})}, A({{"axis", int64_t(1)}}), {{{1, 1}, f32}}),
               Error);
}

TEST(IndexKernels, ScatterInFloat16AndBFloat16) {
  // .half() exports of windowed attention (swin_t) scatter float16 updates; reductions compute
  // in float and round once.
  for (DataType dt : {DataType::Float(16), DataType::BFloat16()}) {
    auto cast = [&](const Tensor& t) { return run("relax.astype", {t}, A({{"dtype", dt}}), {{t.shape(), dt}})[0]; };
    auto back = [&](const Tensor& t) {
      return fvals(run("relax.astype", {t}, A({{"dtype", f32}}), {{t.shape(), f32}})[0]);
    };
    Tensor data = cast(floats({2, 3}, {1, 2, 3, 4, 5, 6}));
    EXPECT_EQ(back(run("relax.scatter_nd", {data, ints({2, 1}, {1, 1}), cast(floats({2, 3}, {10, 20, 30, 1, 1, 1}))},
                       A({{"reduction", std::string("add")}}), {{{2, 3}, dt}})[0]),
              (std::vector<float>{1, 2, 3, 15, 26, 37}))
        << dt.str();
    EXPECT_EQ(back(run("relax.scatter_elements", {data, ints({1, 2}, {2, 0}), cast(floats({1, 2}, {-1, -2}))},
                       A({{"axis", int64_t(1)}}), {{{2, 3}, dt}})[0]),
              (std::vector<float>{-2, 2, -1, 4, 5, 6}))
        << dt.str();
  }
}

TEST(ArrayKernels, FlipTileTriangleCumsum) {
  Tensor x = floats({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(fvals(run("relax.flip", {x}, A({{"axis", int64_t(1)}}), {{{2, 3}, f32}})[0]),
            (std::vector<float>{3, 2, 1, 6, 5, 4}));
  EXPECT_EQ(fvals(run("relax.tile", {x}, A({{"repeats", std::vector<int64_t>{2, 2}}}), {{{4, 6}, f32}})[0]),
            (std::vector<float>{1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6, 1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6}));
  EXPECT_EQ(fvals(run("relax.triu", {x}, A({{"k", int64_t(1)}}), {{{2, 3}, f32}})[0]),
            (std::vector<float>{0, 2, 3, 0, 0, 6}));
  EXPECT_EQ(fvals(run("relax.tril", {x}, A({{"k", int64_t(-1)}}), {{{2, 3}, f32}})[0]),
            (std::vector<float>{0, 0, 0, 4, 0, 0}));
  EXPECT_EQ(fvals(run("relax.cumsum", {x}, A({{"axis", int64_t(1)}, {"exclusive", true}}), {{{2, 3}, f32}})[0]),
            (std::vector<float>{0, 1, 3, 0, 4, 9}));
  EXPECT_EQ(fvals(run("relax.cumsum", {x}, A({}), {{{6}, f32}})[0]), (std::vector<float>{1, 3, 6, 10, 15, 21}));
}

TEST(ElementwiseKernels, RoundingModuloAndPredicates) {
  Tensor x = floats({6}, {-2.5f, -1.5f, 0.5f, 1.5f, 2.7f, -0.2f});
  EXPECT_EQ(fvals(run("relax.round", {x}, A({}), {{{6}, f32}})[0]), (std::vector<float>{-2, -2, 0, 2, 3, -0.f}));
  EXPECT_EQ(fvals(run("relax.trunc", {x}, A({}), {{{6}, f32}})[0]), (std::vector<float>{-2, -1, 0, 1, 2, -0.f}));
  EXPECT_EQ(fvals(run("relax.sign", {x}, A({}), {{{6}, f32}})[0]), (std::vector<float>{-1, -1, 1, 1, 1, -1}));
  Tensor a = ints({4}, {7, -7, 7, -7}), b = ints({4}, {3, 3, -3, -3});
  EXPECT_EQ(ivals(run("relax.floor_mod", {a, b}, A({}), {{{4}, i64}})[0]), (std::vector<int64_t>{1, 2, -2, -1}));
  EXPECT_EQ(ivals(run("relax.mod", {a, b}, A({}), {{{4}, i64}})[0]), (std::vector<int64_t>{1, -1, 1, -1}));
  EXPECT_THROW(run("relax.mod", {a, ints({4}, {1, 0, 1, 1})}, A({}), {{{4}, i64}}), Error);
  Tensor y = floats({3}, {NAN, INFINITY, 1});
  auto as_bits = [](const Tensor& t) { return std::vector<uint8_t>(t.data_as<uint8_t>(), t.data_as<uint8_t>() + 3); };
  EXPECT_EQ(as_bits(run("relax.isnan", {y}, A({}), {{{3}, boolean}})[0]), (std::vector<uint8_t>{1, 0, 0}));
  EXPECT_EQ(as_bits(run("relax.isinf", {y}, A({}), {{{3}, boolean}})[0]), (std::vector<uint8_t>{0, 1, 0}));
  EXPECT_EQ(as_bits(run("relax.isfinite", {y}, A({}), {{{3}, boolean}})[0]), (std::vector<uint8_t>{0, 0, 1}));
}

TEST(ImageKernels, ResizeNearestAndLinear) {
  Tensor x = floats({1, 1, 2, 2}, {1, 2, 3, 4});
  // Nearest, asymmetric, floor (what torch exports for an upsampling by 2).
  auto n = run("relax.image.resize2d", {x},
               A({{"method", std::string("nearest_neighbor")}, {"coordinate_transformation_mode", std::string("asymmetric")},
                  {"rounding_method", std::string("floor")}}),
               {{{1, 1, 4, 4}, f32}});
  EXPECT_EQ(fvals(n[0]), (std::vector<float>{1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4}));
  // Linear, align_corners: the corners stay, the middle is interpolated.
  auto l = run("relax.image.resize2d", {x}, A({{"method", std::string("linear")},
                                                {"coordinate_transformation_mode", std::string("align_corners")}}),
               {{{1, 1, 3, 3}, f32}});
  EXPECT_EQ(fvals(l[0]), (std::vector<float>{1, 1.5f, 2, 2, 2.5f, 3, 3, 3.5f, 4}));
  // Linear, half_pixel: samples outside the input use the edge value.
  auto h = run("relax.image.resize2d", {x}, A({{"method", std::string("linear")}}), {{{1, 1, 1, 4}, f32}});
  EXPECT_EQ(fvals(h[0]), (std::vector<float>{2, 2.25f, 2.75f, 3}));
}

TEST(ConvKernels, TransposedConvolutionScattersTheKernel) {
  // One input channel (1, 1, 2, 2), a 2x2 kernel of ones, stride 2: every input pixel becomes
  // a 2x2 block; with stride 1 the blocks overlap and add.
  Tensor x = floats({1, 1, 2, 2}, {1, 2, 3, 4});
  Tensor w = floats({1, 1, 2, 2}, {1, 1, 1, 1});
  auto s2 = run("relax.nn.conv2d_transpose", {x, w}, A({{"strides", std::vector<int64_t>{2, 2}}}), {{{1, 1, 4, 4}, f32}});
  EXPECT_EQ(fvals(s2[0]), (std::vector<float>{1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4}));
  auto s1 = run("relax.nn.conv2d_transpose", {x, w}, A({}), {{{1, 1, 3, 3}, f32}});
  EXPECT_EQ(fvals(s1[0]), (std::vector<float>{1, 3, 2, 4, 10, 6, 3, 7, 4}));
  // Padding crops the border of the full result.
  auto p = run("relax.nn.conv2d_transpose", {x, w}, A({{"padding", std::vector<int64_t>{1, 1, 1, 1}}}), {{{1, 1, 1, 1}, f32}});
  EXPECT_EQ(fvals(p[0]), (std::vector<float>{10}));
}

}  // namespace
