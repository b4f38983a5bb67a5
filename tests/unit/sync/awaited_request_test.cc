// Row requests that await clocks (kAwaitsClocks, sync/ring_poller.h): the
// memory rank keeps such a request while the clocks it names are not merged
// and answers it at the end of the first poll after which they are, so the
// reply holds the awaited clocks' batches; the ring goes on meanwhile; a
// newer request of the same rank replaces a kept one, and a dead rank's is
// dropped; a request that names no compute rank of the run is rejected, and
// a batch that awaits clocks but is no request is corrupt.
#include <gtest/gtest.h>

#include <cstring>
#include <optional>
#include <vector>

#include "framework/sync/row_gather.h"
#include "tests/unit/sync/ring_fixture.h"

namespace stalelearn::sync {
namespace {

using model::ComputeIndex;
using model::RowId;
using model::TableId;
using testing::RingFixture;

constexpr std::size_t kReplyBytes = 4096;

RingFixture WithReplyArea() {
  return RingFixture(/*slots=*/4, 1, {{"counts", model::ElementType::kInt32, 16, 2}}, {}, kReplyBytes);
}

// Pushes a request for `rows` of the counts table; returns its sequence.
std::uint64_t PushRequest(RingFixture& f, const std::vector<std::int64_t>& rows, std::optional<AwaitedClocks> awaits) {
  std::vector<std::uint64_t> keys;
  for (std::int64_t r : rows) keys.push_back(EntryKey(TableId{0}, RowId{r}));
  const std::uint64_t sequence = f.writer().next_sequence();
  EXPECT_TRUE(f.writer().Push(EncodeRowRequest(keys, sequence, awaits)).ok());
  return sequence;
}

RowReplyHeader Reply(RingFixture& f) {
  RowReplyHeader h;
  std::memcpy(&h, f.published_region().data() + f.published_geometry().reply_offset(ComputeIndex{0}), sizeof h);
  return h;
}

// Column 0 of the i-th row of the reply.
std::int32_t ReplyRow(RingFixture& f, std::size_t i) {
  std::int32_t v;
  std::memcpy(&v, f.published_region().data() + f.published_geometry().reply_offset(ComputeIndex{0}) +
                      sizeof(RowReplyHeader) + i * 2 * sizeof(std::int32_t),
              sizeof v);
  return v;
}

TEST(AwaitedRequest, IsAnsweredOnlyOnceItsClocksAreMergedAndHoldsThem) {
  RingFixture f = WithReplyArea();
  ASSERT_TRUE(f.writer().Push(f.Batch({3}, 1, /*clock=*/0)).ok());
  const std::uint64_t asked = PushRequest(f, {3, 5}, AwaitedClocks{0, 3});
  f.poller().PollOnce();
  EXPECT_EQ(f.poller().merged_clock(ComputeIndex{0}), 1u);
  EXPECT_NE(Reply(f).sequence, asked) << "answered before clocks 1 and 2 were merged";
  ASSERT_TRUE(f.writer().Push(f.Batch({3}, 5, /*clock=*/1)).ok());
  f.poller().PollOnce();
  EXPECT_NE(Reply(f).sequence, asked) << "answered before clock 2 was merged";
  EXPECT_EQ(f.poller().counters().rows_gathered, 0);
  // The ring went on behind the kept request: clock 2's batch merges, and
  // the answer comes at the end of that poll, holding it.
  ASSERT_TRUE(f.writer().Push(f.Batch({3, 5}, 7, /*clock=*/2)).ok());
  f.poller().PollOnce();
  ASSERT_EQ(Reply(f).sequence, asked);
  EXPECT_EQ(Reply(f).rows, 2u);
  EXPECT_EQ(ReplyRow(f, 0), 13);
  EXPECT_EQ(ReplyRow(f, 1), 7);
  EXPECT_EQ(f.poller().counters().rows_gathered, 2);
  EXPECT_EQ(f.poller().counters().rejected_batches, 0);
}

TEST(AwaitedRequest, ClocksAlreadyMergedOrNoOtherRankAnswerAtOnce) {
  RingFixture f = WithReplyArea();
  ASSERT_TRUE(f.writer().Push(f.Batch({2}, 4, /*clock=*/0)).ok());
  const std::uint64_t first = PushRequest(f, {2}, AwaitedClocks{0, 1});
  f.poller().PollOnce();
  EXPECT_EQ(Reply(f).sequence, first);
  EXPECT_EQ(ReplyRow(f, 0), 4);
  // -1: every compute rank but the sender's clocks, and there is none.
  const std::uint64_t second = PushRequest(f, {2}, AwaitedClocks{-1, 100});
  f.poller().PollOnce();
  EXPECT_EQ(Reply(f).sequence, second);
}

TEST(AwaitedRequest, ANewerRequestReplacesAKeptOne) {
  RingFixture f = WithReplyArea();
  const std::uint64_t kept = PushRequest(f, {1}, AwaitedClocks{0, 2});
  f.poller().PollOnce();
  const std::uint64_t newer = PushRequest(f, {4}, std::nullopt);
  f.poller().PollOnce();
  ASSERT_EQ(Reply(f).sequence, newer);
  // The clocks the first one awaited come in: it is not answered any more.
  ASSERT_TRUE(f.writer().Push(f.Batch({1}, 3, /*clock=*/0)).ok());
  ASSERT_TRUE(f.writer().Push(f.Batch({1}, 3, /*clock=*/1)).ok());
  f.poller().PollOnce();
  EXPECT_EQ(f.poller().merged_clock(ComputeIndex{0}), 2u);
  EXPECT_EQ(Reply(f).sequence, newer) << "request " << kept << " answered after it was replaced";
  EXPECT_EQ(f.poller().counters().rows_gathered, 1);
}

TEST(AwaitedRequest, AKeptRequestOfARankMarkedDeadIsDropped) {
  RingFixture f = WithReplyArea();
  const std::uint64_t kept = PushRequest(f, {1}, AwaitedClocks{0, 2});
  f.poller().PollOnce();
  f.poller().MarkDead(ComputeIndex{0});  // its clocks now read as all merged, but nobody reads its reply
  EXPECT_NE(Reply(f).sequence, kept);
  EXPECT_EQ(f.poller().counters().rows_gathered, 0);
}

TEST(AwaitedRequest, ARequestAwaitingNoRankOfTheRunIsRejectedAndTheRingGoesOn) {
  RingFixture f = WithReplyArea();
  PushRequest(f, {1}, AwaitedClocks{7, 1});
  ASSERT_TRUE(f.writer().Push(f.Batch({1}, 3, /*clock=*/0)).ok());
  f.poller().PollOnce();
  EXPECT_EQ(f.poller().counters().rejected_batches, 1);
  EXPECT_EQ(f.poller().counters().batches_merged, 1);
  EXPECT_EQ(f.Master(1), 3);
}

TEST(AwaitedRequest, ABatchThatAwaitsClocksButIsNoRequestIsCorrupt) {
  RingFixture f = WithReplyArea();
  BatchEncoder encoder(f.layout().tables());
  const std::int32_t delta[2] = {1, 0};
  encoder.Add(TableId{0}, RowId{1}, std::as_bytes(std::span(delta)));
  const std::vector<std::byte> batch = encoder.Seal(1, 0, kEndOfClock | kAwaitsClocks);
  const Result<DecodedBatch> decoded = DecodeBatch(batch, 1, f.layout(), model::MemoryIndex{0});
  ASSERT_FALSE(decoded.ok());
  EXPECT_EQ(decoded.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(decoded.status().message().find("no row request"), std::string::npos) << decoded.status().ToString();
}

// A request whose keys outgrow its ring slot (667 rows, 5336 bytes of keys,
// a 4096-byte slot) goes as a bitmap over their range (280 bytes) and is
// answered as keys are: every row, in order, from the master.
TEST(AwaitedRequest, ARequestThatOutgrowsItsSlotGoesAsABitmapAndIsAnsweredTheSame) {
  RingFixture f(/*slots=*/4, 1, {{"counts", model::ElementType::kInt32, 2000, 2}}, {}, /*reply_bytes=*/8192);
  ASSERT_TRUE(f.writer().Push(f.Batch({3, 1998}, 4, /*clock=*/0)).ok());
  std::vector<std::uint64_t> keys;
  for (std::int64_t r = 0; r < 2000; r += 3) keys.push_back(EntryKey(TableId{0}, RowId{r}));
  const std::uint64_t sequence = f.writer().next_sequence();
  const std::vector<std::byte> request = EncodeRowRequest(keys, sequence, std::nullopt, f.writer().slot_capacity());
  ASSERT_LE(request.size(), f.writer().slot_capacity());
  EXPECT_EQ(request.size(), sizeof(BatchHeader) + sizeof(RowBitmap) + 32 * 8);
  EXPECT_NE(ValueOrThrow(DecodeHeader(request)).flags & kRowBitmap, 0u);
  ASSERT_TRUE(f.writer().Push(request).ok());
  f.poller().PollOnce();
  ASSERT_EQ(Reply(f).sequence, sequence);
  EXPECT_EQ(Reply(f).rows, keys.size());
  EXPECT_EQ(ReplyRow(f, 1), 4) << "row 3, the second asked for";
  EXPECT_EQ(ReplyRow(f, 666), 4) << "row 1998, the last";
  EXPECT_EQ(ReplyRow(f, 2), 0);
  EXPECT_EQ(f.poller().counters().rows_gathered, 667);
  EXPECT_EQ(f.poller().counters().rejected_batches, 0);
}

}  // namespace
}  // namespace stalelearn::sync
