// Bodies of the checkpoint tests that train a real model (MF on MovieLens,
// two float tables) deterministically (timing backend over local), shared by
// checkpoint_resume_test.cc and the planted-defect self-test
// (tests/selftest/), which plants a restore defect and expects the body's
// specific failure.
//
// Why they can fail: an uninterrupted checkpointed run carries every shard
// in memory across its segment boundaries (MemoryRank::LeaveEndpoints /
// ContinueOnNewEndpoints) and never restores, so a restore that loses any
// table's rows or merge-policy state (AdaGrad's accumulators, Adam's moments
// and step counts) gives the resumed run another model.
// Thread-safety: call from one test thread at a time.
#pragma once

#include <filesystem>
#include <string_view>

namespace stalelearn::testing {

inline constexpr const char* kMergeStateNotResumedMessage =
    "the resumed run does not end with the uninterrupted run's model: a table's rows or merge-policy state "
    "were not restored (I8)";

// MF, 3 compute ranks and 1 memory rank, SSP s = 2, merge policy `policy` on
// every table, a checkpoint every 20 clocks: the run resumed from its clock-40
// checkpoint ends with the uninterrupted run's model checksum, and `policy`
// changed the model (its checksum differs from sum's unless `policy` is sum).
void CheckStatefulMergeResumeIsExact(std::string_view policy, const std::filesystem::path& ratings);

}  // namespace stalelearn::testing
