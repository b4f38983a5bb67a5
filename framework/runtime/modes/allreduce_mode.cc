// ALLREDUCE: no memory ranks. Every rank keeps a full replica; after each
// clock the deltas of all ranks are summed with the bootstrap's allreduce
// (MPI_Allreduce under mpirun) and every replica becomes the same model.
// What Horovod users run: the baseline to beat. Every rank is a compute rank.
// (Deltas are always summed: memory-side merge policies need memory ranks.)
#include <algorithm>
#include <cstring>

#include "framework/model/replica.h"
#include "framework/runtime/modes/builtin_modes.h"

namespace stalelearn::runtime::modes {
namespace {

class AllreduceConsistency final : public ConsistencyMode {
 public:
  explicit AllreduceConsistency(ModeContext& context) : env_(context.env), replica_(context.env.layout.tables()) {
    InitializeTables(env_.app, replica_.mutable_tables());
    replica_.Rebase();
    base_ = replica_.tables();
    std::size_t floats = 0, ints = 0;
    for (const TableSpec& t : env_.layout.tables()) {
      const auto n = static_cast<std::size_t>(t.rows) * static_cast<std::size_t>(t.width);
      offsets_.push_back(t.type == ElementType::kFloat32 ? floats : ints);
      (t.type == ElementType::kFloat32 ? floats : ints) += n;
    }
    float_deltas_.resize(floats);
    int_deltas_.resize(ints);
  }

  model::ModelView& view() override { return replica_; }
  const model::Replica* replica() const override { return &replica_; }

  Status ShareInitialization() override { return SumDeltas(); }

  Status BeforeClock(std::int64_t clock, std::span<const std::int64_t>, ClockRecord& record) override {
    record.min_merged_of_others = static_cast<std::uint64_t>(clock);  // all clocks before are in
    return Status::Ok();
  }

  Status AfterClock(std::int64_t, ClockRecord& record) override {
    // Time in the collective is waiting for the slowest rank: stall.
    const auto start = std::chrono::steady_clock::now();
    STALELEARN_RETURN_IF_ERROR(SumDeltas());
    record.stall_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return Status::Ok();
  }

  Status ReadModel(TableSet& model, ModelRows /*rows: every row is read*/) override {
    model = replica_.tables();
    return Status::Ok();
  }
  Status Finish(std::uint64_t) override { return Status::Ok(); }
  Status ReadFinalModel(TableSet& model, ModelRows rows) override { return ReadModel(model, rows); }
  Status Release() override { return Status::Ok(); }

 private:
  // In virtual time every rank then continues at the slowest rank's clock
  // plus the price of a ring allreduce of the deltas (RankTime::AllReduce).
  Status AllReduceDeltas() {
    const std::uint64_t bytes = float_deltas_.size() * sizeof(float) + int_deltas_.size() * sizeof(double);
    return env_.wait.time->AllReduce(bytes, [this] { return SumOverRanks(); });
  }

  Status SumOverRanks() {
    if (!float_deltas_.empty()) STALELEARN_RETURN_IF_ERROR(env_.bootstrap.AllReduceSum(std::span(float_deltas_)));
    if (!int_deltas_.empty()) STALELEARN_RETURN_IF_ERROR(env_.bootstrap.AllReduceSum(std::span(int_deltas_)));
    return Status::Ok();
  }

  Status SumDeltas() {
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
    replica_.Rebase();
    return Status::Ok();
  }

  const RankEnv& env_;
  model::Replica replica_;
  TableSet base_;  // the model all ranks agree on after the last allreduce
  std::vector<std::size_t> offsets_;
  std::vector<float> float_deltas_;
  std::vector<double> int_deltas_;  // exact for int32 sums of up to 2^53
};

}  // namespace

ModeDefinition AllreduceMode() {
  ModeDefinition mode;
  mode.name = "ALLREDUCE";
  mode.uses_memory_ranks = false;
  mode.reported_staleness = [](const proto::Config&) { return 0; };
  mode.create = [](ModeContext& context) -> Result<std::unique_ptr<ConsistencyMode>> {
    return std::unique_ptr<ConsistencyMode>(new AllreduceConsistency(context));
  };
  return mode;
}

}  // namespace stalelearn::runtime::modes
