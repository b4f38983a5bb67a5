// apps/snn IDX reader: small files written by the test (valid, truncated,
// padded, wrong magic, images and labels that disagree), and the real MNIST
// files when deploy/fetch-data.sh mnist has fetched them (label counts from
// the data set's documentation).
#include <gtest/gtest.h>

#include <array>
#include <string>

#include "apps/snn/datasets.h"
#include "apps/snn/idx_reader.h"
#include "framework/core/error.h"
#include "tests/unit/data/test_files.h"

namespace stalelearn::apps::snn {
namespace {

using data::testing::ScratchDir;

std::string BigEndian(std::uint32_t x) {
  return {static_cast<char>(x >> 24), static_cast<char>(x >> 16), static_cast<char>(x >> 8), static_cast<char>(x)};
}

std::string ImagesFile(std::uint32_t count, std::uint32_t rows, std::uint32_t columns, std::size_t payload) {
  std::string bytes = std::string("\0\0\x08\x03", 4) + BigEndian(count) + BigEndian(rows) + BigEndian(columns);
  for (std::size_t i = 0; i < payload; ++i) bytes.push_back(static_cast<char>(i * 37));
  return bytes;
}

std::string LabelsFile(const std::string& labels) { return std::string("\0\0\x08\x01", 4) + BigEndian(static_cast<std::uint32_t>(labels.size())) + labels; }

TEST(IdxReader, ReadsImagesAndLabels) {
  ScratchDir dir;
  const auto images = ReadIdxImages(dir.Write("img", ImagesFile(2, 3, 4, 24)));
  ASSERT_TRUE(images.ok()) << images.status().message();
  EXPECT_EQ(images->count, 2);
  EXPECT_EQ(images->rows, 3);
  EXPECT_EQ(images->columns, 4);
  EXPECT_EQ(images->image(1)[0], static_cast<std::uint8_t>(12 * 37));
  const auto set = ReadLabelledImages(dir.path() / "img", dir.Write("lab", LabelsFile("\x07\x02")), 10);
  ASSERT_TRUE(set.ok()) << set.status().message();
  EXPECT_EQ(set->labels[0], 7);
}

TEST(IdxReader, TruncatedFileIsDataLossNamingTheFile) {
  ScratchDir dir;
  const auto file = dir.Write("img", ImagesFile(2, 3, 4, 23));
  const auto images = ReadIdxImages(file);
  ASSERT_FALSE(images.ok());
  EXPECT_EQ(images.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(images.status().message().find(file.string()), std::string::npos) << images.status().message();
  EXPECT_NE(images.status().message().find("truncated"), std::string::npos) << images.status().message();
  // Cut inside the header too.
  const auto header_cut = ReadIdxImages(dir.Write("short", ImagesFile(2, 3, 4, 0).substr(0, 9)));
  EXPECT_EQ(header_cut.status().code(), StatusCode::kDataLoss);
}

TEST(IdxReader, TrailingBytesWrongMagicAndMissingFileAreErrors) {
  ScratchDir dir;
  EXPECT_NE(ReadIdxImages(dir.Write("pad", ImagesFile(1, 2, 2, 5))).status().message().find("trailing"), std::string::npos);
  // A labels file read as images (1 dimension, not 3), and a gzipped file.
  EXPECT_EQ(ReadIdxImages(dir.Write("lab", LabelsFile("\x01"))).status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(ReadIdxLabels(dir.Write("gz", std::string("\x1f\x8b\x08\x00rest", 8))).status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(ReadIdxLabels(dir.path() / "absent").status().code(), StatusCode::kNotFound);
}

TEST(IdxReader, ImagesAndLabelsMustAgree) {
  ScratchDir dir;
  const auto images = dir.Write("img", ImagesFile(2, 1, 1, 2));
  EXPECT_EQ(ReadLabelledImages(images, dir.Write("three", LabelsFile("\x01\x02\x03")), 10).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ReadLabelledImages(images, dir.Write("big", LabelsFile("\x01\x0b")), 10).status().code(),
            StatusCode::kDataLoss);
}

TEST(IdxReader, FetchedMnistHasTheDocumentedLabelCounts) {
  data::DatasetCatalog catalog;
  ThrowIfError(RegisterDatasets(catalog));
  const auto file = data::DatasetPath(*ValueOrThrow(catalog.Find("mnist")), data::testing::FetchedDataDir());
  if (!std::filesystem::exists(file)) GTEST_SKIP() << file << " not fetched: run deploy/fetch-data.sh mnist";
  const LabelledImages set = ValueOrThrow(ReadLabelledImages(file, file.parent_path() / "train-labels-idx1-ubyte", 10));
  EXPECT_EQ(set.images.count, 60000);
  EXPECT_EQ(set.images.rows, 28);
  std::array<int, 10> counts{};
  for (std::uint8_t y : set.labels) ++counts[y];
  EXPECT_EQ(counts, (std::array<int, 10>{5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949}));
}

}  // namespace
}  // namespace stalelearn::apps::snn
