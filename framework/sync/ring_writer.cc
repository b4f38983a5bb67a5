#include "framework/sync/ring_writer.h"

#include <fmt/format.h>

#include "framework/sync/batch_codec.h"
#include "framework/sync/wait_until.h"

namespace stalelearn::sync {

RingWriter::RingWriter(transport::Transport& transport, std::unique_ptr<transport::RemoteRegion> ring,
                       const transport::RemoteRegion& published, model::ComputeIndex me,
                       RingGeometry ring_geometry, PublishedGeometry published_geometry, WaitOptions wait)
    : transport_(transport),
      ring_(std::move(ring)),
      published_(published),
      me_(me),
      ring_geometry_(ring_geometry),
      published_geometry_(published_geometry),
      wait_(wait),
      commit_values_(static_cast<std::size_t>(ring_geometry.slots), 0),
      stamped_(static_cast<std::size_t>(ring_geometry.slots)) {}

Status RingWriter::TakeHeadAhead(bool wait) {
  if (head_ahead_ == nullptr) return Status::Ok();
  if (wait) {
    STALELEARN_RETURN_IF_ERROR(
        head_ahead_->Wait(wait_.timeout).WithContext(fmt::format("head of rank {}", peer().value)));
  } else if (!head_ahead_->Test()) {
    return Status::Ok();
  }
  head_ahead_.reset();
  NoteHead(head_ahead_value_);
  return Status::Ok();
}

Status RingWriter::WaitForFreeSlot(std::uint64_t sequence) {
  const auto slots = static_cast<std::uint64_t>(ring_geometry_.slots);
  if (sequence <= known_head_ + slots) return Status::Ok();
  // The read begun ahead first: issued earlier, it answers sooner than a new one.
  STALELEARN_RETURN_IF_ERROR(TakeHeadAhead(/*wait=*/true));
  if (sequence <= known_head_ + slots) return Status::Ok();
  return WaitUntil(
             wait_, transport_,
             [&]() -> Result<bool> {
               STALELEARN_RETURN_IF_ERROR(transport::GetBlocking(transport_, &head_read_, sizeof head_read_,
                                                                 published_, published_geometry_.head_offset(me_),
                                                                 wait_.timeout));
               known_head_ = head_read_;
               return sequence <= known_head_ + slots;
             },
             [&] {
               return fmt::format("ring space to rank {}: batch {} needs the memory rank to consume batch {} "
                                  "(head {})",
                                  peer().value, sequence, sequence - slots, known_head_);
             })
      .status();
}

Result<std::chrono::nanoseconds> RingWriter::Push(std::span<const std::byte> batch) {
  const std::uint64_t sequence = next_sequence_;
  if (batch.size() > ring_geometry_.slot_bytes) {
    return InvalidArgument(fmt::format("batch of {} bytes exceeds the slot size {}", batch.size(),
                                       ring_geometry_.slot_bytes));
  }
  const auto start = std::chrono::steady_clock::now();
  STALELEARN_RETURN_IF_ERROR(WaitForFreeSlot(sequence));
  const auto waited = std::chrono::steady_clock::now() - start;

  const int slot = ring_geometry_.SlotOf(sequence);
  // The stamp is due right before the put. A sealed batch already reads 0,
  // real time's stamp: only a later one needs the stamped copy.
  if (const transport::VirtualTime visible_at = wait_.time->PutVisibleAt(batch.size(), peer());
      visible_at != transport::VirtualTime{}) {
    batch = Stamped(slot, batch, visible_at);
  }
  STALELEARN_ASSIGN_OR_RETURN(transport::RequestPtr payload,
                              transport_.Put(batch.data(), batch.size(), *ring_, ring_geometry_.slot_offset(slot)));
  STALELEARN_RETURN_IF_ERROR(transport_.Fence(peer()));  // payload before commit word (I3)
  std::uint64_t& commit_value = commit_values_[static_cast<std::size_t>(slot)];
  commit_value = sequence;
  STALELEARN_ASSIGN_OR_RETURN(
      transport::RequestPtr commit,
      transport_.Put(&commit_value, sizeof commit_value, *ring_, ring_geometry_.commit_word_offset(slot)));
  // No wait here (Complete): the sources stay alive until then, and this
  // slot's sources are reused only once its batch was consumed.
  in_flight_.push_back(std::move(payload));
  in_flight_.push_back(std::move(commit));
  unflushed_ = true;
  ++next_sequence_;
  // Half the ring in use by the head last known: the head is read ahead,
  // once per half ring of pushes at most.
  STALELEARN_RETURN_IF_ERROR(TakeHeadAhead(/*wait=*/false));
  const std::uint64_t pushed = next_sequence_ - 1;
  const auto slots = static_cast<std::uint64_t>(ring_geometry_.slots);
  if (head_ahead_ == nullptr && 2 * (pushed - known_head_) >= slots && 2 * (pushed - head_ahead_at_) >= slots) {
    STALELEARN_ASSIGN_OR_RETURN(head_ahead_, transport_.Get(&head_ahead_value_, sizeof head_ahead_value_, published_,
                                                             published_geometry_.head_offset(me_)));
    head_ahead_at_ = pushed;
  }
  return std::chrono::duration_cast<std::chrono::nanoseconds>(waited);
}

std::span<const std::byte> RingWriter::Stamped(int slot, std::span<const std::byte> batch,
                                               transport::VirtualTime visible_at) {
  std::vector<std::byte>& stamped = stamped_[static_cast<std::size_t>(slot)];
  stamped.assign(batch.begin(), batch.end());
  StampVisibleAt(stamped, visible_at.time_since_epoch().count());
  return stamped;
}

Status RingWriter::Complete() {
  for (transport::RequestPtr& request : in_flight_) {
    STALELEARN_RETURN_IF_ERROR(request->Wait(wait_.timeout).WithContext(fmt::format("put to rank {}", peer().value)));
  }
  in_flight_.clear();
  return Status::Ok();
}

Status RingWriter::Finish() {
  STALELEARN_RETURN_IF_ERROR(Complete());
  STALELEARN_RETURN_IF_ERROR(TakeHeadAhead(/*wait=*/true));  // its get writes into this object
  if (unflushed_) STALELEARN_RETURN_IF_ERROR(transport_.Flush(peer(), wait_.timeout));
  unflushed_ = false;
  finish_value_ = next_sequence_;  // batches sent + 1
  STALELEARN_RETURN_IF_ERROR(transport::PutBlocking(transport_, &finish_value_, sizeof finish_value_, *ring_,
                                                    ring_geometry_.finish_word_offset(), wait_.timeout));
  return transport_.Flush(peer(), wait_.timeout);
}

Status RingWriter::Release() {
  STALELEARN_RETURN_IF_ERROR(TakeHeadAhead(/*wait=*/true));
  return transport::PutBlocking(transport_, &released_value_, sizeof released_value_, *ring_,
                                ring_geometry_.released_word_offset(), wait_.timeout);
}

}  // namespace stalelearn::sync
