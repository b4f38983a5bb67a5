// The reader's clock after a consistent read (timing backend, virtual
// time): data cannot be used before it can have arrived. The live rows of a
// read hold the generation published before it began, so their bytes count
// from that publication; a generation published while the read was under
// way reaches the reader only through the records laid over them, whose
// bytes count from its publication. Counting the rows from the later
// publication too charged a read twice whenever a publication overtook it.
#include <gtest/gtest.h>

#include <functional>
#include <vector>

#include "framework/sync/snapshot.h"
#include "framework/transport/forwarding_transport.h"
#include "framework/transport/rank_time.h"
#include "tests/unit/sync/picked_test_helpers.h"
#include "tests/unit/sync/ring_fixture.h"

namespace stalelearn::sync {
namespace {

using namespace picked_test;
using transport::VirtualTime;
using transport::VirtualTimeFromPs;

// A clock that only moves by AdvanceTo; data published at p, fetched with a
// get of B bytes, arrives at p + B picoseconds. The rest as in real time.
class ClockOnly final : public transport::RealTime {
 public:
  VirtualTime Now() const override { return now_; }
  VirtualTime GetVisibleAt(VirtualTime published_at, std::uint64_t bytes) const override {
    return published_at + transport::VirtualDuration(static_cast<std::int64_t>(bytes));
  }
  Status AdvanceTo(VirtualTime t) override {
    now_ = std::max(now_, t);
    return Status::Ok();
  }

 private:
  VirtualTime now_{};
};

// Runs `publish` in the middle of the first get of region bytes [begin, end)
// (the live shard): half the rows are read before it, half after.
class PublishesMidRead final : public transport::ForwardingTransport {
 public:
  PublishesMidRead(transport::Transport& inner, std::size_t begin, std::size_t end, std::function<void()> publish)
      : ForwardingTransport(inner), begin_(begin), end_(end), publish_(std::move(publish)) {}
  Result<transport::RequestPtr> Get(void* dst, std::size_t bytes, const transport::RemoteRegion& src,
                                    std::uint64_t offset) override {
    if (fired_ || offset < begin_ || offset >= end_ || bytes < 2) return ForwardingTransport::Get(dst, bytes, src, offset);
    fired_ = true;
    const std::size_t half = bytes / 2;
    STALELEARN_ASSIGN_OR_RETURN(transport::RequestPtr first, ForwardingTransport::Get(dst, half, src, offset));
    STALELEARN_RETURN_IF_ERROR(first->Wait(std::chrono::seconds(10)));
    publish_();
    return ForwardingTransport::Get(static_cast<std::byte*>(dst) + half, bytes - half, src, offset + half);
  }
  bool fired() const { return fired_; }

 private:
  std::size_t begin_, end_;
  std::function<void()> publish_;
  bool fired_ = false;
};

constexpr std::int64_t kBeforePs = 1'000;        // generation 2, before the read
constexpr std::int64_t kDuringPs = 50'000'000;   // generation 3, while the rows are read

void CheckAReadAPublicationOvertookPaysForItsRowsOnce(bool together) {
  PublishedWideTable t;
  // Generation 2 (the one the read begins at) changes none of the rows
  // read, so the patch is generation 3's record of row 4 alone.
  SetRows(t.f, t.changed, {10}, 2);
  t.publisher.Publish(t.f.merger().master(), t.f.poller(), t.changed, kBeforePs);
  t.changed.Clear();
  PublishesMidRead mid(t.f.transport(), t.g.data_offset(), t.g.log_offset(), [&] {
    SetRows(t.f, t.changed, {4}, 3);  // row 4 only: one record to lay over the rows
    t.publisher.Publish(t.f.merger().master(), t.f.poller(), t.changed, kDuringPs);
    t.changed.Clear();
  });
  ClockOnly clock;
  WaitOptions wait;
  wait.time = &clock;
  SnapshotReader reader(mid, t.f.remote_published(), t.g, wait);
  std::vector<std::byte> rows(3 * kRowBytes);
  const std::vector<SnapshotReader::RowRead> reads = {{3 * kRowBytes, rows.data(), 2 * kRowBytes},
                                                      {300 * kRowBytes, rows.data() + 2 * kRowBytes, kRowBytes}};
  if (together) {
    SnapshotReader* readers[] = {&reader};
    const std::span<const SnapshotReader::RowRead> each[] = {reads};
    ASSERT_TRUE(SnapshotReader::ReadRowsOfEach(readers, each).ok());
  } else {
    ASSERT_TRUE(reader.ReadRows(reads).ok());
  }
  ASSERT_TRUE(mid.fired());
  ASSERT_EQ(reader.last_meta().generation, 3u) << "the read did not take the generation published during it";
  std::int32_t row4 = 0;
  std::memcpy(&row4, rows.data() + kRowBytes, sizeof row4);
  EXPECT_EQ(row4, 3) << "row 4 is not generation 3's";
  // The record of row 4 arrives after generation 3's publication; the
  // three rows (768 bytes) did not have to wait for it.
  const std::int64_t now = clock.Now().time_since_epoch().count();
  const auto body = static_cast<std::int64_t>(3 * kRowBytes);
  EXPECT_GE(now, kDuringPs + static_cast<std::int64_t>(kRowBytes)) << "the patch counted before its publication";
  EXPECT_LT(now, kDuringPs + body) << "the rows were counted after the publication that overtook the read";
}

TEST(SnapshotReadTime, AReadAPublicationOvertookPaysForItsRowsOnce) {
  CheckAReadAPublicationOvertookPaysForItsRowsOnce(/*together=*/false);
}

TEST(SnapshotReadTime, TheSameForReadsTogether) { CheckAReadAPublicationOvertookPaysForItsRowsOnce(/*together=*/true); }

// A read no publication overtook: the rows count from the generation read
// (and the records of it that overlap them: they may have been in writing).
TEST(SnapshotReadTime, ARowReadCountsItsBytesFromItsGenerationsPublication) {
  PublishedWideTable t;
  SetRows(t.f, t.changed, {3}, 2);
  t.publisher.Publish(t.f.merger().master(), t.f.poller(), t.changed, kDuringPs);
  ClockOnly clock;
  WaitOptions wait;
  wait.time = &clock;
  SnapshotReader reader(t.f.transport(), t.f.remote_published(), t.g, wait);
  std::vector<std::byte> rows(kRowBytes);
  const std::vector<SnapshotReader::RowRead> reads = {{3 * kRowBytes, rows.data(), kRowBytes}};
  ASSERT_TRUE(reader.ReadRows(reads).ok());
  EXPECT_GE(clock.Now().time_since_epoch().count(), kDuringPs + static_cast<std::int64_t>(kRowBytes));
}

}  // namespace
}  // namespace stalelearn::sync
