// Reusable bodies of the snapshot tests (I3), shared by snapshot_test.cc and
// the planted-defect self-test (tests/selftest/): they report through gtest
// (EXPECT/ADD_FAILURE), so a self-test can run them under a failure-capturing
// reporter and check which check failed.
//
// Thread-safety: call from one test thread; the bodies start and join their
// own threads.
#pragma once

#include <cstdint>
#include <span>

#include "framework/sync/shard_merger.h"

namespace stalelearn::sync::testing {

// Sets every element of the (int32) master shard to `value`.
void FillMaster(ShardMerger& merger, std::int32_t value);
// True if every int32 of `shard` is equal; `*value` gets the first.
bool AllEqual(std::span<const std::byte> shard, std::int32_t* value);

// A writer thread publishes generation g with every element g - 1, as fast
// as it can, while this thread reads at least `reads` snapshots and until
// 500 reads found a newer generation than the read before: each read must
// hold one whole generation (failure "torn snapshots read") and generations
// never go backwards.
void CheckConcurrentReaderSeesOnlyWholeGenerations(int reads = 2000);

}  // namespace stalelearn::sync::testing
