#include "framework/runtime/allreduce_trainer.h"

#include <algorithm>
#include <cstring>

namespace stalelearn::runtime {

AllreduceTrainer::AllreduceTrainer(const RankEnv& env, EpochEvaluator* evaluator)
    : env_(env),
      me_(env.transport.rank().value),
      schedule_(env.app.TrainingSamples(), env.bootstrap.world_size(), me_, env.config.training().samples_per_clock(),
                env.config.seed()),
      straggler_(env.config.training().straggler().slowdown(), env.config.training().straggler().rank() == me_),
      evaluator_(evaluator),
      replica_(env.layout.tables()) {
  InitializeTables(env.app, replica_.mutable_tables());
  base_ = replica_.tables();
  std::size_t floats = 0, ints = 0;
  for (const TableSpec& t : env.layout.tables()) {
    const auto n = static_cast<std::size_t>(t.rows) * static_cast<std::size_t>(t.width);
    offsets_.push_back(t.type == ElementType::kFloat32 ? floats : ints);
    (t.type == ElementType::kFloat32 ? floats : ints) += n;
  }
  float_deltas_.resize(floats);
  int_deltas_.resize(ints);
}

Status AllreduceTrainer::AllReduceDeltas() {
  transport::SimulatedTime* sim = env_.wait.sim;
  if (sim == nullptr) return SumOverRanks();
  // Timing backend: the collective runs outside the virtual-time schedule;
  // every rank then continues at the slowest rank's clock plus the price of
  // a ring allreduce of the deltas.
  std::int64_t clock_ps = sim->Now().time_since_epoch().count();
  STALELEARN_RETURN_IF_ERROR(sim->ExitScheduleForCollective());
  STALELEARN_RETURN_IF_ERROR(env_.bootstrap.AllReduceMax(std::span(&clock_ps, 1)));
  STALELEARN_RETURN_IF_ERROR(SumOverRanks());
  STALELEARN_RETURN_IF_ERROR(sim->RejoinSchedule());
  const std::uint64_t bytes = float_deltas_.size() * sizeof(float) + int_deltas_.size() * sizeof(double);
  return sim->AdvanceTo(transport::VirtualTimeFromPs(clock_ps) +
                        sim->AllReduceCost(bytes, env_.bootstrap.world_size()));
}

Status AllreduceTrainer::SumOverRanks() {
  if (!float_deltas_.empty()) STALELEARN_RETURN_IF_ERROR(env_.bootstrap.AllReduceSum(std::span(float_deltas_)));
  if (!int_deltas_.empty()) STALELEARN_RETURN_IF_ERROR(env_.bootstrap.AllReduceSum(std::span(int_deltas_)));
  return Status::Ok();
}

Status AllreduceTrainer::SumDeltas() {
  std::ranges::fill(float_deltas_, 0.0f);
  std::ranges::fill(int_deltas_, 0.0);
  const auto& tables = env_.layout.tables();
  replica_.DrainDeltas([&](TableId t, RowId r, std::span<const std::byte> delta) {
    const std::size_t at = offsets_[t.value] + static_cast<std::size_t>(r.value) * tables[t.value].width;
    for (std::int32_t i = 0; i < tables[t.value].width; ++i) {
      if (tables[t.value].type == ElementType::kFloat32) {
        float d;
        std::memcpy(&d, delta.data() + i * model::kElementBytes, sizeof d);
        float_deltas_[at + i] = d;
      } else {
        std::int32_t d;
        std::memcpy(&d, delta.data() + i * model::kElementBytes, sizeof d);
        int_deltas_[at + i] = d;
      }
    }
  });
  STALELEARN_RETURN_IF_ERROR(AllReduceDeltas());
  for (std::size_t t = 0; t < tables.size(); ++t) {
    model::RowBlock& block = base_[t];
    for (std::int64_t r = 0; r < block.rows(); ++r) {
      const std::size_t at = offsets_[t] + static_cast<std::size_t>(r) * tables[t].width;
      if (block.type() == ElementType::kFloat32) {
        std::span<float> row = block.FloatRow(r);
        for (std::size_t i = 0; i < row.size(); ++i) row[i] += float_deltas_[at + i];
      } else {
        std::span<std::int32_t> row = block.IntRow(r);
        for (std::size_t i = 0; i < row.size(); ++i) {
          row[i] = static_cast<std::int32_t>(static_cast<std::uint32_t>(row[i]) +
                                             static_cast<std::uint32_t>(static_cast<std::int64_t>(int_deltas_[at + i])));
        }
      }
    }
  }
  replica_.mutable_tables() = base_;
  return Status::Ok();
}

Result<TrainerResult> AllreduceTrainer::Run() {
  TrainerResult result;
  const int epochs = env_.config.training().epochs();
  const int eval_every = env_.config.training().eval_every_epochs();
  const std::int64_t clocks_per_epoch = schedule_.clocks_per_epoch();
  for (int epoch = 0; epoch < epochs; ++epoch) {
    const std::vector<std::int64_t> order = schedule_.EpochOrder(epoch);
    for (std::int64_t k = 0; k < clocks_per_epoch; ++k) {
      ClockRecord record;
      record.rank = model::ComputeIndex{me_};
      record.clock = epoch * clocks_per_epoch + k;
      record.min_merged_of_others = static_cast<std::uint64_t>(record.clock);  // all clocks before are in
      WorkCounters work;
      const auto compute_start = std::chrono::steady_clock::now();
      const std::span<const std::int64_t> samples = schedule_.ClockSamples(order, k);
      for (std::int64_t s : samples) env_.app.Update(s, replica_, work);
      straggler_.EndComputeStep(env_.cost_sink, work, std::chrono::steady_clock::now() - compute_start);
      result.samples += static_cast<std::int64_t>(samples.size());
      // Time in the collective is waiting for the slowest rank: stall.
      const auto sync_start = std::chrono::steady_clock::now();
      STALELEARN_RETURN_IF_ERROR(SumDeltas());
      record.stall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - sync_start).count();
      result.Add(record);
    }
    const bool last = epoch + 1 == epochs;
    if (evaluator_ != nullptr && !last && (epoch + 1) % eval_every == 0) evaluator_->Record(epoch + 1, model());
  }
  return result;
}

}  // namespace stalelearn::runtime
