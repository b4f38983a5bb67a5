// A memory rank's run (run_lifecycle.h): one MemoryRank (the shard) that
// merges from the run's first clock to its last. Checkpoints are cut while
// it merges (checkpoint_cut.h); a resumed run starts from the checkpoint's
// bytes.

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <span>
#include <vector>

#include "framework/runtime/memory_rank.h"
#include "framework/runtime/run_lifecycle.h"
#include "framework/runtime/run_report.h"
#include "framework/runtime/sample_schedule.h"

namespace stalelearn::runtime {
namespace {

class MemoryRole {
 public:
  MemoryRole(RunLifecycle& lifecycle, const DataPlaneGeometry& geometry)
      : lifecycle_(lifecycle),
        env_(lifecycle.env()),
        checkpointer_(lifecycle.checkpointer()),
        geometry_(geometry),
        me_(env_.roles.memory_index(lifecycle.me())) {}

  Result<RankRun> Run() {
    STALELEARN_RETURN_IF_ERROR(ReadResumedShard());
    STALELEARN_ASSIGN_OR_RETURN(MemoryEndpoints endpoints, lifecycle_.ConnectMemory(geometry_));
    STALELEARN_RETURN_IF_ERROR(MakeShard(std::move(endpoints)));
    STALELEARN_RETURN_IF_ERROR(lifecycle_.Start());
    STALELEARN_ASSIGN_OR_RETURN(total_, memory_->Run());
    lifecycle_.LeaveSchedule();
    if (lifecycle_.WritesStopCheckpoint()) {
      const std::int64_t clock = *lifecycle_.StoppedClock();
      const proto::MemoryShardState state = memory_->SaveState(static_cast<std::uint64_t>(clock));
      STALELEARN_RETURN_IF_ERROR(WriteShard(clock, state, /*cut=*/false));
    }
    proto::Report partial;
    STALELEARN_RETURN_IF_ERROR(ReportDeadRanks(partial));
    STALELEARN_RETURN_IF_ERROR(lifecycle_.EndTraining());
    *partial.add_ranks() = MakeRankReport(lifecycle_.me(), Role::kMemory, nullptr, &total_.counters,
                                          lifecycle_.transport_counters());
    partial.mutable_ranks(0)->set_checkpoint_forks(total_.checkpoint_forks);
    partial.mutable_ranks(0)->set_busy_cpu_seconds(total_.busy_cpu_seconds);
    // Gathering is collective: the regions stay alive until the evaluating
    // ranks have read the final model.
    return lifecycle_.Gather(std::move(partial), {});
  }

 private:
  Status ReadResumedShard() {
    if (checkpointer_.resumed() == nullptr) return Status::Ok();
    const std::string name = MemoryShardFileName(me_);
    STALELEARN_ASSIGN_OR_RETURN(std::vector<std::byte> bytes, checkpointer_.ReadResumedFile(name));
    resumed_.emplace();
    if (!resumed_->ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
      return DataLoss(fmt::format("{}: {} does not parse", checkpointer_.resumed()->path.string(), name));
    }
    return Status::Ok();
  }

  // The shard: the app's initial model or the checkpoint's.
  Status MakeShard(MemoryEndpoints endpoints) {
    STALELEARN_ASSIGN_OR_RETURN(memory_, MemoryRank::Make(env_, std::move(endpoints), geometry_,
                                                          resumed_ ? &*resumed_ : nullptr));
    if (resumed_) {
      STALELEARN_RETURN_IF_ERROR(memory_->PublishRestored(*resumed_));
      resumed_.reset();
    } else {
      memory_->PublishInitial();
    }
    if (lifecycle_.survives_deaths()) {
      memory_->EnableDeadRankDetection(std::chrono::duration<double>(env_.config.faults().dead_after_seconds()));
    }
    if (checkpointer_.clocks().every > 0 && checkpointer_.writes_checkpoints()) {
      memory_->EnableCheckpointCuts(checkpointer_.clocks(),
                                    [this](std::int64_t clock, const proto::MemoryShardState& state) {
                                      return WriteShard(clock, state, /*cut=*/true);
                                    });
    }
    if (lifecycle_.survives_deaths() || checkpointer_.checkpointed()) {
      memory_->set_merged_clock_observer(
          [this](std::uint64_t clock) { checkpointer_.MaybeKill(static_cast<std::int64_t>(clock)); });
    }
    return Status::Ok();
  }

  // This memory rank's file of checkpoint `clock`: a cut's part, or the stop's.
  Status WriteShard(std::int64_t clock, const proto::MemoryShardState& state, bool cut) {
    const std::string bytes = state.SerializeAsString();
    const auto span = std::as_bytes(std::span(bytes.data(), bytes.size()));
    return checkpointer_.WriteFile(clock, MemoryShardFileName(me_), span, cut);
  }

  // The compute ranks this memory rank dropped as dead: what their loss cost
  // (the report's `lost`), and the survivors go on without them.
  Status ReportDeadRanks(proto::Report& partial) {
    std::vector<model::ComputeIndex> dead;
    for (const MemoryRank::DeadRank& d : memory_->dead_ranks()) {
      dead.push_back(d.rank);
      proto::Lost& lost = *partial.mutable_lost();
      lost.add_ranks(env_.roles.compute_rank(d.rank).value);
      lost.set_clocks(std::max<std::int64_t>(lost.clocks(),
                                             lifecycle_.TotalClocks() - static_cast<std::int64_t>(d.merged_clock)));
      lost.set_samples(lost.samples() + SamplesLeft(d.rank, d.merged_clock));
    }
    return lifecycle_.ExcludeDead(dead);
  }

  // The samples compute rank c had left after `merged_clock` protocol clocks
  // (stratified scheduling cuts clocks unevenly: there, an estimate).
  std::int64_t SamplesLeft(model::ComputeIndex c, std::uint64_t merged_clock) const {
    const SampleSchedule schedule = ScheduleOf(env_.app, env_.config, env_.roles.compute_ranks(), c.value);
    const std::int64_t spc = env_.config.training().samples_per_clock();
    std::int64_t left = 0;
    for (std::int64_t t = std::max<std::int64_t>(static_cast<std::int64_t>(merged_clock), lifecycle_.clock_offset());
         t < lifecycle_.TotalClocks(); ++t) {
      const std::int64_t k = (t - lifecycle_.clock_offset()) % schedule.clocks_per_epoch();
      left += std::clamp<std::int64_t>(schedule.share() - k * spc, 0, spc);
    }
    return left;
  }

  RunLifecycle& lifecycle_;
  const RankEnv& env_;
  Checkpointer& checkpointer_;
  const DataPlaneGeometry& geometry_;
  const model::MemoryIndex me_;
  std::optional<proto::MemoryShardState> resumed_;  // until the shard publishes it
  std::unique_ptr<MemoryRank> memory_;
  MemoryRankResult total_;
};

}  // namespace

Result<RankRun> RunMemoryRole(RunLifecycle& lifecycle, const DataPlaneGeometry& geometry) {
  return MemoryRole(lifecycle, geometry).Run();
}

}  // namespace stalelearn::runtime
