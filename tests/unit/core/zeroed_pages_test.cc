// framework/core/zeroed_pages.h: a container on ZeroedPages holds zeros
// without writing them; a large block left untouched (touch_pages = false)
// costs resident memory only where it is written, a touched one is resident
// whole from the start; large blocks are 2 MiB aligned. Resident memory is
// the block's mapping's Rss in /proc/self/smaps.
#include "framework/core/zeroed_pages.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "tests/unit/core/smaps_line.h"

namespace stalelearn {
namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;

// The Rss (bytes) of the mapping of /proc/self/smaps that holds `address`.
std::size_t RssOf(const void* address) {
  const std::string line = testing::SmapsLineOf(address, "Rss:");
  return line.empty() ? 0 : std::stoull(line.substr(4)) * 1024;
}

using Floats = std::vector<float, ZeroedPages<float>>;

TEST(ZeroedPages, AnUntouchedLargeBlockIsResidentOnlyWhereWritten) {
  constexpr std::size_t kFloats = 64 * kMiB / sizeof(float);
  Floats lazy{ZeroedPages<float>(/*touch_pages=*/false)};
  lazy.resize(kFloats);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(lazy.data()) % (2 * kMiB), 0u);
  lazy[kFloats / 2] = 3.0f;
  EXPECT_LE(RssOf(lazy.data()), 4 * kMiB) << "the untouched rows became resident";
  for (std::size_t i = 0; i < kFloats; i += 4099) EXPECT_EQ(lazy[i], i == kFloats / 2 ? 3.0f : 0.0f) << i;
  EXPECT_EQ(lazy[kFloats / 2], 3.0f);
  EXPECT_EQ(lazy.back(), 0.0f);
}

TEST(ZeroedPages, ATouchedLargeBlockIsResidentWholeAndZero) {
  constexpr std::size_t kFloats = 64 * kMiB / sizeof(float);
  Floats touched;  // touch_pages by default
  touched.resize(kFloats);
  EXPECT_GE(RssOf(touched.data()), 64 * kMiB) << "pages left to fault in later";
  for (std::size_t i = 0; i < kFloats; i += 4099) ASSERT_EQ(touched[i], 0.0f) << i;
}

TEST(ZeroedPages, SmallBlocksCopiesAndIntsHoldZerosThenTheirValues) {
  for (const bool touch : {false, true}) {
    std::vector<std::int32_t, ZeroedPages<std::int32_t>> small{ZeroedPages<std::int32_t>(touch)};
    small.resize(1000);
    for (const std::int32_t v : small) ASSERT_EQ(v, 0);
    small[7] = 42;
    const auto copy = small;
    EXPECT_EQ(copy[7], 42);
    EXPECT_EQ(copy[8], 0);
    Floats large{ZeroedPages<float>(touch)};
    large.resize(3 * kMiB / sizeof(float) + 1);  // just over 3 MiB: a mapping with a partial last huge page
    large.back() = 1.5f;
    const Floats large_copy = large;
    EXPECT_EQ(large_copy.back(), 1.5f);
    EXPECT_EQ(large_copy.front(), 0.0f);
  }
}

}  // namespace
}  // namespace stalelearn
