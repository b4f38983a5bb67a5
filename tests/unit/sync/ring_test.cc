// Mailbox rings on the local backend: exactly once (I4), nothing torn (I3),
// rejected batches (I7), backpressure (I5), clock bookkeeping.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "tests/unit/sync/ring_fixture.h"

namespace stalelearn::sync {
namespace {

using testing::RingFixture;

TEST(Ring, EveryCommittedBatchIsMergedExactlyOnce) {
  RingFixture f(/*slots=*/4);
  std::int64_t pushed = 0;
  for (int n = 1; n <= 23; ++n) {  // wraps the 4-slot ring several times
    const std::vector<std::byte> batch = f.Batch({n % 16, (n + 5) % 16}, n, /*clock=*/n - 1);
    ASSERT_TRUE(f.writer().Push(batch).ok());
    pushed += 2 * n;
    if (n % 3 == 0) f.poller().PollOnce();  // the memory rank lags behind
  }
  while (f.poller().PollOnce() > 0) {
  }
  for (int i = 0; i < 10; ++i) EXPECT_EQ(f.poller().PollOnce(), 0) << "a consumed batch came back";
  EXPECT_EQ(f.MasterSum(), pushed);
  EXPECT_EQ(f.poller().counters().batches_merged, 23);
  EXPECT_EQ(f.poller().counters().rejected_batches, 0);
  EXPECT_EQ(f.poller().consumed(model::ComputeIndex{0}), 23u);
  EXPECT_EQ(f.poller().merged_clock(model::ComputeIndex{0}), 23u);
}

TEST(Ring, WriterStoppedBeforeTheCommitWordNeverHasItsBatchMerged) {
  RingFixture f;
  ASSERT_TRUE(f.writer().Push(f.Batch({1}, 10)).ok());
  // Batch 2: its payload lands, then the writer stops before its commit word.
  f.set_policy([&](const testing::PutCall& c) { return f.IsCommitWord(c) ? testing::PutFault::kFail : testing::PutFault::kNone; });
  EXPECT_FALSE(f.writer().Push(f.Batch({2}, 20)).ok());

  // The payload really is in slot 1: only the missing commit word keeps it out.
  const std::byte* slot = f.ring_region().data() + f.ring_geometry().slot_offset(1);
  Result<BatchHeader> header = DecodeHeader(std::span(slot, sizeof(BatchHeader)));
  ASSERT_TRUE(header.ok());
  EXPECT_EQ(header->sequence, 2u);

  for (int i = 0; i < 100; ++i) f.poller().PollOnce();
  EXPECT_EQ(f.Master(1), 10);
  EXPECT_EQ(f.Master(2), 0) << "a batch without its commit word was merged";
  EXPECT_EQ(f.poller().consumed(model::ComputeIndex{0}), 1u);
  EXPECT_EQ(f.poller().counters().batches_merged, 1);
  EXPECT_EQ(f.poller().counters().rejected_batches, 0);
}

TEST(Ring, CorruptedBatchIsRejectedAndCountedAndLaterBatchesStillMerge) {
  RingFixture f;
  const std::int64_t payload_size_floor = sizeof(BatchHeader);
  int payload_puts = 0;
  f.set_policy([&](const testing::PutCall& c) {
    if (static_cast<std::int64_t>(c.bytes) <= payload_size_floor) return testing::PutFault::kNone;
    return ++payload_puts == 2 ? testing::PutFault::kCorrupt : testing::PutFault::kNone;
  });
  ASSERT_TRUE(f.writer().Push(f.Batch({1}, 1, 0)).ok());
  ASSERT_TRUE(f.writer().Push(f.Batch({2}, 2, 1)).ok());  // lands corrupted
  ASSERT_TRUE(f.writer().Push(f.Batch({3}, 3, 2)).ok());
  while (f.poller().PollOnce() > 0) {
  }
  EXPECT_EQ(f.poller().counters().rejected_batches, 1);
  EXPECT_EQ(f.poller().counters().batches_merged, 2);
  EXPECT_EQ(f.Master(1), 1);
  EXPECT_EQ(f.Master(2), 0);
  EXPECT_EQ(f.Master(3), 3);
  EXPECT_EQ(f.poller().consumed(model::ComputeIndex{0}), 3u);
  // Its header was intact, so its clock still counts as done.
  EXPECT_EQ(f.poller().merged_clock(model::ComputeIndex{0}), 3u);
}

TEST(Ring, RowOutsideTheShardIsRejected) {
  RingFixture f(/*slots=*/4, /*memory_ranks=*/2);  // shard 0 holds rows 0..7
  ASSERT_TRUE(f.writer().Push(f.Batch({12}, 5)).ok());
  ASSERT_TRUE(f.writer().Push(f.Batch({3}, 6)).ok());
  while (f.poller().PollOnce() > 0) {
  }
  EXPECT_EQ(f.poller().counters().rejected_batches, 1);
  EXPECT_EQ(f.poller().counters().batches_merged, 1);
  EXPECT_EQ(f.Master(3), 6);
}

TEST(Ring, FullRingMakesTheWriterWaitAndNothingIsOverwritten) {
  RingFixture f(/*slots=*/4);
  for (int n = 1; n <= 4; ++n) {
    Result<std::chrono::nanoseconds> stalled = f.writer().Push(f.Batch({n}, 1));
    ASSERT_TRUE(stalled.ok());
  }
  // Every byte of the ring (commit words and slots) as the four unconsumed batches left it.
  const std::span<const std::byte> ring(f.ring_region().data(), f.ring_region().size());
  const std::vector<std::byte> full(ring.begin(), ring.end());
  // The memory rank merges nothing: batch 5 has no free slot.
  Result<std::chrono::nanoseconds> blocked = f.writer().Push(f.Batch({5}, 1));
  EXPECT_EQ(blocked.status().code(), StatusCode::kTimeout);
  EXPECT_EQ(f.CommitWord(0), 1u) << "batch 5 overwrote unconsumed batch 1";
  EXPECT_EQ(f.writer().next_sequence(), 5u);
  const auto changed = std::mismatch(ring.begin(), ring.end(), full.begin()).first;
  EXPECT_EQ(changed, ring.end()) << "the blocked push wrote byte " << (changed - ring.begin()) << " of the ring";

  EXPECT_EQ(f.poller().PollOnce(), 4);
  ASSERT_TRUE(f.writer().Push(f.Batch({5}, 1)).ok());
  EXPECT_EQ(f.poller().PollOnce(), 1);
  EXPECT_EQ(f.MasterSum(), 5);
}

// A push reads the memory rank's head only when the head it knows leaves no
// free slot; a head learnt elsewhere (the control block a clock-table
// refresh read: DeltaPusher gives it to the writer) saves that read.
TEST(Ring, AHeadNotedFromTheControlBlockSavesTheWritersOwnRead) {
  RingFixture f(/*slots=*/4);
  // The first four batches fit the empty ring; at half of it, and again at
  // its end, the writer begins a read of the head that it does not wait for.
  for (int n = 1; n <= 4; ++n) ASSERT_TRUE(f.writer().Push(f.Batch({n}, 1)).ok());
  EXPECT_EQ(f.writer_gets(), 2);
  EXPECT_EQ(f.poller().PollOnce(), 4);
  ASSERT_EQ(f.PublishedHead(), 4u);

  // Batch 5: the read ahead saw the ring full (it came before the poll),
  // so the writer reads the head itself.
  ASSERT_TRUE(f.writer().Push(f.Batch({5}, 1)).ok());
  EXPECT_EQ(f.writer_gets(), 3);

  // Batches 6..8 fit by that read (two more reads ahead, both seeing head
  // 4); then the memory rank consumes 5..8. Batch 9 would need another read
  // of its own, but the head noted from the control block says 8 was
  // consumed.
  for (int n = 6; n <= 8; ++n) ASSERT_TRUE(f.writer().Push(f.Batch({n}, 1)).ok());
  EXPECT_EQ(f.writer_gets(), 5);
  EXPECT_EQ(f.poller().PollOnce(), 4);
  f.writer().NoteHead(f.PublishedHead());
  ASSERT_TRUE(f.writer().Push(f.Batch({9}, 1)).ok());
  EXPECT_EQ(f.writer_gets(), 5) << "a noted head that leaves room needs no read";
  EXPECT_EQ(f.poller().PollOnce(), 1);
  EXPECT_EQ(f.MasterSum(), 9);
}

TEST(Ring, FinishWordEndsTheRingOnlyAfterEveryBatchIsConsumedThenReleaseWord) {
  RingFixture f;
  ASSERT_TRUE(f.writer().Push(f.Batch({1}, 1)).ok());
  EXPECT_FALSE(f.poller().AllFinished());
  ASSERT_TRUE(f.writer().Finish().ok());
  EXPECT_FALSE(f.poller().AllFinished()) << "finished with a batch still in the ring";
  f.poller().PollOnce();
  EXPECT_TRUE(f.poller().AllFinished());
  EXPECT_FALSE(f.poller().AllReleased());
  ASSERT_TRUE(f.writer().Release().ok());
  EXPECT_TRUE(f.poller().AllReleased());
}

}  // namespace
}  // namespace stalelearn::sync
