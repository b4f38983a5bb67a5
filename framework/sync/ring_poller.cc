#include "framework/sync/ring_poller.h"

#include <algorithm>
#include <cstring>

#include "framework/core/log.h"
#include "framework/sync/batch_codec.h"
#include "framework/sync/row_gather.h"

namespace stalelearn::sync {

RingPoller::RingPoller(const model::ModelLayout& layout, model::MemoryIndex me, RingGeometry ring_geometry,
                       std::vector<transport::MemoryRegion*> rings, transport::MemoryRegion& published,
                       PublishedGeometry published_geometry, ShardMerger& merger)
    : layout_(layout),
      me_(me),
      ring_geometry_(ring_geometry),
      published_(published),
      published_geometry_(published_geometry),
      merger_(merger),
      scratch_(ring_geometry.slot_bytes) {
  for (transport::MemoryRegion* r : rings) rings_.push_back(RingState{r});
  kept_requests_.resize(rings_.size());
}

bool RingPoller::ConsumeNext(model::ComputeIndex c) {
  if (!failure_.ok()) return false;
  RingState& ring = rings_[c.value];
  if (!Committed(ring)) return false;
  const std::uint64_t sequence = ring.next_sequence;
  const int slot = ring_geometry_.SlotOf(sequence);
  const std::byte* base = ring.region->data();

  // Copy first, validate the copy: what is checked is what is merged.
  const std::byte* slot_bytes = base + ring_geometry_.slot_offset(slot);
  // One header decode per batch: the header copied and checked here is the
  // one the batch is decoded, merged and ended with (only the payload is
  // copied after it).
  std::memcpy(scratch_.data(), slot_bytes, sizeof(BatchHeader));
  std::size_t length = ring_geometry_.slot_bytes;
  Result<BatchHeader> header = DecodeHeader(std::span(scratch_.data(), sizeof(BatchHeader)));
  if (header.ok()) length = std::min<std::size_t>(length, sizeof(BatchHeader) + header->payload_bytes);
  std::memcpy(scratch_.data() + sizeof(BatchHeader), slot_bytes + sizeof(BatchHeader), length - sizeof(BatchHeader));
  const std::span<const std::byte> batch(scratch_.data(), length);

  Result<DecodedBatch> decoded =
      header.ok() ? DecodeBatch(*header, batch, sequence, layout_, me_) : Result<DecodedBatch>(header.status());
  Status merged = decoded.status();
  if (decoded.ok() && merge_gate_) {
    if (Status gate = merge_gate_(decoded->header); !gate.ok()) {
      failure_ = std::move(gate);
      return false;
    }
  }
  const bool request = decoded.ok() && (decoded->header.flags & kRowRequest) != 0;
  if (request) {
    merged = AnswerOrKeep(c, *decoded);
  } else if (decoded.ok()) {
    if (tap_ != nullptr) tap_->BeforeMerge(c, *decoded);
    Result<metrics::WorkCounters> work = merger_.Merge(*decoded);
    merged = work.status();
    if (merger_.diverged()) {  // a NaN or infinity: fatal, not a bad batch
      failure_ = merged.WithContext(fmt::format("compute rank {}", c.value));
      return false;
    }
    if (work.ok()) counters_.element_updates += static_cast<std::int64_t>(work->flops);
    if (work.ok() && merge_observer_) merge_observer_(*work);
  }
  if (merged.ok() && request) {
    // Counted in rows_gathered when answered.
  } else if (merged.ok()) {
    ++counters_.batches_merged;
    if (changed_ != nullptr) {  // the rows the next snapshot must rewrite
      // A row only this rank changed, merged as master += delta, can be
      // skipped by its reader (changed_rows.h).
      const std::uint16_t writer = WriterOf(c);
      for (const DecodedEntry& e : decoded->entries) {
        changed_->Mark(e.table, e.local_row, merger_.adds_delta(e.table) ? writer : kManyWriters);
      }
    }
    counters_.bytes_merged += static_cast<std::int64_t>(length);
    counters_.rows_merged += static_cast<std::int64_t>(decoded->entries.size());
    if ((decoded->header.flags & kRowValues) != 0) {
      counters_.rows_written += static_cast<std::int64_t>(decoded->entries.size());
    }
  } else {
    ++counters_.rejected_batches;
    log::Warning("memory rank {}: rejected batch {} of compute rank {}: {}", me_.value, sequence, c.value,
                 merged.ToString());
  }
  // A rejected batch whose header is intact still ends its clock: waiting
  // ranks must not stall on data that will never come.
  if (header.ok() && header->sequence == sequence && (header->flags & kEndOfClock) != 0) {
    ring.merged_clock = std::max(ring.merged_clock, header->clock + 1);
  }
  ++ring.next_sequence;
  transport::StoreRelease64(published_.data() + published_geometry_.head_offset(c), sequence);
  return true;
}

int RingPoller::PollOnce() {
  int consumed = 0;
  // One merge window per pass: policies that combine a row's deltas across
  // batches (average) see every batch of the pass, and the master is whole
  // again before PollOnce returns (so a snapshot taken next is consistent).
  merger_.BeginWindow();
  if (tap_ != nullptr) tap_->WindowBegins();
  for (int c = 0; c < compute_ranks(); ++c) {
    if (rings_[c].dead) continue;
    // Bounded by the ring size: a busy ring cannot starve the others.
    for (int i = 0; i < ring_geometry_.slots && ConsumeNext(model::ComputeIndex{c}); ++i) ++consumed;
  }
  const metrics::WorkCounters window_work = merger_.EndWindow();
  if (tap_ != nullptr) tap_->WindowEnds();
  if (merge_observer_ && (window_work.flops > 0 || window_work.bytes > 0)) merge_observer_(window_work);
  // The master is whole again: kept requests whose clocks came in are answered.
  if (consumed > 0) AnswerKept();
  return consumed;
}

bool RingPoller::Committed(const RingState& ring) const {
  const int slot = ring_geometry_.SlotOf(ring.next_sequence);
  return transport::LoadAcquire64(ring.region->data() + ring_geometry_.commit_word_offset(slot)) == ring.next_sequence;
}

bool RingPoller::AnyCommitted() const {
  return std::ranges::any_of(rings_, [this](const RingState& ring) { return !ring.dead && Committed(ring); });
}

std::uint64_t RingPoller::slowest_merged_clock() const {
  std::uint64_t slowest = kDeadClock;
  for (int c = 0; c < compute_ranks(); ++c) slowest = std::min(slowest, merged_clock(model::ComputeIndex{c}));
  return slowest;
}

bool RingPoller::Finished(model::ComputeIndex c) const {
  const RingState& ring = rings_[c.value];
  if (ring.dead) return true;
  const std::uint64_t finish = transport::LoadAcquire64(ring.region->data() + ring_geometry_.finish_word_offset());
  return finish != 0 && ring.next_sequence >= finish;
}

bool RingPoller::AllFinished() const {
  for (int c = 0; c < compute_ranks(); ++c) {
    if (!Finished(model::ComputeIndex{c})) return false;
  }
  return true;
}

bool RingPoller::AllReleased() const {
  for (const RingState& ring : rings_) {
    if (ring.dead) continue;
    if (transport::LoadAcquire64(ring.region->data() + ring_geometry_.released_word_offset()) == 0) return false;
  }
  return true;
}

void RingPoller::MarkDead(model::ComputeIndex c) {
  rings_[c.value].dead = true;
  AnswerKept();  // nobody waits for its clocks any more
}

bool RingPoller::Holds(model::ComputeIndex c, const AwaitedClocks& awaits) const {
  if (awaits.rank >= 0) return merged_clock(model::ComputeIndex{awaits.rank}) >= awaits.before;
  for (int other = 0; other < compute_ranks(); ++other) {
    if (other != c.value && merged_clock(model::ComputeIndex{other}) < awaits.before) return false;
  }
  return true;
}

Status RingPoller::AnswerOrKeep(model::ComputeIndex c, const DecodedBatch& request) {
  std::optional<DecodedBatch>& kept = kept_requests_[c.value];
  kept.reset();  // one kept before is replaced: its reader moved on
  const std::optional<AwaitedClocks> awaits = AwaitedBy(request.header);
  if (awaits.has_value() && (awaits->rank < -1 || awaits->rank >= compute_ranks())) {
    return InvalidArgument(fmt::format("a row request awaits the clocks of compute rank {} of {}", awaits->rank,
                                       compute_ranks()));
  }
  if (!awaits.has_value() || Holds(c, *awaits)) return Answer(c, request);
  kept = request;
  for (DecodedEntry& e : kept->entries) e.delta = nullptr;  // keys alone: nothing to point at
  return Status::Ok();
}

void RingPoller::AnswerKept() {
  for (int c = 0; c < compute_ranks(); ++c) {
    std::optional<DecodedBatch>& kept = kept_requests_[static_cast<std::size_t>(c)];
    if (!kept.has_value()) continue;
    const model::ComputeIndex from{c};
    if (dead(from)) {  // nobody reads its reply
      kept.reset();
      continue;
    }
    if (!Holds(from, *AwaitedBy(kept->header))) continue;
    if (Status answered = Answer(from, *kept); !answered.ok()) {
      ++counters_.rejected_batches;
      log::Warning("memory rank {}: rejected row request {} of compute rank {}: {}", me_.value, kept->header.sequence,
                   c, answered.ToString());
    }
    kept.reset();
  }
}

Status RingPoller::Answer(model::ComputeIndex c, const DecodedBatch& request) {
  if (published_geometry_.reply_bytes == 0) {
    return InvalidArgument("a row request, but this run's memory ranks keep no reply areas");
  }
  metrics::WorkCounters work;  // the PIM reads the rows once
  work.bytes = static_cast<double>(RowRequestBytes(request, layout_));
  if (merge_observer_) merge_observer_(work);
  const std::span<std::byte> area(published_.data() + published_geometry_.reply_offset(c),
                                  published_geometry_.reply_bytes);
  STALELEARN_RETURN_IF_ERROR(WriteRowReply(request, merger_.master(), area, reply_clock_ ? reply_clock_() : 0));
  counters_.rows_gathered += static_cast<std::int64_t>(request.entries.size());
  return Status::Ok();
}

}  // namespace stalelearn::sync
