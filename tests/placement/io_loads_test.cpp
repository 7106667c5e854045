// Loads from CSV and JSON, format detection, and plans as JSON.
#include <gtest/gtest.h>

#include <boost/json/serialize.hpp>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "omni/placement/io.hpp"

namespace omni::placement {
namespace {

void expect_error(const Result<LoadMatrix>& r, const std::string& fragment) {
  ASSERT_FALSE(r.ok()) << "expected an error containing: " << fragment;
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(r.error().message.find(fragment), std::string::npos) << r.error().message;
}

TEST(IoCsvLoads, OneLayerPerRowWithHeaderCommentsAndCrlf) {
  auto loads = loads_from_csv("e0,e1,e2\r\n# window 7\r\n1, 2 ,3\r\n\r\n4.5,0,+6e1\r\n");
  ASSERT_TRUE(loads.ok()) << loads.error().to_string();
  EXPECT_EQ(loads->layers(), 2u);
  EXPECT_EQ(loads->experts(), 3u);
  EXPECT_EQ(loads->values(), (std::vector<double>{1, 2, 3, 4.5, 0, 60}));
}

TEST(IoCsvLoads, ErrorsNameLineAndColumn) {
  expect_error(loads_from_csv("1,2,3\n4,x5,6\n"), "line 2, column 2: 'x5' is not a number");
  expect_error(loads_from_csv("1,2,3\n4,5,-6\n"), "line 2, column 3: negative load -6");
  expect_error(loads_from_csv("a,b\n1,2\n\n3,4,5\n"), "line 4 has 3 values, line 2 has 2");
  expect_error(loads_from_csv("1,,3\n"), "line 1, column 2");
  expect_error(loads_from_csv("1,inf\n"), "column 2: not a finite number");
  expect_error(loads_from_csv(""), "no data rows");
  expect_error(loads_from_csv("expert_a,expert_b\n"), "no data rows");
  expect_error(loads_from_csv("\n# only a comment\n"), "no data rows");
}

TEST(IoJsonLoads, PerLayerArraysOrOneArray) {
  auto two = loads_from_json(" [[1, 2.5, 3], [0, 4, 5]] ");
  ASSERT_TRUE(two.ok()) << two.error().to_string();
  EXPECT_EQ(two->layers(), 2u);
  EXPECT_EQ(two->values(), (std::vector<double>{1, 2.5, 3, 0, 4, 5}));
  auto one = loads_from_json("[7, 8]");
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->layers(), 1u);
  EXPECT_EQ(one->experts(), 2u);
}

TEST(IoJsonLoads, ErrorsNameLayerAndExpert) {
  expect_error(loads_from_json("[[1, 2], [3]]"), "layer 1 has 1 values, layer 0 has 2");
  expect_error(loads_from_json("[[1, 2], [3, -4]]"), "layer 1, expert 1: negative load");
  expect_error(loads_from_json("[[1, \"2\"]]"), "layer 0, expert 1: not a number");
  expect_error(loads_from_json("[[1, 2], 3]"), "layer 1 is not an array");
  expect_error(loads_from_json("[1, [2]]"), "layer 0, expert 1: not a number");
  expect_error(loads_from_json("[]"), "empty array");
  expect_error(loads_from_json("[[]]"), "no values");
  expect_error(loads_from_json("{\"a\": 1}"), "expected an array");
  expect_error(loads_from_json("[[1, 2]"), "json:");
}

TEST(IoParseLoads, DetectsTheFormatFromContent) {
  auto json = parse_loads("\n  [[1,2]]");
  ASSERT_TRUE(json.ok());
  EXPECT_EQ(json->experts(), 2u);
  auto csv = parse_loads("1,2,3\n");
  ASSERT_TRUE(csv.ok());
  EXPECT_EQ(csv->experts(), 3u);
  const std::size_t shape[] = {1, 2};
  const double values[] = {3, 4};
  auto npy = parse_loads(npy_from_doubles(shape, values));
  ASSERT_TRUE(npy.ok());
  EXPECT_EQ(npy->values(), (std::vector<double>{3, 4}));
  expect_error(parse_loads("[[1,2]]", LoadFormat::kCsv), "csv: line 1, column 1");
}

class IoLoadFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("omni_io_loads_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
            "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::filesystem::path dir_;
};

TEST_F(IoLoadFiles, FilesAreReadByExtensionAndErrorsNameThePath) {
  ASSERT_TRUE(write_file(path("a.json"), "[[1,2],[3,4]]").ok());
  ASSERT_TRUE(write_file(path("a.csv"), "1,2\n3,4\n").ok());
  const std::size_t shape[] = {2, 2};
  const double values[] = {1, 2, 3, 4};
  ASSERT_TRUE(write_file(path("a.npy"), npy_from_doubles(shape, values)).ok());
  ASSERT_TRUE(write_file(path("noext"), "[[1,2],[3,4]]").ok());
  for (const char* name : {"a.json", "a.csv", "a.npy", "noext"}) {
    auto loads = read_loads_file(path(name));
    ASSERT_TRUE(loads.ok()) << name << ": " << loads.error().to_string();
    EXPECT_EQ(loads->values(), (std::vector<double>{1, 2, 3, 4})) << name;
  }
  ASSERT_TRUE(write_file(path("bad.csv"), "[[1,2]]").ok());
  auto bad = read_loads_file(path("bad.csv"));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("bad.csv: csv: line 1"), std::string::npos)
      << bad.error().message;
  auto missing = read_loads_file(path("missing.json"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, ErrorCode::kIo);
  EXPECT_NE(missing.error().message.find("missing.json"), std::string::npos);
  auto big = read_file(path("a.csv"), 3);
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.error().code, ErrorCode::kTooLarge);
}

