// Reusable bodies of the training-level invariant and quality tests, with
// ranks as threads on the local backend. The tests (train_invariants_test.cc,
// mf_convergence_test.cc) call them, and so does the planted-defect self-test
// (tests/selftest/), which plants a defect, runs the same body under a
// failure-capturing reporter and expects the body's specific failure message.
//
// Each body reports through gtest (EXPECT/ADD_FAILURE) with a message naming
// the invariant it guards; a rank's error propagates as an exception.
// Thread-safety: call from one test thread at a time.
#pragma once

#include <filesystem>
#include <optional>
#include <ostream>

#include "framework/proto/config.pb.h"

namespace stalelearn::testing {

// Failure messages the self-test looks for (one per guarded property).
inline constexpr const char* kMergedTwiceMessage = "more merged than pushed: a delta was merged twice (I4)";
inline constexpr const char* kLostDeltaMessage = "less merged than pushed: a committed delta was lost (I4)";
inline constexpr const char* kStaleReplicaMessage = "a replica missed updates older than the bound (I1)";
inline constexpr const char* kFactorsIdleMessage =
    "the trained model does not beat the biases-only model by the margin: the latent factors did not learn";

struct ModeCase {
  const char* label;
  proto::ConsistencyMode mode;
  int staleness;
  int compute;
  int memory;
  proto::Partitioning partitioning;
};
// gtest would print the raw bytes, padding included.
inline void PrintTo(const ModeCase& c, std::ostream* os) { *os << c.label; }

// I4: a counting app's integer tables end at exactly the pushed totals (the
// model checksum and the summed total), whatever the mode and partitioning.
void CheckExactlyOnce(const ModeCase& c);

// I1 and I2 with a straggler (compute rank 1 slowed 4x), bound `s` (0: BSP):
// after every refresh a replica holds all of its own updates and every other
// rank's clocks older than the bound, and nobody runs more than s ahead.
void CheckBoundedStalenessWithStraggler(int s);

// I2 without a bound (ASP): after every refresh a replica holds exactly its
// own updates.
void CheckReadYourWritesWithoutABound();

// The MovieLens ratings file, if deploy/fetch-data.sh fetched it.
std::optional<std::filesystem::path> FetchedMovieLens();

// MF on MovieLens, 5 epochs, in mode `c`: the test RMSE falls and the
// trained model beats a biases-only model (the same run with the latent
// factors initialised to zero, where they stay) by kMfMarginOverBiasesOnly.
inline constexpr double kMfMarginOverBiasesOnly = 0.008;
void CheckMfBeatsBiasesOnly(const ModeCase& c, const std::filesystem::path& ratings);

}  // namespace stalelearn::testing
