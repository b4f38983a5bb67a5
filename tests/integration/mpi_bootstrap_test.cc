// The MPI bootstrap (framework/transport/mpi_bootstrap.h) under mpirun: the
// byte store, the variable-size allgather with its key check, reductions.
// Every test is collective: all ranks run it in the same order.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "framework/transport/mpi_bootstrap.h"
#include "tests/integration/mpi_gtest_main.h"

namespace stalelearn::transport {
namespace {

using stalelearn::testing::MpiTestBootstrap;

Bytes Filled(std::size_t n, int value) { return Bytes(n, static_cast<std::byte>(value)); }

TEST(MpiBootstrap, KnowsItWasLaunchedByMpirun) {
  EXPECT_TRUE(LaunchedByMpiLauncher());
  EXPECT_GE(MpiTestBootstrap().world_size(), 2);
}

TEST(MpiBootstrap, SecondSessionIsRefused) {
  int argc = 0;
  char** argv = nullptr;
  auto second = MpiSession::Start(&argc, &argv);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kFailedPrecondition);
}

TEST(MpiBootstrap, AllGatherCarriesVariableSizesInRankOrder) {
  Bootstrap& b = MpiTestBootstrap();
  const int me = b.rank().value;
  // Rank r contributes 1000*r bytes of value r (rank 0 contributes nothing).
  auto all = b.AllGather("sizes", Filled(1000 * static_cast<std::size_t>(me), me));
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  ASSERT_EQ(all->size(), static_cast<std::size_t>(b.world_size()));
  for (int r = 0; r < b.world_size(); ++r) {
    EXPECT_EQ((*all)[r], Filled(1000 * static_cast<std::size_t>(r), r)) << "from rank " << r;
  }
}

TEST(MpiBootstrap, AllGatherWithMismatchedKeysFailsOnEveryRank) {
  Bootstrap& b = MpiTestBootstrap();
  const std::string key = b.rank().value == 0 ? "addresses" : "keys";
  auto all = b.AllGather(key, Filled(8, 1));
  ASSERT_FALSE(all.ok());
  EXPECT_EQ(all.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(all.status().message().find("addresses"), std::string::npos) << all.status().message();
}

TEST(MpiBootstrap, PutBecomesVisibleToOthersAfterSync) {
  Bootstrap& b = MpiTestBootstrap();
  const int me = b.rank().value;
  const Rank next{(me + 1) % b.world_size()};
  ASSERT_TRUE(b.Put("store.rkey", Filled(16 + static_cast<std::size_t>(me), me)).ok());
  auto before = b.Get(next, "store.rkey");
  EXPECT_EQ(before.status().code(), StatusCode::kNotFound);

  ASSERT_TRUE(b.Sync().ok());
  for (int r = 0; r < b.world_size(); ++r) {
    auto value = b.Get(Rank{r}, "store.rkey");
    ASSERT_TRUE(value.ok()) << value.status().ToString();
    EXPECT_EQ(*value, Filled(16 + static_cast<std::size_t>(r), r));
  }

  // A later Put replaces the value, again only after the next Sync.
  ASSERT_TRUE(b.Put("store.rkey", Filled(3, 100 + me)).ok());
  EXPECT_EQ(*b.Get(next, "store.rkey"), Filled(16 + static_cast<std::size_t>(next.value), next.value));
  ASSERT_TRUE(b.Sync().ok());
  EXPECT_EQ(*b.Get(next, "store.rkey"), Filled(3, 100 + next.value));
}

TEST(MpiBootstrap, GetOfUnknownKeyOrRankIsAnError) {
  Bootstrap& b = MpiTestBootstrap();
  EXPECT_EQ(b.Get(Rank{0}, "never.stored").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(b.Get(Rank{b.world_size()}, "store.rkey").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(b.Get(Rank{-1}, "store.rkey").status().code(), StatusCode::kInvalidArgument);
}

TEST(MpiBootstrap, AnAnnouncementReachesEveryOtherRankWithoutACollective) {
  // Rank 1 announces (a negative value, as early stopping's request is);
  // every other rank polls until it arrives, with no collective in between;
  // the announcer hears nothing of its own.
  Bootstrap& b = MpiTestBootstrap();
  const int me = b.rank().value;
  if (me == 1) {
    ASSERT_TRUE(b.Announce(-1).ok());
    auto own = b.Announced();
    ASSERT_TRUE(own.ok()) << own.status().ToString();
    EXPECT_EQ(*own, 0);
  } else {
    std::int64_t heard = 0;
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (heard == 0 && std::chrono::steady_clock::now() < give_up) {
      auto announced = b.Announced();
      ASSERT_TRUE(announced.ok()) << announced.status().ToString();
      heard = *announced;
    }
    EXPECT_EQ(heard, -1) << "rank " << me << " never heard rank 1's announcement";
  }
  ASSERT_TRUE(b.Barrier().ok());
}

TEST(MpiBootstrap, ReductionsCombineEveryRank) {
  Bootstrap& b = MpiTestBootstrap();
  const int n = b.world_size();
  const int me = b.rank().value;
  std::vector<float> floats = {1.0f, static_cast<float>(me)};
  std::vector<double> doubles = {0.5, static_cast<double>(me) * 2.0};
  std::vector<std::int64_t> maxima = {me, -me, std::int64_t{1} << 40};
  ASSERT_TRUE(b.AllReduceSum(floats).ok());
  ASSERT_TRUE(b.AllReduceSum(doubles).ok());
  ASSERT_TRUE(b.AllReduceMax(maxima).ok());
  const double rank_sum = n * (n - 1) / 2.0;
  EXPECT_FLOAT_EQ(floats[0], static_cast<float>(n));
  EXPECT_FLOAT_EQ(floats[1], static_cast<float>(rank_sum));
  EXPECT_DOUBLE_EQ(doubles[0], 0.5 * n);
  EXPECT_DOUBLE_EQ(doubles[1], 2.0 * rank_sum);
  EXPECT_EQ(maxima, (std::vector<std::int64_t>{n - 1, 0, std::int64_t{1} << 40}));
  EXPECT_TRUE(b.Barrier().ok());
}

}  // namespace
}  // namespace stalelearn::transport
