// RingWriter on the timing backend: what a clock's push costs its compute
// rank in virtual time. A push issues the payload put, a fence and the
// commit-word put; Complete (the next clock's, before the batch's buffer is
// reused or dropped) waits until the puts left this rank, never for the
// memory rank's acknowledgement, which comes two latencies later. Only
// Finish waits for that (its flush), once a run.
#include <gtest/gtest.h>

#include <array>
#include <cstring>

#include "backends/local/register.h"
#include "backends/timing/register.h"
#include "backends/timing/timing_transport.h"
#include "framework/core/error.h"
#include "framework/sync/batch_codec.h"
#include "framework/sync/ring_layout.h"
#include "framework/sync/ring_writer.h"
#include "framework/transport/inprocess_bootstrap.h"

namespace stalelearn::backends::timing {
namespace {

using namespace std::chrono_literals;
using transport::Access;
using transport::Bootstrap;
using transport::Bytes;
using transport::Rank;

// Rank 1 writes into a ring of rank 0 (which only hosts the regions; nothing
// consumes, so the pushes stay within the ring's free slots).
void WithRingWriter(const std::function<void(TimingTransport&, sync::RingWriter&, const model::ModelLayout&)>& check) {
  transport::BackendRegistry registry;
  ThrowIfError(local::RegisterBackend(registry));
  ThrowIfError(RegisterBackend(registry));
  const model::ModelLayout layout({{"counts", model::ElementType::kInt32, 4096, 8}}, 1, model::PartitionScheme::kRange);
  sync::RingGeometry ring_geometry;
  ring_geometry.slots = 4;
  ring_geometry.slot_bytes = 256 << 10;
  sync::PublishedGeometry published_geometry;
  published_geometry.compute_ranks = 1;
  published_geometry.shard_bytes = layout.ShardBytes(model::MemoryIndex{0});
  transport::RunRanks(2, [&](Bootstrap& bootstrap) {
    const std::map<std::string, std::string> options = {
        {"link", "pcie4-x16"}, {"memory", "hmc2"}, {"compute", "gpu-gtx580"}};
    auto created = ValueOrThrow(registry.Create("timing", {bootstrap, options, registry}));
    auto* timing = static_cast<TimingTransport*>(created.get());
    auto ring = ValueOrThrow(timing->Register(ring_geometry.region_bytes(), Access::kAll));
    auto published = ValueOrThrow(timing->Register(published_geometry.region_bytes(), Access::kRemoteReadOnly));
    const std::vector<Bytes> ring_keys = ValueOrThrow(bootstrap.AllGather("ring", ring->key()));
    const std::vector<Bytes> published_keys = ValueOrThrow(bootstrap.AllGather("published", published->key()));
    if (bootstrap.rank().value == 1) {
      auto remote_published = ValueOrThrow(timing->Import(Rank{0}, published_keys[0]));
      sync::WaitOptions wait;
      wait.timeout = 5s;
      sync::RingWriter writer(*timing, ValueOrThrow(timing->Import(Rank{0}, ring_keys[0])), *remote_published,
                              model::ComputeIndex{0}, ring_geometry, published_geometry, wait);
      check(*timing, writer, layout);
    }
    ThrowIfError(bootstrap.Barrier());
  });
}

// A batch changing `rows` rows (about 40 bytes each), sealed for `writer`.
std::vector<std::byte> Batch(const model::ModelLayout& layout, const sync::RingWriter& writer, int rows) {
  sync::BatchEncoder encoder(layout.tables());
  const std::array<std::int32_t, 8> delta{1, 2, 3, 4, 5, 6, 7, 8};
  for (int r = 0; r < rows; ++r) {
    encoder.Add(model::TableId{0}, model::RowId{r}, std::as_bytes(std::span(delta)));
  }
  return encoder.Seal(writer.next_sequence(), 0, sync::kEndOfClock);
}

TEST(RingWriterTiming, AClocksPushCostsItsIssueNotTheMemoryRanksAcknowledgement) {
  WithRingWriter([](TimingTransport& t, sync::RingWriter& writer, const model::ModelLayout& layout) {
    const LinkModel& link = t.model().link;
    const std::vector<std::byte> batch = Batch(layout, writer, 2000);  // ~80 KB: 2.5 us on the wire
    const transport::VirtualTime start = t.Now();
    const transport::VirtualTime visible = t.PutVisibleAt(batch.size(), writer.peer());
    ValueOrThrow(writer.Push(batch));
    ThrowIfError(writer.Complete());
    // The payload and the commit word left this rank: two issues and their
    // bytes at most (the second issue overlaps the payload's bytes).
    const transport::VirtualDuration issued =
        2 * link.overhead() + link.Serialization(batch.size()) + link.Serialization(sizeof(std::uint64_t));
    EXPECT_LE(t.Now() - start, issued);
    EXPECT_GE(t.Now() - start, link.overhead() + link.Serialization(batch.size()));
    // The acknowledgement of the payload alone comes a latency after the
    // memory rank saw it: Complete did not wait for that.
    EXPECT_LT(t.Now(), visible + link.latency());

    // A second clock's push, as a run pushes: again only its issue, and,
    // the ring now half full by what the writer knows, the issue of a read
    // of the head that it does not wait for.
    const std::vector<std::byte> next = Batch(layout, writer, 10);
    const transport::VirtualTime second = t.Now();
    ValueOrThrow(writer.Push(next));
    ThrowIfError(writer.Complete());
    EXPECT_LE(t.Now() - second,
              3 * link.overhead() + link.Serialization(next.size()) + link.Serialization(sizeof(std::uint64_t)));
    EXPECT_LT(t.Now() - second, link.RoundTrip(sizeof(std::uint64_t))) << "the push waited for the head's read";

    // Finish flushes: the rank learns that every put arrived.
    ThrowIfError(writer.Finish());
    EXPECT_GE(t.Now(), visible + link.latency());
  });
}

}  // namespace
}  // namespace stalelearn::backends::timing
