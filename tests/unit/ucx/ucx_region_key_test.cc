// The ucx region key envelope (backends/ucx/region_key.h): what Import refuses
// before any byte reaches UCX.
#include <gtest/gtest.h>

#include <vector>

#include "backends/ucx/region_key.h"

namespace stalelearn::backends::ucx {
namespace {

using transport::Access;
using transport::PackedKey;
using transport::Rank;

const std::vector<std::byte> kRkey = {std::byte{1}, std::byte{2}, std::byte{3}, std::byte{250}};

PackedKey SampleKey() {
  return EncodeRegionKey(RegionKey{.owner = Rank{3},
                                   .base_address = 0x7f0000001000,
                                   .size = 4096,
                                   .access = Access::kRemoteReadOnly,
                                   .packed_rkey = kRkey});
}

TEST(UcxRegionKey, RoundTripsEveryField) {
  const PackedKey bytes = SampleKey();
  auto key = DecodeRegionKey(bytes);
  ASSERT_TRUE(key.ok()) << key.status().ToString();
  EXPECT_EQ(key->owner, Rank{3});
  EXPECT_EQ(key->base_address, 0x7f0000001000u);
  EXPECT_EQ(key->size, 4096u);
  EXPECT_EQ(key->access, Access::kRemoteReadOnly);
  EXPECT_EQ(std::vector<std::byte>(key->packed_rkey.begin(), key->packed_rkey.end()), kRkey);
}

TEST(UcxRegionKey, EveryFlippedByteIsRefused) {
  const PackedKey good = SampleKey();
  for (std::size_t i = 0; i < good.size(); ++i) {
    PackedKey bad = good;
    bad[i] ^= std::byte{0x40};
    auto key = DecodeRegionKey(bad);
    ASSERT_FALSE(key.ok()) << "flipped byte " << i << " was accepted";
    EXPECT_EQ(key.status().code(), StatusCode::kInvalidArgument);
  }
}

TEST(UcxRegionKey, TruncatedOrExtendedKeysAreRefused) {
  const PackedKey good = SampleKey();
  for (std::size_t length : {std::size_t{0}, std::size_t{7}, good.size() / 2, good.size() - 1}) {
    auto key = DecodeRegionKey(std::span(good).first(length));
    EXPECT_EQ(key.status().code(), StatusCode::kInvalidArgument) << "length " << length;
  }
  PackedKey longer = good;
  longer.push_back(std::byte{0});
  EXPECT_EQ(DecodeRegionKey(longer).status().code(), StatusCode::kInvalidArgument);
}

TEST(UcxRegionKey, ForeignBytesNameTheProblem) {
  const PackedKey garbage(64, std::byte{0x5a});
  auto key = DecodeRegionKey(garbage);
  ASSERT_FALSE(key.ok());
  EXPECT_NE(key.status().message().find("not a key of the ucx backend"), std::string::npos)
      << key.status().message();
}

}  // namespace
}  // namespace stalelearn::backends::ucx
