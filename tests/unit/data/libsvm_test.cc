// LIBSVM reader on good and malformed input.
#include <gtest/gtest.h>

#include <string>

#include "framework/data/libsvm.h"

namespace stalelearn::data {
namespace {

TEST(LibsvmTest, ReadsLabelsAndSparseRows) {
  Result<SparseDataset> data = ParseLibsvm("+1 1:0.5 3:-2 \n-1\t2:1e-3\n0\n3 5:7\r\n", "s.txt");
  ASSERT_TRUE(data.ok()) << data.status().ToString();
  EXPECT_EQ(data->rows(), 4u);
  EXPECT_EQ(data->num_columns, 5u);
  EXPECT_EQ(data->nonzeros(), 4u);
  EXPECT_EQ(data->labels, (std::vector<float>{1, -1, 0, 3}));
  EXPECT_EQ(data->row_offsets, (std::vector<std::uint64_t>{0, 2, 3, 3, 4}));
  EXPECT_EQ(data->columns, (std::vector<std::uint32_t>{0, 2, 1, 4}));
  EXPECT_EQ(data->values, (std::vector<float>{0.5f, -2.0f, 1e-3f, 7.0f}));
}

struct MalformedCase {
  std::string name;
  std::string text;
  std::string expected;
};

class MalformedLibsvmTest : public ::testing::TestWithParam<MalformedCase> {};

TEST_P(MalformedLibsvmTest, IsRejectedWithFileLineAndReason) {
  Result<SparseDataset> data = ParseLibsvm(GetParam().text, "s.txt");
  ASSERT_FALSE(data.ok());
  EXPECT_EQ(data.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(data.status().message().find(GetParam().expected), std::string::npos)
      << "message: " << data.status().message();
}

INSTANTIATE_TEST_SUITE_P(
    Cases, MalformedLibsvmTest,
    ::testing::Values(
        MalformedCase{"TokenWithoutColon", "1 1:2\n1 3\n", "s.txt:2: token '3' is not <index>:<value>"},
        MalformedCase{"NonNumericLabel", "yes 1:2\n", "s.txt:1: label 'yes' is not a finite number"},
        MalformedCase{"NonNumericIndex", "1 a:2\n", "s.txt:1: index in 'a:2' is not an integer"},
        MalformedCase{"NonNumericValue", "1 1:2\n1 1:x\n", "s.txt:2: value in '1:x' is not a finite number"},
        MalformedCase{"ZeroIndex", "1 0:2\n", "s.txt:1: index 0 outside [1, 2^32 - 1] (indices are 1-based)"},
        MalformedCase{"UnsortedIndices", "1 3:1 2:1\n", "s.txt:1: index 2 after 3: indices must increase strictly"},
        MalformedCase{"RepeatedIndex", "1 2:1 2:1\n", "s.txt:1: index 2 after 2"},
        MalformedCase{"InfiniteValue", "1 2:inf\n", "s.txt:1: value in '2:inf' is not a finite number"},
        // Found by fuzzing (tests/fuzz): finite as a double, infinite as the stored float.
        MalformedCase{"ValueBeyondFloat", "1 2:1e39\n",
                      "s.txt:1: value in '2:1e39' is not a finite number within float range"},
        MalformedCase{"LabelBeyondFloat", "-1e39 2:1\n",
                      "s.txt:1: label '-1e39' is not a finite number within float range"},
        MalformedCase{"EmptyLine", "1 1:1\n\n1 1:1\n", "s.txt:2: empty line"}),
    [](const ::testing::TestParamInfo<MalformedCase>& info) { return info.param.name; });

}  // namespace
}  // namespace stalelearn::data
