// A compute rank's consistency mode in a checkpointed or resumed run
// (checkpointer.h): forwards everything to the configured mode of the current
// segment and, after the last clock of a segment, ends it like a run's end
// (Finish, Release: the memory ranks merge everything and stop), writes the
// rank's local state into the checkpoint, sets the data plane up again with
// the memory ranks (the same collectives as at start) and makes a fresh mode
// for the next segment. The clock loop does not notice.
//
// A stop agreed at a boundary (stop_agreement.h) ends the run there: the
// segment is finished but not released, and the clock loop's final read and
// Release follow as at the run's end.
//
// Also records this rank's progress after each clock (what a crash loses) and
// applies the planted kill (debug.kill_rank / kill_at_clock).
//
// Not thread-safe: the compute rank's thread. `lifecycle`, `geometry` and
// the local state must outlive it.
#pragma once

#include <memory>

#include "framework/runtime/consistency_mode.h"
#include "framework/runtime/run_lifecycle.h"

namespace stalelearn::runtime {

class SegmentedConsistency final : public ConsistencyMode {
 public:
  // `endpoints`: this rank's imported endpoints for the first segment (the
  // caller did its setup and start barrier).
  static Result<std::unique_ptr<SegmentedConsistency>> Make(RunLifecycle& lifecycle, model::ComputeIndex me,
                                                            ComputeEndpoints endpoints,
                                                            const DataPlaneGeometry& geometry);
  // The clock loop's local state (saved at boundaries; it must outlive this)
  // and the samples trained before the first clock (from the checkpoint when
  // resuming). Before the first clock.
  void set_local_state(const LocalState* app_state, std::int64_t samples_done) {
    app_state_ = app_state;
    samples_done_ = samples_done;
  }

  // Samples trained so far, by every attempt of the run.
  std::int64_t samples_done() const { return samples_done_; }

  model::ModelView& view() override { return inner_->view(); }
  const model::Replica* replica() const override { return inner_->replica(); }
  Status ShareInitialization() override { return inner_->ShareInitialization(); }
  Status BeforeClock(std::int64_t clock, std::span<const std::int64_t> samples, ClockRecord& record) override;
  Status AfterClock(std::int64_t clock, ClockRecord& record) override;
  Status ReadModel(TableSet& model) override { return inner_->ReadModel(model); }
  Status Finish(std::uint64_t total_clocks) override;
  Status ReadFinalModel(TableSet& model) override { return inner_->ReadFinalModel(model); }
  Status Release() override { return inner_->Release(); }

 private:
  SegmentedConsistency(RunLifecycle& lifecycle, model::ComputeIndex me, const DataPlaneGeometry& geometry);
  Status StartSegment(ComputeEndpoints endpoints);
  // Ends the segment at `clock` (a boundary) and starts the next one.
  Status CrossBoundary(std::int64_t clock);

  RunLifecycle& lifecycle_;
  const RankEnv& env_;
  model::ComputeIndex me_;
  const DataPlaneGeometry& geometry_;
  Checkpointer& checkpointer_;
  const LocalState* app_state_ = nullptr;
  std::int64_t samples_done_ = 0;
  ComputeEndpoints endpoints_;  // the segment's; the inner mode takes them
  std::unique_ptr<ConsistencyMode> inner_;
  bool ended_ = false;  // the run stopped at a boundary (stop_agreement.h): inner_ is finished
};

}  // namespace stalelearn::runtime
