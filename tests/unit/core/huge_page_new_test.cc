// framework/core/huge_page_new.cc: a block of 2 MiB or more from operator new
// starts on a 2 MiB boundary and its mapping is marked for transparent huge
// pages (the "hg" flag in /proc/self/smaps) before it is touched; smaller
// blocks are ordinary; all hold what is written and free cleanly. Sanitizer
// builds keep their own operator new: the test is skipped there.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

#include "framework/core/sanitizer.h"
#include "tests/unit/core/smaps_line.h"

namespace stalelearn {
namespace {

constexpr std::size_t kHugePageBytes = std::size_t{2} << 20;

#if defined(STALELEARN_ASAN_BUILD) || defined(STALELEARN_TSAN_BUILD)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

// The VmFlags line of the mapping of /proc/self/smaps that holds `address`.
std::string VmFlagsOf(const void* address) { return testing::SmapsLineOf(address, "VmFlags:"); }

TEST(HugePageNew, LargeBlocksAreHugePageAlignedAdvisedAndHoldTheirValues) {
  if (kSanitized) GTEST_SKIP() << "sanitizer builds keep their own operator new";
  if (!std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled")) GTEST_SKIP() << "no transparent huge pages";
  for (const std::size_t n : {std::size_t{1} << 19, (std::size_t{3} << 20) / 4 + 1}) {  // 2 MiB; just over 3 MiB
    std::vector<float> v(n, 1.5f);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(v.data()) % kHugePageBytes, 0u) << n;
    EXPECT_NE(VmFlagsOf(v.data()).find(" hg"), std::string::npos) << n << ": " << VmFlagsOf(v.data());
    EXPECT_EQ(std::accumulate(v.begin(), v.end(), 0.0), 1.5 * static_cast<double>(n));
  }
}

TEST(HugePageNew, SmallBlocksArraysAndGrowthWork) {
  std::vector<std::int32_t> v;
  for (std::int32_t i = 0; i < (1 << 20); ++i) v.push_back(i);  // crosses 2 MiB while growing
  EXPECT_EQ(v[12345], 12345);
  EXPECT_EQ(v.back(), (1 << 20) - 1);
  v.resize(10);
  v.shrink_to_fit();  // back under 2 MiB
  EXPECT_EQ(v[9], 9);
  auto* array = new std::int64_t[std::size_t{1} << 20];  // operator new[] reaches operator new
  array[(std::size_t{1} << 20) - 1] = 7;
  EXPECT_EQ(array[(std::size_t{1} << 20) - 1], 7);
  delete[] array;
}

}  // namespace
}  // namespace stalelearn
