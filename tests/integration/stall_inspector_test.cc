// The stall inspector (wait.warn_after_seconds, framework/sync/wait_until.h):
// when compute rank 1 pauses in the middle of a BSP run, compute rank 0 waits
// at its staleness gate and prints a warning naming compute rank 1 and its
// merged clock; with a deadline shorter than the pause, the run fails with
// an error that names it too. Ranks are threads on the local backend.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <limits>
#include <memory>
#include <string>
#include <thread>

#include "framework/core/config_loader.h"
#include "framework/core/error.h"
#include "framework/sync/wait_until.h"
#include "framework/transport/forwarding_transport.h"
#include "tests/integration/train_support.h"

namespace stalelearn::testing {
namespace {

constexpr int kPerClock = 8;
constexpr int kEpochs = 2;

// Sleeps once, before the `pause_at`-th put of a batch payload (a put larger
// than a commit word), then behaves like the wrapped transport.
class PausingTransport final : public transport::ForwardingTransport {
 public:
  PausingTransport(transport::Transport& inner, int pause_at, std::chrono::milliseconds pause)
      : ForwardingTransport(inner), pause_at_(pause_at), pause_(pause) {}

  Result<transport::RequestPtr> Put(const void* src, std::size_t bytes, const transport::RemoteRegion& dst,
                                    std::uint64_t offset) override {
    if (bytes > 64 && ++payload_puts_ == pause_at_) std::this_thread::sleep_for(pause_);
    return ForwardingTransport::Put(src, bytes, dst, offset);
  }

 private:
  const int pause_at_;
  const std::chrono::milliseconds pause_;
  int payload_puts_ = 0;  // the rank's own thread only
};

// World rank 1 is compute rank 1 (placement MEMORY_LAST: ranks 0, 1 compute, 2 memory).
runtime::RuntimeHooks PauseComputeRankOne(std::chrono::milliseconds pause) {
  runtime::RuntimeHooks hooks;
  hooks.wrap_transport = [pause](transport::Transport& inner) -> std::unique_ptr<transport::Transport> {
    if (inner.rank().value != 1) return nullptr;
    return std::make_unique<PausingTransport>(inner, /*pause_at=*/3, pause);
  };
  return hooks;
}

proto::Config BspConfig(double warn_after_seconds, double timeout_seconds) {
  proto::Config config = TestConfig("BSP", 0, 1, kEpochs, kPerClock);
  config.mutable_wait()->set_warn_after_seconds(warn_after_seconds);
  config.mutable_wait()->set_timeout_seconds(timeout_seconds);
  return config;
}

// The thresholds follow the machine's pace instead of fixed seconds: the
// warning threshold is at least 0.3 s and twice what the whole run takes
// without a pause (the ranks' natural skew at a gate stays below that, even
// under ThreadSanitizer on 2 loaded cores, where compute rank 1 once waited
// 0.1 s for unpaused compute rank 0), and the pause is five times it.
double MeasuredWarnSeconds(const CountingApp& app) {
  const auto start = std::chrono::steady_clock::now();
  RunLocal(BspConfig(-1, 0), app, 3);
  const double run = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return std::max(0.3, 2 * run);
}

std::chrono::milliseconds Millis(double seconds) { return std::chrono::milliseconds(static_cast<int>(seconds * 1000)); }

TEST(StallInspector, WaitingRankNamesTheStragglerAndItsClock) {
  const CountingApp app(2 * kPerClock * 4);
  const double warn = MeasuredWarnSeconds(app);
  ::testing::internal::CaptureStderr();
  const LocalRun run = RunLocal(BspConfig(warn, 0), app, 3, PauseComputeRankOne(Millis(5 * warn)));
  const std::string log = ::testing::internal::GetCapturedStderr();
  // The pause changes timing, never the result (BSP, integer sums).
  EXPECT_EQ(run.report().final().value(), app.TrainingSamples() * kEpochs);
  // Compute rank 0 (world rank 0) waits on the merged clock of compute rank 1.
  EXPECT_NE(log.find("stall: rank 0 has waited"), std::string::npos) << log;
  EXPECT_NE(log.find("merged clock: compute rank 0 may start clock"), std::string::npos) << log;
  EXPECT_NE(log.find("behind: compute rank 1 (merged clock "), std::string::npos) << log;
  // Nobody waits on compute rank 0, which is not paused.
  EXPECT_EQ(log.find("behind: compute rank 0 ("), std::string::npos) << log;
}

TEST(StallInspector, DeadlineErrorNamesTheStraggler) {
  const CountingApp app(2 * kPerClock * 4);
  const double deadline = std::max(1.0, 3 * MeasuredWarnSeconds(app));
  ::testing::internal::CaptureStderr();
  std::string error;
  try {
    RunLocal(BspConfig(-1, deadline), app, 3, PauseComputeRankOne(Millis(3 * deadline)));
  } catch (const Error& e) {
    error = e.what();
  }
  const std::string log = ::testing::internal::GetCapturedStderr();
  // Compute rank 0 (at its gate) and the memory rank (its rings idle) share
  // the deadline; whichever gives up first names compute rank 1 (the other
  // then fails on freed regions, logged as "rank N also failed").
  const std::string reported = error + "\n" + log;
  EXPECT_TRUE(reported.find("timed out after") != std::string::npos ||
              reported.find("received no batch for the wait limit") != std::string::npos)
      << reported;
  EXPECT_NE(reported.find("behind: compute rank 1 (merged clock "), std::string::npos) << reported;
  EXPECT_EQ(reported.find("behind: compute rank 0 ("), std::string::npos) << reported;
  // warn_after_seconds < 0: no stall warnings.
  EXPECT_EQ(log.find("stall: "), std::string::npos) << log;
}

TEST(StallInspector, WaitConfigDefaultsAndBadValues) {
  proto::Config config = ValueOrThrow(config::ParseConfigText("", "empty"));
  ASSERT_TRUE(config::ResolveDefaults(config).ok());
  sync::WaitOptions wait;
  sync::ApplyWaitConfig(config.wait(), wait);
  EXPECT_EQ(wait.warn_after, std::chrono::seconds(30));
  EXPECT_EQ(wait.timeout, sync::WaitOptions{}.timeout);  // 0: the program's default
  config.mutable_wait()->set_warn_after_seconds(-1);
  config.mutable_wait()->set_timeout_seconds(2.5);
  sync::ApplyWaitConfig(config.wait(), wait);
  EXPECT_EQ(wait.warn_after, std::chrono::nanoseconds(0));
  EXPECT_EQ(wait.timeout, std::chrono::milliseconds(2500));

  config.mutable_wait()->set_timeout_seconds(-1);
  const Status negative = config::Validate(config);
  EXPECT_NE(negative.message().find("wait.timeout_seconds"), std::string::npos) << negative.ToString();
  config.mutable_wait()->set_timeout_seconds(0);
  config.mutable_wait()->set_warn_after_seconds(std::numeric_limits<double>::infinity());
  const Status infinite = config::Validate(config);
  EXPECT_NE(infinite.message().find("wait.warn_after_seconds"), std::string::npos) << infinite.ToString();
}

}  // namespace
}  // namespace stalelearn::testing
