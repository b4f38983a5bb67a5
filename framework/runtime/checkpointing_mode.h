// A compute rank's consistency mode in a checkpointed or resumed run
// (checkpointer.h): forwards everything to the configured mode and, after
// the last clock before a checkpoint clock B, writes the rank's part of
// checkpoint B (the app's local state and the samples trained so far). It
// neither waits nor drains: the memory ranks cut their shards at B while
// training goes on (checkpoint_cut.h), so the run trains as it would
// without checkpoints. The clock loop does not notice.
//
// Also records this rank's progress after each clock (what a crash loses) and
// applies the planted kill (debug.kill_rank / kill_at_clock).
//
// Not thread-safe: the compute rank's thread. `lifecycle` and the local state
// must outlive it.
#pragma once

#include <memory>

#include "framework/runtime/consistency_mode.h"
#include "framework/runtime/run_lifecycle.h"

namespace stalelearn::runtime {

class CheckpointingMode final : public ConsistencyMode {
 public:
  CheckpointingMode(RunLifecycle& lifecycle, model::ComputeIndex me, std::unique_ptr<ConsistencyMode> inner);
  // The clock loop's local state (saved at checkpoint clocks; it must outlive
  // this) and the samples trained before the first clock (from the
  // checkpoint when resuming). Before the first clock.
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
  Status FocusRows(model::TableId table, std::int64_t first, std::int64_t last, std::int64_t until,
                   model::ComputeIndex writer_before, std::int64_t settled_before, ClockRecord& record) override {
    return inner_->FocusRows(table, first, last, until, writer_before, settled_before, record);
  }
  Status PrefetchFocus(model::TableId table, std::int64_t first, std::int64_t last, model::ComputeIndex writer_before,
                       std::int64_t settled_before) override {
    return inner_->PrefetchFocus(table, first, last, writer_before, settled_before);
  }
  void WillFocus(model::TableId table) override { inner_->WillFocus(table); }
  void StartsFromInitialValues() override { inner_->StartsFromInitialValues(); }
  Status PushHeld() override { return inner_->PushHeld(); }
  Status ReadModel(TableSet& model, ModelRows rows) override { return inner_->ReadModel(model, rows); }
  Status Finish(std::uint64_t total_clocks) override { return inner_->Finish(total_clocks); }
  Status ReadFinalModel(TableSet& model, ModelRows rows) override {
    return inner_->ReadFinalModel(model, rows);
  }
  Status Release() override { return inner_->Release(); }

 private:
  Checkpointer& checkpointer_;
  model::ComputeIndex me_;
  std::unique_ptr<ConsistencyMode> inner_;
  const LocalState* app_state_ = nullptr;
  std::int64_t samples_done_ = 0;
};

}  // namespace stalelearn::runtime
