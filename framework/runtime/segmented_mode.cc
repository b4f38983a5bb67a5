#include "framework/runtime/segmented_mode.h"

#include <fmt/format.h>

#include "framework/runtime/stop_agreement.h"

namespace stalelearn::runtime {

SegmentedConsistency::SegmentedConsistency(RunLifecycle& lifecycle, model::ComputeIndex me,
                                           const DataPlaneGeometry& geometry)
    : lifecycle_(lifecycle),
      env_(lifecycle.env()),
      me_(me),
      geometry_(geometry),
      checkpointer_(lifecycle.checkpointer()) {}

Result<std::unique_ptr<SegmentedConsistency>> SegmentedConsistency::Make(RunLifecycle& lifecycle,
                                                                         model::ComputeIndex me,
                                                                         ComputeEndpoints endpoints,
                                                                         const DataPlaneGeometry& geometry) {
  std::unique_ptr<SegmentedConsistency> mode(new SegmentedConsistency(lifecycle, me, geometry));
  STALELEARN_RETURN_IF_ERROR(mode->StartSegment(std::move(endpoints)));
  return mode;
}

Status SegmentedConsistency::StartSegment(ComputeEndpoints endpoints) {
  endpoints_ = std::move(endpoints);
  ModeContext context{env_, me_, &endpoints_, &geometry_};
  STALELEARN_ASSIGN_OR_RETURN(inner_, lifecycle_.mode().create(context));
  return Status::Ok();
}

Status SegmentedConsistency::BeforeClock(std::int64_t clock, std::span<const std::int64_t> samples,
                                         ClockRecord& record) {
  checkpointer_.MaybeKill(clock);
  samples_done_ += static_cast<std::int64_t>(samples.size());
  return inner_->BeforeClock(clock, samples, record);
}

Status SegmentedConsistency::AfterClock(std::int64_t clock, ClockRecord& record) {
  STALELEARN_RETURN_IF_ERROR(inner_->AfterClock(clock, record));
  checkpointer_.NoteProgress(clock + 1, samples_done_);
  if (!checkpointer_.IsBoundary(clock + 1)) return Status::Ok();
  return CrossBoundary(clock + 1);
}

Status SegmentedConsistency::Finish(std::uint64_t total_clocks) {
  if (ended_) return Status::Ok();  // a stop at a boundary: CrossBoundary finished the segment
  return inner_->Finish(total_clocks);
}

Status SegmentedConsistency::CrossBoundary(std::int64_t clock) {
  // Like the end of a run: the memory ranks merge every clock < `clock` and
  // stop polling once every compute rank has released them.
  STALELEARN_RETURN_IF_ERROR(inner_->Finish(static_cast<std::uint64_t>(clock)));
  if (env_.stop != nullptr) {
    STALELEARN_RETURN_IF_ERROR(env_.stop->JoinAtEnd(clock));
    STALELEARN_ASSIGN_OR_RETURN(const bool stops, env_.stop->StopsBefore(me_.value, clock));
    if (stops) {
      // The run stops here: the clock loop reads the final model and
      // releases this segment; compute_role.cc writes the checkpoint.
      ended_ = true;
      return Status::Ok();
    }
  }
  STALELEARN_RETURN_IF_ERROR(inner_->Release());
  STALELEARN_RETURN_IF_ERROR(checkpointer_.WriteComputeState(clock, me_, app_state_, samples_done_));
  STALELEARN_RETURN_IF_ERROR(lifecycle_.LeaveForBoundary());
  inner_.reset();  // its endpoints go with it: the memory ranks register new regions
  STALELEARN_ASSIGN_OR_RETURN(ComputeEndpoints endpoints, lifecycle_.ConnectCompute());
  STALELEARN_RETURN_IF_ERROR(lifecycle_.StartSegment(/*first=*/false));
  return StartSegment(std::move(endpoints));
}

}  // namespace stalelearn::runtime
