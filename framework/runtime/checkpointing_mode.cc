#include "framework/runtime/checkpointing_mode.h"

namespace stalelearn::runtime {

CheckpointingMode::CheckpointingMode(RunLifecycle& lifecycle, model::ComputeIndex me,
                                     std::unique_ptr<ConsistencyMode> inner)
    : checkpointer_(lifecycle.checkpointer()), me_(me), inner_(std::move(inner)) {}

Status CheckpointingMode::BeforeClock(std::int64_t clock, std::span<const std::int64_t> samples,
                                      ClockRecord& record) {
  checkpointer_.MaybeKill(clock);
  samples_done_ += static_cast<std::int64_t>(samples.size());
  return inner_->BeforeClock(clock, samples, record);
}

Status CheckpointingMode::AfterClock(std::int64_t clock, ClockRecord& record) {
  STALELEARN_RETURN_IF_ERROR(inner_->AfterClock(clock, record));
  checkpointer_.NoteProgress(clock + 1, samples_done_);
  if (!checkpointer_.IsCheckpointClock(clock + 1)) return Status::Ok();
  // This rank's part of the cut at clock + 1: its state after this clock,
  // whose deltas are pushed (the memory ranks' parts hold them merged).
  STALELEARN_RETURN_IF_ERROR(inner_->PushHeld());
  return checkpointer_.WriteComputeState(clock + 1, me_, app_state_, samples_done_, /*cut=*/true);
}

}  // namespace stalelearn::runtime
