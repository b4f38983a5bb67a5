// The 'ucx' backend with ranks as threads of one process (in-process
// bootstrap): one UCX context and worker per thread, over shared memory (UCX's
// default) and over tcp (tls=tcp). The targets progress while they wait.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <vector>

#include "framework/transport/inprocess_bootstrap.h"
#include "tests/unit/ucx/ucx_test_support.h"

namespace stalelearn::backends::ucx {
namespace {

using testing::BarrierWhileProgressing;
using testing::CreateUcx;
using testing::ExchangeAndImport;
using testing::kTestTimeout;
using testing::ProgressUntilAtLeast;
using transport::Access;
using transport::Bootstrap;
using transport::Rank;

// Layout of the test region: a few words, then payload.
constexpr std::uint64_t kCommitWord = 0;
constexpr std::uint64_t kDoneWord = 8;
constexpr std::uint64_t kCounterWord = 16;
constexpr std::uint64_t kPayload = 64;
constexpr std::size_t kRegionBytes = (1 << 20) + kPayload;

class UcxThreads : public ::testing::TestWithParam<const char*> {
 protected:
  std::map<std::string, std::string> Options() const {
    if (std::string(GetParam()).empty()) return {};
    return {{"tls", GetParam()}};
  }
};

std::vector<std::byte> Pattern(std::size_t n, unsigned seed) {
  std::vector<std::byte> bytes(n);
  for (std::size_t i = 0; i < n; ++i) bytes[i] = static_cast<std::byte>((i * 131 + seed) & 0xff);
  return bytes;
}

TEST_P(UcxThreads, PutCommitThenGetRoundTrip) {
  transport::RunRanks(2, [&](Bootstrap& bootstrap) {
    auto t = CreateUcx(bootstrap, Options());
    auto region = ValueOrThrow(t->Register(kRegionBytes, Access::kAll));
    auto remotes = ExchangeAndImport(*t, bootstrap, *region, "region");
    const std::size_t sizes[] = {1, 7, 4096, 65536 + 3, 1 << 20};
    if (t->rank() == Rank{0}) {
      const auto& target = *remotes[1];
      for (unsigned round = 0; round < std::size(sizes); ++round) {
        const auto payload = Pattern(sizes[round], round);
        const std::uint64_t offset = kPayload + (round % 2);  // aligned and unaligned
        ThrowIfError(PutBlocking(*t, payload.data(), payload.size(), target, offset, kTestTimeout));
        ThrowIfError(t->Fence(Rank{1}));
        auto commit = ValueOrThrow(t->AtomicAdd(target, kCommitWord, 1));
        ThrowIfError(t->Flush(Rank{1}, kTestTimeout));
        ThrowIfError(commit->Wait(kTestTimeout));
        // Rank 1 checks, then tells us to read it back.
        ASSERT_TRUE(ProgressUntilAtLeast(*t, region->data() + kDoneWord, round + 1));
        std::vector<std::byte> back(payload.size());
        ThrowIfError(GetBlocking(*t, back.data(), back.size(), target, offset, kTestTimeout));
        EXPECT_EQ(back, payload) << "get of " << payload.size() << " bytes";
      }
      ThrowIfError(FetchAddBlocking(*t, target, kDoneWord, 1, kTestTimeout).status());
    } else {
      for (unsigned round = 0; round < std::size(sizes); ++round) {
        ASSERT_TRUE(ProgressUntilAtLeast(*t, region->data() + kCommitWord, round + 1));
        const auto expected = Pattern(sizes[round], round);
        EXPECT_EQ(std::memcmp(region->data() + kPayload + (round % 2), expected.data(), expected.size()), 0)
            << "put of " << expected.size() << " bytes";
        ThrowIfError(PutBlocking(*t, &round, 0, *remotes[0], 0, kTestTimeout));  // zero bytes: a no-op
        auto done = ValueOrThrow(t->AtomicAdd(*remotes[0], kDoneWord, 1));
        ThrowIfError(t->Flush(Rank{0}, kTestTimeout));
      }
      // Serve rank 0's gets until it says it is finished.
      ASSERT_TRUE(ProgressUntilAtLeast(*t, region->data() + kDoneWord, 1));
    }
    ThrowIfError(BarrierWhileProgressing(*t, bootstrap));
  });
}

TEST_P(UcxThreads, ContendedFetchAddsGiveExactTotalAndDistinctOldValues) {
  constexpr int kRanks = 3;
  constexpr int kAddsPerRank = 300;
  transport::RunRanks(kRanks, [&](Bootstrap& bootstrap) {
    auto t = CreateUcx(bootstrap, Options());
    auto region = ValueOrThrow(t->Register(4096, Access::kAll));
    auto remotes = ExchangeAndImport(*t, bootstrap, *region, "counters");
    std::vector<std::uint64_t> olds;
    for (int i = 0; i < kAddsPerRank; ++i) {
      olds.push_back(ValueOrThrow(FetchAddBlocking(*t, *remotes[0], kCounterWord, 1, kTestTimeout)));
    }
    // Every fetch-add completed (with its reply) before its rank got here.
    ThrowIfError(BarrierWhileProgressing(*t, bootstrap));
    if (t->rank() == Rank{0}) {
      EXPECT_EQ(transport::LoadAcquire64(region->data() + kCounterWord), std::uint64_t{kRanks * kAddsPerRank});
    }
    auto all = ValueOrThrow(bootstrap.AllGather("olds", std::as_bytes(std::span(olds))));
    std::vector<std::uint64_t> every;
    for (const auto& bytes : all) {
      const auto* words = reinterpret_cast<const std::uint64_t*>(bytes.data());
      every.insert(every.end(), words, words + bytes.size() / sizeof(std::uint64_t));
    }
    std::sort(every.begin(), every.end());
    std::vector<std::uint64_t> expected(kRanks * kAddsPerRank);
    std::iota(expected.begin(), expected.end(), 0);
    EXPECT_EQ(every, expected) << "every old value exactly once";
    ThrowIfError(bootstrap.Barrier());
  });
}

TEST_P(UcxThreads, CompareSwapElectsExactlyOneWinner) {
  constexpr int kRanks = 3;
  transport::RunRanks(kRanks, [&](Bootstrap& bootstrap) {
    auto t = CreateUcx(bootstrap, Options());
    auto region = ValueOrThrow(t->Register(4096, Access::kAll));
    auto remotes = ExchangeAndImport(*t, bootstrap, *region, "election");
    const std::uint64_t me = static_cast<std::uint64_t>(t->rank().value) + 1;
    const std::uint64_t old = ValueOrThrow(CompareSwapBlocking(*t, *remotes[0], kCounterWord, 0, me, kTestTimeout));
    ThrowIfError(BarrierWhileProgressing(*t, bootstrap));
    std::int64_t won[] = {old == 0 ? 1 : 0};
    std::int64_t winner[] = {old == 0 ? static_cast<std::int64_t>(me) : 0};
    auto wins = ValueOrThrow(bootstrap.AllGather("won", std::as_bytes(std::span(won))));
    int total = 0;
    for (const auto& w : wins) total += static_cast<int>(reinterpret_cast<const std::int64_t*>(w.data())[0]);
    EXPECT_EQ(total, 1);
    ThrowIfError(bootstrap.AllReduceMax(winner));
    if (t->rank() == Rank{0}) {
      EXPECT_EQ(transport::LoadAcquire64(region->data() + kCounterWord), static_cast<std::uint64_t>(winner[0]));
    }
    ThrowIfError(bootstrap.Barrier());
  });
}

// Over tcp the target's worker performs every operation. With
// progress_thread=on it does so while the target's own thread is blocked in a
// bootstrap barrier (without the option this test would time out).
TEST(UcxProgressThread, ServesPeersWhileTheTargetBlocks) {
  constexpr int kAdds = 200;
  transport::RunRanks(2, [&](Bootstrap& bootstrap) {
    auto t = CreateUcx(bootstrap, {{"tls", "tcp"}, {"net_devices", "lo"}, {"progress_thread", "on"}});
    EXPECT_FALSE(t->capabilities().target_must_progress);
    auto region = ValueOrThrow(t->Register(kRegionBytes, Access::kAll));
    auto remotes = ExchangeAndImport(*t, bootstrap, *region, "served");
    if (t->rank() == Rank{0}) {
      for (int i = 0; i < kAdds; ++i) {
        EXPECT_EQ(ValueOrThrow(FetchAddBlocking(*t, *remotes[1], kCounterWord, 1, kTestTimeout)),
                  static_cast<std::uint64_t>(i));
      }
      const auto payload = Pattern(100000, 5);
      ThrowIfError(PutBlocking(*t, payload.data(), payload.size(), *remotes[1], kPayload, kTestTimeout));
      ThrowIfError(t->Flush(Rank{1}, kTestTimeout));
      std::vector<std::byte> back(payload.size());
      ThrowIfError(GetBlocking(*t, back.data(), back.size(), *remotes[1], kPayload, kTestTimeout));
      EXPECT_EQ(back, payload);
    }
    ThrowIfError(bootstrap.Barrier());  // rank 1 waits here without progressing
    if (t->rank() == Rank{1}) {
      EXPECT_EQ(transport::LoadAcquire64(region->data() + kCounterWord), std::uint64_t{kAdds});
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Transports, UcxThreads, ::testing::Values("", "tcp"),
                         [](const auto& info) { return std::string(info.param).empty() ? "Default" : "Tcp"; });

}  // namespace
}  // namespace stalelearn::backends::ucx
