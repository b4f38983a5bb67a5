// The in-process bootstrap: collectives, the store, deadlines, RunRanks.
#include "framework/transport/inprocess_bootstrap.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <limits>
#include <string>
#include <thread>

#include "framework/core/error.h"

namespace stalelearn::transport {
namespace {

using namespace std::chrono_literals;

Bytes BytesOf(std::string_view text) {
  Bytes bytes(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) bytes[i] = static_cast<std::byte>(text[i]);
  return bytes;
}

std::string TextOf(const Bytes& bytes) {
  std::string text;
  for (std::byte b : bytes) text.push_back(static_cast<char>(b));
  return text;
}

TEST(InProcessBootstrap, AllGatherReturnsEveryRanksBytesInRankOrder) {
  RunRanks(4, [](Bootstrap& bootstrap) {
    // Different lengths per rank, so a mix-up of shares would show.
    const std::string mine(bootstrap.rank().value + 1, static_cast<char>('a' + bootstrap.rank().value));
    for (int repeat = 0; repeat < 3; ++repeat) {
      std::vector<Bytes> all = ValueOrThrow(bootstrap.AllGather("names", BytesOf(mine)));
      ASSERT_EQ(all.size(), 4u);
      EXPECT_EQ(TextOf(all[0]), "a");
      EXPECT_EQ(TextOf(all[1]), "bb");
      EXPECT_EQ(TextOf(all[2]), "ccc");
      EXPECT_EQ(TextOf(all[3]), "dddd");
    }
  });
}

TEST(InProcessBootstrap, AllGatherWithMismatchedKeysIsAnErrorOnEveryRank) {
  std::atomic<int> errors{0};
  RunRanks(3, [&](Bootstrap& bootstrap) {
    const std::string key = bootstrap.rank().value == 2 ? "other" : "same";
    auto all = bootstrap.AllGather(key, {});
    ASSERT_FALSE(all.ok());
    EXPECT_EQ(all.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(all.status().message().find("allgather:other"), std::string::npos) << all.status().ToString();
    ++errors;
    // The group stays usable after a mismatch.
    EXPECT_TRUE(bootstrap.Barrier().ok());
  });
  EXPECT_EQ(errors.load(), 3);
}

TEST(InProcessBootstrap, AllReduceSumsAndMaxes) {
  RunRanks(4, [](Bootstrap& bootstrap) {
    const int r = bootstrap.rank().value;
    std::vector<float> floats{1.0f * r, 0.5f};
    ThrowIfError(bootstrap.AllReduceSum(floats));
    EXPECT_EQ(floats, (std::vector<float>{6.0f, 2.0f}));
    std::vector<double> doubles{0.25 * r};
    ThrowIfError(bootstrap.AllReduceSum(doubles));
    EXPECT_EQ(doubles[0], 1.5);
    std::vector<std::int64_t> ints{-r, 10 * r};
    ThrowIfError(bootstrap.AllReduceMax(ints));
    EXPECT_EQ(ints, (std::vector<std::int64_t>{0, 30}));
  });
}

TEST(InProcessBootstrap, AllReduceWithDifferentLengthsIsAnError) {
  RunRanks(2, [](Bootstrap& bootstrap) {
    std::vector<double> values(bootstrap.rank().value + 1, 1.0);
    Status status = bootstrap.AllReduceSum(values);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << status.ToString();
  });
}

TEST(InProcessBootstrap, PutIsVisibleToOtherRanksAfterSync) {
  RunRanks(3, [](Bootstrap& bootstrap) {
    const int r = bootstrap.rank().value;
    ThrowIfError(bootstrap.Put("address", BytesOf("rank" + std::to_string(r))));
    ThrowIfError(bootstrap.Sync());
    for (int owner = 0; owner < 3; ++owner) {
      EXPECT_EQ(TextOf(ValueOrThrow(bootstrap.Get(Rank{owner}, "address"))), "rank" + std::to_string(owner));
    }
    EXPECT_EQ(bootstrap.Get(Rank{0}, "missing").status().code(), StatusCode::kNotFound);
    EXPECT_EQ(bootstrap.Get(Rank{7}, "address").status().code(), StatusCode::kInvalidArgument);
  });
}

TEST(InProcessBootstrap, GetSeesWhatWasPutBeforeTheReadersLastSyncOnly) {
  auto group = ValueOrThrow(InProcessGroup::Create(2));
  auto published = [&](std::string_view text) {
    auto newest = group->Lookup(Rank{0}, "value", std::numeric_limits<std::uint64_t>::max());
    return newest.ok() && TextOf(*newest) == text;
  };
  RunRanks(group, [&](Bootstrap& bootstrap) {
    const bool writer = bootstrap.rank().value == 0;
    if (writer) ThrowIfError(bootstrap.Put("value", BytesOf("first")));
    EXPECT_EQ(bootstrap.Get(Rank{0}, "value").status().code(), StatusCode::kNotFound);  // no Sync yet
    ThrowIfError(bootstrap.Sync());
    if (writer) {
      ThrowIfError(bootstrap.Put("value", BytesOf("second")));
      ThrowIfError(bootstrap.Sync());  // publishes "second" while rank 1 may still read
    } else {
      while (!published("second")) std::this_thread::yield();
      EXPECT_EQ(TextOf(ValueOrThrow(bootstrap.Get(Rank{0}, "value"))), "first");
      ThrowIfError(bootstrap.Sync());
    }
    EXPECT_EQ(TextOf(ValueOrThrow(bootstrap.Get(Rank{0}, "value"))), "second");
  });
}

TEST(InProcessBootstrap, ARankThatNeverArrivesGivesTimeoutNamingIt) {
  auto group = ValueOrThrow(InProcessGroup::Create(2, 200ms));
  // Only rank 0 runs; rank 1's bootstrap is never used.
  auto bootstrap = ValueOrThrow(group->MakeBootstrap(Rank{0}));
  Status status = bootstrap->Barrier();
  EXPECT_EQ(status.code(), StatusCode::kTimeout) << status.ToString();
  EXPECT_NE(status.message().find("rank(s) 1"), std::string::npos) << status.ToString();
}

TEST(InProcessBootstrap, ARankThatFailedMakesTheOthersFailFastAndIsRethrown) {
  std::atomic<int> unavailable{0};
  EXPECT_THROW(RunRanks(3,
                        [&](Bootstrap& bootstrap) {
                          if (bootstrap.rank().value == 1) throw std::runtime_error("rank 1 broke");
                          Status status = bootstrap.Barrier();
                          if (status.code() == StatusCode::kUnavailable) ++unavailable;
                        }),
               std::runtime_error);
  EXPECT_EQ(unavailable.load(), 2);
}

// RunRanks expected to fail: the rethrown failure's message (whether it was
// a stalelearn::Error) and what was logged meanwhile.
struct RanksFailure {
  std::string message;
  bool is_error = false;
  std::string logged;
};
RanksFailure RunRanksFailing(int world_size, const std::function<void(Bootstrap&)>& body) {
  RanksFailure failure;
  testing::internal::CaptureStderr();
  try {
    RunRanks(world_size, body);
    ADD_FAILURE() << "RunRanks did not rethrow";
  } catch (const Error& e) {
    failure.message = e.status().message();
    failure.is_error = true;
  } catch (const std::runtime_error& e) {
    failure.message = e.what();
  }
  failure.logged = testing::internal::GetCapturedStderr();
  return failure;
}

// Ranks that fail only because a peer left (its region freed: kUnavailable,
// not naming why) are consequences: the cause is rethrown, not rank 0's.
TEST(InProcessBootstrap, TheCauseIsRethrownNotAPeerGoneConsequenceOfALowerRank) {
  const RanksFailure f = RunRanksFailing(3, [](Bootstrap& bootstrap) {
    if (bootstrap.rank().value == 2) throw Error(FailedPrecondition("diverged: table 'w' row 3"));
    throw Error(Unavailable("get: region of rank 2 was freed"));
  });
  EXPECT_TRUE(f.is_error);
  EXPECT_EQ(f.message, "diverged: table 'w' row 3");
  EXPECT_EQ(f.logged.find("also failed"), std::string::npos) << "consequences of a departed peer add nothing: " << f.logged;
}

TEST(InProcessBootstrap, RanksThatFailAlikeAreReportedOnceDifferentFailuresEach) {
  const RanksFailure alike = RunRanksFailing(3, [](Bootstrap&) { throw std::runtime_error("unknown backend 'nope'"); });
  EXPECT_EQ(alike.logged.find("also failed"), std::string::npos) << alike.logged;

  // Two different failures: the first is rethrown, the other logged once.
  const RanksFailure different = RunRanksFailing(3, [](Bootstrap& bootstrap) {
    if (bootstrap.rank().value == 2) throw std::runtime_error("disk full");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // after rank 2
    throw std::runtime_error("unknown backend 'nope'");
  });
  EXPECT_EQ(different.message, "disk full");
  EXPECT_NE(different.logged.find("ranks 0, 1 also failed: unknown backend 'nope'"), std::string::npos)
      << different.logged;
  EXPECT_EQ(std::ranges::count(different.logged, '\n'), 1) << different.logged;

  // Many ranks failing alike after the cause (not naming it): the cause is
  // rethrown (the last line a user sees), the rest are one line.
  const RanksFailure many = RunRanksFailing(7, [](Bootstrap& bootstrap) {
    if (bootstrap.rank().value == 2) throw std::runtime_error("diverged: row 3");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    throw std::runtime_error("scheduler: deadlock, every remaining rank waits");
  });
  EXPECT_EQ(many.message, "diverged: row 3");
  EXPECT_NE(many.logged.find("ranks 0, 1, 3, 4 and 2 more also failed: scheduler: deadlock"), std::string::npos)
      << many.logged;
  EXPECT_EQ(std::ranges::count(many.logged, '\n'), 1) << many.logged;

  // Rank 0 fails because rank 1 did, saying why: rank 1's failure is not repeated.
  const RanksFailure consequence = RunRanksFailing(2, [](Bootstrap& bootstrap) {
    if (bootstrap.rank().value == 1) throw std::runtime_error("out of memory");
    ThrowIfError(bootstrap.Barrier());
  });
  EXPECT_TRUE(consequence.is_error);
  EXPECT_NE(consequence.message.find("rank 1 failed: out of memory"), std::string::npos) << consequence.message;
  EXPECT_EQ(consequence.logged.find("also failed"), std::string::npos) << consequence.logged;
}

TEST(InProcessBootstrap, GroupRejectsBadArgumentsAndSecondBootstrapOfARank) {
  EXPECT_FALSE(InProcessGroup::Create(0).ok());
  EXPECT_FALSE(InProcessGroup::Create(2, 0ms).ok());
  auto group = ValueOrThrow(InProcessGroup::Create(2));
  EXPECT_TRUE(group->MakeBootstrap(Rank{1}).ok());
  EXPECT_EQ(group->MakeBootstrap(Rank{1}).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(group->MakeBootstrap(Rank{2}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_THROW(RunRanks(0, [](Bootstrap&) {}), Error);
}

TEST(InProcessBootstrap, SharedObjectsAreCreatedOncePerKeyAndTyped) {
  auto group = ValueOrThrow(InProcessGroup::Create(4));
  std::atomic<int> created{0};
  std::vector<std::shared_ptr<int>> seen(4);
  RunRanks(group, [&](Bootstrap& bootstrap) {
    auto& in_process = dynamic_cast<InProcessBootstrap&>(bootstrap);
    seen[bootstrap.rank().value] = in_process.group().GetOrCreateShared<int>("counter", [&] {
      ++created;
      return std::make_shared<int>(42);
    });
  });
  EXPECT_EQ(created.load(), 1);
  for (const auto& object : seen) EXPECT_EQ(object, seen[0]);
  EXPECT_EQ(*seen[0], 42);
  EXPECT_EQ(group->GetOrCreateShared<double>("counter", [] { return std::make_shared<double>(); }), nullptr);
}

}  // namespace
}  // namespace stalelearn::transport
