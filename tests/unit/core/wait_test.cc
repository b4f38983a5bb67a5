// The wait primitive (framework/core/wait.h): done is checked first, progress
// runs between polls, the back-off escalates to sleeping, the deadline fails
// with the description, the stall inspector warns at doubling intervals.
// Timings are only checked as lower bounds (a loaded machine is slower,
// never faster).
#include "framework/core/wait.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace stalelearn {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(WaitFor, DoneIsCheckedFirst) {
  WaitSpec spec;
  bool idled = false;
  spec.backoff.on_idle = [&](std::int64_t) -> Result<bool> {
    idled = true;
    return false;
  };
  int progressed = 0;
  const auto waited = WaitFor(spec, [] { return true; }, [&] { ++progressed; });
  ASSERT_TRUE(waited.ok()) << waited.status().ToString();
  EXPECT_EQ(progressed, 0);
  EXPECT_FALSE(idled);
  EXPECT_LT(waited.value(), 1s);
}

TEST(WaitFor, ProgressRunsBetweenPolls) {
  std::string events;
  int polls = 0;
  const WaitSpec spec;
  const auto waited = WaitFor(
      spec,
      [&] {
        events += 'd';
        return ++polls == 4;
      },
      [&] { events += 'p'; });
  ASSERT_TRUE(waited.ok()) << waited.status().ToString();
  EXPECT_EQ(events, "dpdpdpd");
}

TEST(WaitFor, ProgressThatWorkedSkipsTheBackoff) {
  WaitSpec spec;
  int idles = 0;
  spec.backoff.on_idle = [&](std::int64_t) -> Result<bool> {
    ++idles;
    return false;
  };
  int polls = 0;
  bool worked = true;
  const auto waited = WaitFor(spec, [&] { return ++polls == 5; }, [&] { return worked = !worked; });
  ASSERT_TRUE(waited.ok()) << waited.status().ToString();
  EXPECT_EQ(idles, 2);  // 4 progress calls: false, true, false, true
}

TEST(WaitFor, DeadlineFailsWithTheDescription) {
  int described = 0;
  const WaitSpec spec{.timeout = 50ms, .who = "rank 7", .describe = [&] {
                        ++described;
                        return std::string("merged clock: compute rank 2 (merged clock 3, at memory rank 0)");
                      }};
  const auto start = Clock::now();
  const auto waited = WaitFor(spec, [] { return false; });
  ASSERT_FALSE(waited.ok());
  EXPECT_EQ(waited.status().code(), StatusCode::kTimeout);
  EXPECT_EQ(waited.status().message(),
            "rank 7 timed out after 0 s waiting for merged clock: compute rank 2 (merged clock 3, at memory rank 0)");
  EXPECT_GE(Clock::now() - start, 50ms);
  EXPECT_EQ(described, 1);  // only for the error
}

TEST(WaitFor, CheapPollsReadTheClockEveryNthPollAndNeedNotBeTimed) {
  const WaitSpec spec{.timeout = 20ms, .polls_per_clock_read = 16, .measure = false};
  int polls = 0;
  const auto timed_out = WaitFor(spec, [&] {
    ++polls;
    return false;
  });
  EXPECT_EQ(timed_out.status().code(), StatusCode::kTimeout);
  EXPECT_EQ(polls % 16, 0);  // the deadline is seen at a 16th poll
  const auto start = Clock::now();
  const auto waited = WaitFor(spec, [&] { return Clock::now() - start >= 5ms; });
  ASSERT_TRUE(waited.ok()) << waited.status().ToString();
  EXPECT_EQ(waited.value(), 0ns);
}

TEST(WaitFor, ErrorsOfTheCallbacksEndTheWait) {
  WaitSpec spec;
  const auto failing_done = WaitFor(spec, []() -> Result<bool> { return DataLoss("torn batch"); });
  EXPECT_EQ(failing_done.status().code(), StatusCode::kDataLoss);
  const auto failing_progress = WaitFor(spec, [] { return false; }, [] { return Unavailable("peer gone"); });
  EXPECT_EQ(failing_progress.status().code(), StatusCode::kUnavailable);
  spec.backoff.on_idle = [](std::int64_t) -> Result<bool> { return FailedPrecondition("scheduler failed"); };
  const auto failing_idle = WaitFor(spec, [] { return false; });
  EXPECT_EQ(failing_idle.status().message(), "scheduler failed");
}

TEST(WaitFor, StallWarningsNameTheWaitAtDoublingIntervals) {
  int described = 0;
  const WaitSpec spec{.warn_after = 20ms, .who = "rank 3", .describe = [&] {
                        ++described;
                        return std::string("ring space");
                      }};
  const auto start = Clock::now();
  testing::internal::CaptureStderr();
  const auto waited = WaitFor(spec, [&] { return Clock::now() - start >= 70ms; });
  const std::string log = testing::internal::GetCapturedStderr();
  ASSERT_TRUE(waited.ok()) << waited.status().ToString();
  // Due at 20, 40 and 80 ms; the wait ends at 70 ms (a poll descheduled
  // around then may still see the third), not one warning per poll.
  const int warnings = Count(log, "stall: rank 3 has waited ");
  EXPECT_GE(warnings, 1) << log;
  EXPECT_LE(warnings, 3) << log;
  EXPECT_EQ(Count(log, " s for ring space"), warnings) << log;
  EXPECT_EQ(described, warnings);
}

TEST(Backoff, SpinsThenYieldsThenSleepsDoublingUpToTheMaximum) {
  const Backoff::Policy policy{.spins = 2, .yields = 2, .first_sleep = 2ms, .max_sleep = 8ms};
  Backoff backoff(policy);
  std::vector<Backoff::Phase> phases;
  for (int i = 0; i < 4; ++i) {
    phases.push_back(backoff.next_phase());
    ASSERT_TRUE(backoff.Idle().ok());
  }
  using enum Backoff::Phase;
  EXPECT_EQ(phases, (std::vector{kSpin, kSpin, kYield, kYield}));
  EXPECT_EQ(backoff.next_phase(), kSleep);
  const auto start = Clock::now();
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(backoff.Idle().ok());  // 2 + 4 + 8 + 8 + 8 ms
  EXPECT_GE(Clock::now() - start, 30ms);
  backoff.Reset();
  EXPECT_EQ(backoff.next_phase(), kSpin);
}

TEST(Backoff, AnIdleHookThatWaitedReplacesTheRound) {
  int hooked = 0;
  const Backoff::Policy policy{.spins = 1, .yields = 0, .on_idle = [&](std::int64_t) -> Result<bool> { return ++hooked % 2 == 0; }};
  Backoff backoff(policy);
  ASSERT_TRUE(backoff.Idle().ok());  // the hook did not wait: a spin
  ASSERT_TRUE(backoff.Idle().ok());  // the hook waited: no round used
  EXPECT_EQ(hooked, 2);
  EXPECT_EQ(backoff.next_phase(), Backoff::Phase::kSleep);
}

TEST(Deadline, AHugeTimeoutNeverExpiresAndRestartCountsFromNow) {
  EXPECT_FALSE(Deadline(std::chrono::nanoseconds::max()).Expired());
  const auto start = Clock::now();
  Deadline deadline(10s);
  EXPECT_FALSE(deadline.Expired(start));
  EXPECT_TRUE(deadline.Expired(Clock::now() + 10s));
  std::this_thread::sleep_for(50ms);
  deadline.Restart();
  EXPECT_FALSE(deadline.Expired(start + 10s + 10ms));
  EXPECT_TRUE(Deadline(0s).Expired());
}

}  // namespace
}  // namespace stalelearn
