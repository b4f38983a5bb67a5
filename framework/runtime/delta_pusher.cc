#include "framework/runtime/delta_pusher.h"

#include <algorithm>
#include <cstdint>

namespace stalelearn::runtime {

DeltaPusher::DeltaPusher(const model::ModelLayout& layout, std::vector<std::unique_ptr<sync::RingWriter>> writers,
                         ReplicaRefresher* refresher, const sync::ClockTable* heads)
    : layout_(layout), writers_(std::move(writers)), heads_(heads), refresher_(refresher) {
  for (std::size_t m = 0; m < writers_.size(); ++m) encoders_.emplace_back(layout.tables());
  sealed_count_.assign(writers_.size(), 0);
}

Status DeltaPusher::Complete() {
  for (auto& writer : writers_) STALELEARN_RETURN_IF_ERROR(writer->Complete());
  for (auto& bytes : unflushed_) spare_.push_back(std::move(bytes));
  unflushed_.clear();
  return Status::Ok();
}

void DeltaPusher::RecycleBuffers() {
  if (refresher_ != nullptr) refresher_->TakeDropped(spare_);
  for (sync::BatchEncoder& encoder : encoders_) GiveSpare(encoder);
  // Keep what the next clocks' batches will need (one per memory rank per
  // clock, more when a clock fills several slots), bounded by what the
  // refresher keeps: no more memory than the pending batches held.
  if (spare_.size() > ReplicaRefresher::kKeptDropped) spare_.resize(ReplicaRefresher::kKeptDropped);
}

void DeltaPusher::Seal(int m, std::uint32_t flags) {
  const std::uint64_t sequence = writers_[m]->next_sequence() + sealed_count_[m]++;
  sealed_.push_back({m, encoders_[m].Seal(sequence, clock_, flags | row_flags_, stale_epochs_x1024_)});
  GiveSpare(encoders_[m]);  // the next batch reuses a sent one
}

void DeltaPusher::GiveSpare(sync::BatchEncoder& encoder) {
  // Only to an encoder that will keep it: a buffer it would ignore is freed,
  // and the next clock's batch grows (zero-filled) from nothing.
  if (spare_.empty() || !encoder.Wants(spare_.back().capacity())) return;
  encoder.Recycle(std::move(spare_.back()));
  spare_.pop_back();
}

Result<std::chrono::nanoseconds> DeltaPusher::PushClock(model::Replica& replica, std::uint64_t clock,
                                                        double staleness_epochs, std::span<const std::uint8_t> keep,
                                                        bool only_with_deltas, bool values) {
  STALELEARN_RETURN_IF_ERROR(Complete());  // the previous clock's puts, overlapped with this clock's compute
  RecycleBuffers();
  sealed_.clear();
  std::fill(sealed_count_.begin(), sealed_count_.end(), 0);
  clock_ = clock;
  stale_epochs_x1024_ = static_cast<std::uint32_t>(std::clamp(staleness_epochs * 1024.0, 0.0, 4294967295.0));
  row_flags_ = values ? sync::kRowValues : 0;
  replica.DrainDeltasInto(*this, keep, values);
  for (int m = 0; m < static_cast<int>(writers_.size()); ++m) {
    if (only_with_deltas && encoders_[m].entry_count() == 0 && sealed_count_[m] == 0) continue;
    Seal(m, sync::kEndOfClock);
  }

  std::chrono::nanoseconds stalled{0};
  for (Sealed& batch : sealed_) {
    sync::RingWriter& writer = *writers_[batch.memory];
    if (heads_ != nullptr) writer.NoteHead(heads_->head(model::MemoryIndex{batch.memory}, writer.me()));
    const std::uint64_t sequence = writer.next_sequence();
    STALELEARN_ASSIGN_OR_RETURN(std::chrono::nanoseconds waited, writer.Push(batch.bytes));
    stalled += waited;
    if (refresher_ != nullptr) {
      refresher_->AddPending(model::MemoryIndex{batch.memory}, sequence, std::move(batch.bytes));
    } else {
      unflushed_.push_back(std::move(batch.bytes));  // the put reads it until Complete
    }
  }
  sealed_.clear();
  return stalled;
}

Status DeltaPusher::Finish() {
  STALELEARN_RETURN_IF_ERROR(Complete());
  for (auto& writer : writers_) STALELEARN_RETURN_IF_ERROR(writer->Finish());
  return Status::Ok();
}

Status DeltaPusher::Release() {
  for (auto& writer : writers_) STALELEARN_RETURN_IF_ERROR(writer->Release());
  return Status::Ok();
}

}  // namespace stalelearn::runtime
