#include "omni/placement/model.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace omni::placement {
namespace {

TEST(LoadMatrixTest, RejectsBadShapesAndValues) {
  EXPECT_FALSE(LoadMatrix::make(0, 4, {}).ok());
  EXPECT_FALSE(LoadMatrix::make(2, 2, {1, 2, 3}).ok());
  auto negative = LoadMatrix::make(2, 2, {1, 2, -3, 4});
  ASSERT_FALSE(negative.ok());
  EXPECT_EQ(negative.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(negative.error().message.find("layer 1 expert 0"), std::string::npos);
  EXPECT_FALSE(LoadMatrix::make(1, 2, {1, std::numeric_limits<double>::quiet_NaN()}).ok());
  EXPECT_FALSE(LoadMatrix::make(1, 2, {1, std::numeric_limits<double>::infinity()}).ok());
}

TEST(LoadMatrixTest, RowMajorAccess) {
  auto m = LoadMatrix::make(2, 3, {1, 2, 3, 4, 5, 6});
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->layers(), 2u);
  EXPECT_EQ(m->experts(), 3u);
  EXPECT_EQ(m->at(1, 2), 6.0);
  EXPECT_EQ(m->layer(1)[0], 4.0);
}

TEST(TopologyTest, Validate) {
  EXPECT_TRUE((Topology{2, 8, 2}.validate().ok()));
  EXPECT_FALSE((Topology{3, 8, 2}.validate().ok()));
  EXPECT_FALSE((Topology{1, 0, 2}.validate().ok()));
  EXPECT_FALSE((Topology{1, 8, 0}.validate().ok()));
  Topology t{2, 8, 3};
  EXPECT_EQ(t.devices_per_node(), 4u);
  EXPECT_EQ(t.node_of(5), 1u);
  EXPECT_EQ(t.slots(), 24u);
}

TEST(PlacementTest, ValidateAndCopies) {
  Placement p{2, 3, {LayerPlacement{2, {0, 1, 2, 0}}}};
  EXPECT_TRUE(p.validate().ok());
  EXPECT_EQ(p.copies(0), (std::vector<std::size_t>{2, 1, 1}));

  Placement colocated{2, 3, {LayerPlacement{2, {0, 0, 1, 2}}}};
  EXPECT_FALSE(colocated.validate().ok());
  EXPECT_TRUE(colocated.validate(true).ok());

  Placement missing{2, 3, {LayerPlacement{2, {0, 1, 1, 0}}}};
  EXPECT_FALSE(missing.validate(true).ok());
  Placement out_of_range{2, 3, {LayerPlacement{2, {0, 1, 2, 3}}}};
  EXPECT_FALSE(out_of_range.validate(true).ok());
  Placement wrong_size{2, 3, {LayerPlacement{2, {0, 1, 2}}}};
  EXPECT_FALSE(wrong_size.validate(true).ok());
}

}  // namespace
}  // namespace omni::placement