Placement two_layer_plan() {
  Placement p;
  p.devices = 2;
  p.experts = 3;
  p.layers.push_back({2, {0, 1, 2, 0}});
  p.layers.push_back({3, {2, 1, 0, 0, 1, 2}});
  return p;
}

TEST(IoPlanJson, CarriesPhy2logLogcntAndShape) {
  const std::string text = boost::json::serialize(placement_to_json(two_layer_plan()));
  EXPECT_EQ(text,
            "{\"devices\":2,\"experts\":3,\"slots_per_device\":[2,3],"
            "\"phy2log\":[[0,1,2,0],[2,1,0,0,1,2]],\"logcnt\":[[2,1,1],[2,2,2]]}");
  auto back = placement_from_json(text);
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_EQ(back->devices, 2u);
  EXPECT_EQ(back->layers[1].slots_per_device, 3u);
  EXPECT_EQ(back->layers[1].phy2log, two_layer_plan().layers[1].phy2log);
}

TEST(IoPlanJson, MalformedPlansAreRejected) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"nope", "not JSON"},
      {"[1]", "expected an object"},
      {R"({"experts":3,"phy2log":[[0,1,2]]})", "missing 'devices'"},
      {R"({"devices":0,"experts":3,"phy2log":[[0,1,2]]})", "'devices' must be"},
      {R"({"devices":1,"experts":3,"phy2log":[]})", "'phy2log' must be"},
      {R"({"devices":2,"experts":3,"phy2log":[[0,1,2]]})", "not a positive multiple"},
      {R"({"devices":1,"experts":3,"phy2log":[[0,1,3]]})", "out of range"},
      {R"({"devices":1,"experts":3,"phy2log":[[0,1,1.5]]})", "not an integer"},
      {R"({"devices":1,"experts":3,"phy2log":[[0,1,1]]})", "plan:"},  // expert 2 has no copy
  };
  for (const auto& [text, fragment] : cases) {
    auto r = placement_from_json(text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
    EXPECT_NE(r.error().message.find(fragment), std::string::npos)
        << text << " -> " << r.error().message;
  }
}

}  // namespace
}  // namespace omni::placement
