#include "framework/sync/snapshot.h"

#include <fmt/format.h>

#include <atomic>
#include <cstring>

#include "framework/core/planted_defect.h"
#include "framework/sync/wait_until.h"

namespace stalelearn::sync {

SnapshotPublisher::SnapshotPublisher(transport::MemoryRegion& published, PublishedGeometry geometry,
                                     const model::ModelLayout& layout)
    : published_(published), geometry_(geometry), layout_(layout) {}

void SnapshotPublisher::Publish(const model::TableSet& master, const RingPoller& poller,
                                std::int64_t published_at_ps) {
  const std::uint64_t g = ++generation_;
  const int b = geometry_.BufferOf(g);
  std::byte* base = published_.data();
  transport::StoreRelease64(base + geometry_.version_offset(b), 2 * g - 1);
  // Seqlock writer: the odd version is ordered before the data writes.
  std::atomic_thread_fence(std::memory_order_release);
  transport::StoreRelease64(base + geometry_.published_at_offset(b), static_cast<std::uint64_t>(published_at_ps));
  for (int c = 0; c < geometry_.compute_ranks; ++c) {
    const model::ComputeIndex ci{c};
    transport::StoreRelease64(base + geometry_.buffer_merged_clock_offset(b, ci), poller.merged_clock(ci));
    transport::StoreRelease64(base + geometry_.buffer_included_offset(b, ci), poller.consumed(ci));
  }
  std::byte* data = base + geometry_.buffer_data_offset(b);
  if (DefectPlanted(PlantedDefect::kSnapshotHalfWritten)) {
    // Planted defect (self-tests only): the second half keeps what the buffer held before.
    serialized_.resize(geometry_.shard_bytes);
    layout_.SerializeShard(master, serialized_.data());
    std::memcpy(data, serialized_.data(), geometry_.shard_bytes / 2);
  } else {
    layout_.SerializeShard(master, data);
  }
  transport::StoreRelease64(base + geometry_.version_offset(b), 2 * g);
  // Latest generation first, then the control copies of its clocks: a reader
  // that saw a clock in the control block then finds a snapshot holding it.
  transport::StoreRelease64(base + geometry_.latest_generation_offset(), g);
  // The stamp before the clocks: a reader that sees the new clocks sees it.
  transport::StoreRelease64(base + geometry_.control_published_at_offset(),
                            static_cast<std::uint64_t>(published_at_ps));
  for (int c = 0; c < geometry_.compute_ranks; ++c) {
    const model::ComputeIndex ci{c};
    transport::StoreRelease64(base + geometry_.merged_clock_offset(ci), poller.merged_clock(ci));
    transport::StoreRelease64(base + geometry_.included_offset(ci), poller.consumed(ci));
  }
}

SnapshotReader::SnapshotReader(transport::Transport& transport, const transport::RemoteRegion& published,
                               PublishedGeometry geometry, WaitOptions wait)
    : transport_(transport), published_(published), geometry_(geometry), wait_(wait) {
  header_.resize(geometry_.buffer_header_bytes());
}

Result<std::uint64_t> SnapshotReader::ReadWord(std::size_t offset) {
  std::uint64_t word = 0;
  STALELEARN_RETURN_IF_ERROR(transport::GetBlocking(transport_, &word, sizeof word, published_, offset, wait_.timeout));
  return word;
}

template <class Body>
Result<std::optional<std::uint64_t>> SnapshotReader::ReadConsistent(std::uint64_t after, std::uint64_t bytes,
                                                                    Body&& body) {
  std::optional<std::uint64_t> read;
  STALELEARN_RETURN_IF_ERROR(
      WaitUntil(
          wait_, transport_,
          [&]() -> Result<bool> {
            STALELEARN_ASSIGN_OR_RETURN(std::uint64_t g, ReadWord(geometry_.latest_generation_offset()));
            if (g <= after) return true;  // nothing newer: read stays empty
            const int b = geometry_.BufferOf(g);
            STALELEARN_ASSIGN_OR_RETURN(std::uint64_t before, ReadWord(geometry_.version_offset(b)));
            if (before != 2 * g) return false;  // buffer b is being rewritten with a newer generation
            STALELEARN_RETURN_IF_ERROR(body(g, b));
            std::atomic_thread_fence(std::memory_order_acquire);  // seqlock reader: data before the re-check
            // One get re-checks the version and fetches the publication stamp.
            STALELEARN_RETURN_IF_ERROR(transport::GetBlocking(transport_, version_and_stamp_,
                                                              sizeof version_and_stamp_, published_,
                                                              geometry_.version_offset(b), wait_.timeout));
            if (version_and_stamp_[0] != before) return false;  // torn: read the newest again
            if (wait_.sim != nullptr) {
              const auto published_at =
                  transport::VirtualTimeFromPs(static_cast<std::int64_t>(version_and_stamp_[1]));
              STALELEARN_RETURN_IF_ERROR(wait_.sim->AdvanceTo(wait_.sim->GetVisibleAt(published_at, bytes)));
            }
            read = g;
            return true;
          },
          [&] { return fmt::format("a consistent snapshot from rank {}", published_.owner().value); })
          .status());
  return read;
}

Result<std::optional<SnapshotMeta>> SnapshotReader::ReadNewer(std::uint64_t after, std::span<std::byte> shard_bytes) {
  const auto body = [&](std::uint64_t, int b) -> Status {
    STALELEARN_RETURN_IF_ERROR(transport::GetBlocking(transport_, header_.data(), header_.size(), published_,
                                                      geometry_.buffer_offset(b), wait_.timeout));
    if (shard_bytes.empty()) return Status::Ok();
    return transport::GetBlocking(transport_, shard_bytes.data(), shard_bytes.size(), published_,
                                  geometry_.buffer_data_offset(b), wait_.timeout);
  };
  STALELEARN_ASSIGN_OR_RETURN(std::optional<std::uint64_t> g,
                              ReadConsistent(after, header_.size() + shard_bytes.size(), body));
  if (!g) return std::optional<SnapshotMeta>();
  SnapshotMeta meta;
  meta.generation = *g;
  const auto n = static_cast<std::size_t>(geometry_.compute_ranks);
  meta.merged_clock.resize(n);
  meta.included.resize(n);
  // Offsets inside the buffer header (the same for every buffer).
  const std::size_t clocks_at = geometry_.buffer_merged_clock_offset(0, model::ComputeIndex{0}) -
                                geometry_.buffer_offset(0);
  std::memcpy(meta.merged_clock.data(), header_.data() + clocks_at, 8 * n);
  std::memcpy(meta.included.data(), header_.data() + clocks_at + 8 * n, 8 * n);
  return std::optional<SnapshotMeta>(std::move(meta));
}

Result<std::uint64_t> SnapshotReader::ReadRows(std::span<const RowRead> rows) {
  const auto body = [&](std::uint64_t, int b) -> Status {
    requests_.clear();
    const std::size_t data = geometry_.buffer_data_offset(b);
    for (const RowRead& r : rows) {
      STALELEARN_ASSIGN_OR_RETURN(transport::RequestPtr request,
                                  transport_.Get(r.destination, r.bytes, published_, data + r.offset));
      requests_.push_back(std::move(request));
    }
    for (transport::RequestPtr& request : requests_) STALELEARN_RETURN_IF_ERROR(request->Wait(wait_.timeout));
    requests_.clear();
    return Status::Ok();
  };
  std::uint64_t bytes = 0;
  for (const RowRead& r : rows) bytes += r.bytes;
  STALELEARN_ASSIGN_OR_RETURN(std::optional<std::uint64_t> g, ReadConsistent(0, bytes, body));
  if (!g) return FailedPrecondition(fmt::format("rank {} has published no snapshot yet", published_.owner().value));
  return *g;
}

}  // namespace stalelearn::sync
