// The layout arithmetic behind reshapes and slices in a dnnl partition (runtime/strided_layout.h).
#include "../runtime/strided_layout.h"

#include <gtest/gtest.h>

namespace partita::backend::dnnl {
namespace {

const Dims kNchw = {1, 6, 4, 5};
const Dims kPlainStrides = {120, 20, 5, 1}, kChannelsLastStrides = {120, 1, 30, 6};

TEST(StridedLayout, PlainReshapesAreRowMajorViews) {
  EXPECT_EQ(reshape_view_strides(kNchw, kPlainStrides, {6, 20}), (Dims{20, 1}));
  EXPECT_EQ(reshape_view_strides(kNchw, kPlainStrides, {1, 2, 3, 4, 5}), (Dims{120, 60, 20, 5, 1}));
  EXPECT_EQ(reshape_view_strides({6, 20}, {20, 1}, {120}), (Dims{1}));
  EXPECT_EQ(reshape_view_strides(kNchw, kPlainStrides, {1, 7}), std::nullopt);  // another count
}

// Splitting the channels of channels-last memory is a view; merging them back too; merging
// channels with rows is not (they are not adjacent in memory).
TEST(StridedLayout, ChannelsLastSplitsAndMergesItsChannelsAsViews) {
  auto split = reshape_view_strides(kNchw, kChannelsLastStrides, {1, 2, 3, 4, 5});
  EXPECT_EQ(split, (Dims{120, 3, 1, 30, 6}));
  EXPECT_EQ(reshape_view_strides({1, 2, 3, 4, 5}, *split, kNchw), kChannelsLastStrides);
  EXPECT_EQ(reshape_view_strides(kNchw, kChannelsLastStrides, {1, 24, 5}), std::nullopt);
}

// A channel shuffle: the split channels' two axes swapped (a permuted view) cannot merge in
// place; the nearest dense layout that can is channels-last with the swapped order, and the
// merged view of it is channels-last again.
TEST(StridedLayout, AShuffledViewBecomesChannelsLastWithOneCopy) {
  const Dims swapped = {1, 3, 2, 4, 5}, swapped_strides = {120, 1, 3, 30, 6};
  EXPECT_EQ(reshape_view_strides(swapped, swapped_strides, kNchw), std::nullopt);
  Dims dense = reshapeable_strides(swapped, swapped_strides, kNchw);
  EXPECT_EQ(dense, (Dims{120, 2, 1, 30, 6}));
  EXPECT_EQ(reshape_view_strides(swapped, dense, kNchw), kChannelsLastStrides);
}

// Size-1 axes take the stride a plain or channels-last tensor of the result's dims has.
TEST(StridedLayout, SizeOneAxesGetTheStridesOfTheLayoutTheyExtend) {
  EXPECT_EQ(reshape_view_strides({6, 20}, {20, 1}, {6, 1, 20}), (Dims{20, 20, 1}));
  EXPECT_EQ(reshape_view_strides({1, 6}, {6, 1}, {1, 6, 1, 1}), (Dims{6, 1, 1, 1}));
  EXPECT_EQ(reshape_view_strides({1}, {1}, {1, 1}), (Dims{1, 1}));
}

TEST(StridedLayout, DenseStridesFollowTheMemoryOrder) {
  EXPECT_EQ(memory_order(kNchw, kChannelsLastStrides), (std::vector<size_t>{0, 2, 3, 1}));
  EXPECT_EQ(dense_strides({1, 3, 4, 5}, {0, 2, 3, 1}), (Dims{60, 1, 15, 3}));
  EXPECT_EQ(dense_strides({2, 3}, {1, 0}), (Dims{1, 2}));
}

}  // namespace
}  // namespace partita::backend::dnnl
