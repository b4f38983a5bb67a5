// framework/core/huge_page_allocator.h: blocks of 2 MiB or more start on a
// 2 MiB boundary (a huge page can back them), smaller ones come from
// operator new; both hold what is written and free cleanly (ASan builds
// check the pairing of allocate and deallocate).
#include "framework/core/huge_page_allocator.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <vector>

namespace stalelearn {
namespace {

TEST(HugePageAllocator, LargeBlocksAreHugePageAlignedAndHoldTheirValues) {
  for (const std::size_t n : {std::size_t{1} << 19, (std::size_t{3} << 20) / 4 + 1}) {  // 2 MiB; just over 3 MiB
    std::vector<float, HugePageAllocator<float>> v(n, 1.5f);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(v.data()) % kHugePageBytes, 0u) << n;
    EXPECT_EQ(std::accumulate(v.begin(), v.end(), 0.0), 1.5 * static_cast<double>(n));
  }
}

TEST(HugePageAllocator, SmallBlocksAndGrowthWork) {
  std::vector<std::int32_t, HugePageAllocator<std::int32_t>> v;
  for (std::int32_t i = 0; i < (1 << 20); ++i) v.push_back(i);  // crosses 2 MiB while growing
  EXPECT_EQ(v[12345], 12345);
  EXPECT_EQ(v.back(), (1 << 20) - 1);
  v.resize(10);
  v.shrink_to_fit();  // back under 2 MiB: operator new again
  EXPECT_EQ(v[9], 9);
}

}  // namespace
}  // namespace stalelearn
