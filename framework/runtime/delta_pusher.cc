#include "framework/runtime/delta_pusher.h"

namespace stalelearn::runtime {

DeltaPusher::DeltaPusher(const model::ModelLayout& layout, std::vector<std::unique_ptr<sync::RingWriter>> writers,
                         ReplicaRefresher* refresher)
    : layout_(layout), writers_(std::move(writers)), refresher_(refresher) {
  for (std::size_t m = 0; m < writers_.size(); ++m) encoders_.emplace_back(layout.tables());
  sealed_count_.assign(writers_.size(), 0);
}

Status DeltaPusher::Complete() {
  for (auto& writer : writers_) STALELEARN_RETURN_IF_ERROR(writer->Complete());
  unflushed_.clear();
  return Status::Ok();
}

Result<std::chrono::nanoseconds> DeltaPusher::PushClock(model::Replica& replica, std::uint64_t clock) {
  STALELEARN_RETURN_IF_ERROR(Complete());  // the previous clock's puts, overlapped with this clock's compute
  sealed_.clear();
  std::fill(sealed_count_.begin(), sealed_count_.end(), 0);
  const auto seal = [&](int m, std::uint32_t flags) {
    const std::uint64_t sequence = writers_[m]->next_sequence() + sealed_count_[m]++;
    sealed_.push_back({m, encoders_[m].Seal(sequence, clock, flags)});
  };
  replica.DrainDeltas([&](model::TableId t, model::RowId r, std::span<const std::byte> delta) {
    const int m = layout_.partition(t).Owner(r).value;
    sync::BatchEncoder& encoder = encoders_[m];
    if (encoder.encoded_bytes() + encoder.EntryBytes(t) > writers_[m]->slot_capacity()) seal(m, 0);
    encoder.Add(t, r, delta);
  });
  for (int m = 0; m < static_cast<int>(writers_.size()); ++m) seal(m, sync::kEndOfClock);

  std::chrono::nanoseconds stalled{0};
  for (Sealed& batch : sealed_) {
    sync::RingWriter& writer = *writers_[batch.memory];
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
