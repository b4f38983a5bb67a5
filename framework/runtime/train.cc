#include "framework/runtime/train.h"

#include <fmt/format.h>

#include <map>
#include <optional>

#include "framework/metrics/counting_transport.h"
#include "framework/model/hash64.h"
#include "framework/runtime/allreduce_trainer.h"
#include "framework/runtime/direct_trainer.h"
#include "framework/runtime/memory_rank.h"
#include "framework/runtime/run_report.h"
#include "framework/runtime/ssp_trainer.h"

namespace stalelearn::runtime {
namespace {

model::PartitionScheme SchemeOf(proto::Partitioning p) {
  return p == proto::HASH ? model::PartitionScheme::kHash : model::PartitionScheme::kRange;
}

sync::StalenessBound BoundOf(const proto::ConsistencyConfig& c) {
  switch (c.mode()) {
    case proto::ASP:
      return sync::StalenessBound::Unbounded();
    case proto::BSP:
      return sync::StalenessBound::Of(0);
    default:
      return sync::StalenessBound::Of(c.staleness());
  }
}

// Fills the evaluating rank's part of the report from the final model.
void FinishEvaluation(EpochEvaluator& evaluator, const proto::Config& config, const TableSet& final_model,
                      proto::Report& partial) {
  const Evaluation e = evaluator.Record(config.training().epochs(), final_model);
  partial.mutable_final()->set_metric(e.metric);
  partial.mutable_final()->set_value(e.value);
  *partial.mutable_curve() = {evaluator.curve().begin(), evaluator.curve().end()};
  partial.set_model_checksum(model::HexDigest(model::ModelChecksum(final_model)));
  partial.set_wall_seconds(evaluator.ElapsedSeconds());
}

// The roles of one rank once the environment is built; returns its partial report.
class RankRunner {
 public:
  RankRunner(const RankEnv& env, metrics::CountingTransport& counting) : env_(env), counting_(counting) {}

  Result<RankRun> Run() {
    if (env_.config.consistency().mode() == proto::ALLREDUCE) return RunAllreduce();
    return RunWithMemoryRanks();
  }

 private:
  const proto::Config& config() const { return env_.config; }
  transport::Rank me() const { return env_.transport.rank(); }

  EpochEvaluator* MaybeEvaluator(bool evaluating, std::chrono::steady_clock::time_point start) {
    if (!evaluating) return nullptr;
    evaluator_.emplace(env_.app, env_.progress, config().training().epochs(), start, env_.wait.sim);
    return &*evaluator_;
  }

  // Timing backend: joins the virtual-time schedule (after the start barrier)
  // and leaves it before the final barrier (the scheduler must not wait for a
  // rank blocked in a collective).
  Status StartSchedule() { return env_.wait.sim != nullptr ? env_.wait.sim->StartSchedule() : Status::Ok(); }
  void LeaveSchedule() {
    if (env_.wait.sim != nullptr) env_.wait.sim->LeaveSchedule();
  }

  Result<RankRun> Gather(proto::Report partial, std::vector<ClockRecord> records) {
    if (env_.wait.sim != nullptr) *partial.mutable_simulated() = MakeSimulatedPart(me(), *env_.wait.sim);
    STALELEARN_ASSIGN_OR_RETURN(proto::Report report,
                                GatherReport(env_.bootstrap, config(), env_.app, env_.roles, counting_.name(), partial));
    std::string trace;
    if (!config().output().trace().empty()) {  // the same config on every rank: all gather or none
      STALELEARN_ASSIGN_OR_RETURN(trace, GatherTraceCsv(env_.bootstrap, records));
    }
    return RankRun{std::move(report), std::move(records), std::move(trace)};
  }

  Result<RankRun> RunAllreduce() {
    STALELEARN_RETURN_IF_ERROR(env_.bootstrap.Barrier());
    STALELEARN_RETURN_IF_ERROR(StartSchedule());
    const auto start = std::chrono::steady_clock::now();
    AllreduceTrainer trainer(env_, MaybeEvaluator(me().value == 0, start));
    STALELEARN_ASSIGN_OR_RETURN(TrainerResult result, trainer.Run());
    LeaveSchedule();
    proto::Report partial;
    if (evaluator_) FinishEvaluation(*evaluator_, config(), trainer.model(), partial);
    *partial.add_ranks() = MakeRankReport(me(), Role::kCompute, &result, nullptr, counting_.counters());
    return Gather(std::move(partial), std::move(result.records));
  }

  Result<RankRun> RunWithMemoryRanks() {
    const DataPlaneGeometry geometry =
        MakeDataPlaneGeometry(env_.layout, env_.roles.compute_ranks(), config().cluster().ring_slots(),
                              static_cast<std::size_t>(config().cluster().slot_bytes()));
    if (env_.roles.role(me()) == Role::kMemory) {
      STALELEARN_ASSIGN_OR_RETURN(MemoryEndpoints endpoints,
                                  RegisterMemoryEndpoints(env_.transport, env_.bootstrap, env_.roles,
                                                          env_.roles.memory_index(me()), geometry));
      STALELEARN_RETURN_IF_ERROR(env_.bootstrap.Sync());
      MemoryRank memory(env_, std::move(endpoints), geometry);
      memory.PublishInitial();
      STALELEARN_RETURN_IF_ERROR(env_.bootstrap.Barrier());  // start
      STALELEARN_RETURN_IF_ERROR(StartSchedule());
      STALELEARN_ASSIGN_OR_RETURN(MemoryRankResult result, memory.Run());
      LeaveSchedule();
      STALELEARN_RETURN_IF_ERROR(env_.bootstrap.Barrier());  // all merged
      proto::Report partial;
      *partial.add_ranks() = MakeRankReport(me(), Role::kMemory, nullptr, &result.counters, counting_.counters());
      // Gathering is collective: the regions stay alive until the evaluating
      // rank has read the final model.
      return Gather(std::move(partial), {});
    }
    STALELEARN_RETURN_IF_ERROR(env_.bootstrap.Sync());
    const model::ComputeIndex ci = env_.roles.compute_index(me());
    STALELEARN_ASSIGN_OR_RETURN(ComputeEndpoints endpoints,
                                ImportComputeEndpoints(env_.transport, env_.bootstrap, env_.roles, ci));
    STALELEARN_RETURN_IF_ERROR(env_.bootstrap.Barrier());  // start
    STALELEARN_RETURN_IF_ERROR(StartSchedule());
    const auto start = std::chrono::steady_clock::now();
    EpochEvaluator* evaluator = MaybeEvaluator(ci.value == 0, start);
    if (config().consistency().mode() == proto::DIRECT) {
      DirectTrainer trainer(env_, std::move(endpoints), geometry, evaluator);
      return RunCompute(trainer);
    }
    SspTrainer trainer(env_, std::move(endpoints), geometry, BoundOf(config().consistency()), evaluator);
    return RunCompute(trainer);
  }

  template <class Trainer>
  Result<RankRun> RunCompute(Trainer& trainer) {
    STALELEARN_ASSIGN_OR_RETURN(TrainerResult result, trainer.Run());
    TableSet final_model;
    if (evaluator_) {
      // Read while the memory ranks still progress (before any collective).
      final_model = model::MakeTableSet(env_.layout.tables());
      STALELEARN_RETURN_IF_ERROR(trainer.ReadFinalModel(final_model));
    }
    STALELEARN_RETURN_IF_ERROR(trainer.Release());
    LeaveSchedule();  // after the final read and release: they are part of the timeline
    STALELEARN_RETURN_IF_ERROR(env_.bootstrap.Barrier());  // all merged
    proto::Report partial;
    if (evaluator_) FinishEvaluation(*evaluator_, config(), final_model, partial);
    *partial.add_ranks() = MakeRankReport(me(), Role::kCompute, &result, nullptr, counting_.counters());
    return Gather(std::move(partial), std::move(result.records));
  }

  const RankEnv& env_;
  metrics::CountingTransport& counting_;
  std::optional<EpochEvaluator> evaluator_;
};

}  // namespace

Result<RankRun> TrainRank(const TrainInputs& inputs, transport::Bootstrap& bootstrap) {
  const proto::Config& config = inputs.config;
  const std::map<std::string, std::string> options(config.backend().options().begin(),
                                                   config.backend().options().end());
  const transport::BackendContext context{bootstrap, options, inputs.backends};
  STALELEARN_ASSIGN_OR_RETURN(std::unique_ptr<transport::Transport> backend,
                              inputs.backends.Create(config.backend().name(), context));
  ComputeCostSink* cost_sink = FindComputeCostSink(*backend);
  sync::WaitOptions wait = inputs.wait;
  // On the backend itself: the test hooks' decorators do not forward it.
  wait.sim = transport::FindSimulatedTime(*backend);
  if (wait.sim != nullptr) {
    // Under the virtual-time scheduler an idle poll waits for another rank's
    // progress; otherwise (mpirun) it backs off in real time as usual, which
    // also keeps the number of (charged) polls down.
    wait.backoff.on_idle = [sim = wait.sim]() -> Result<bool> {
      if (!sim->deterministic()) return false;
      STALELEARN_RETURN_IF_ERROR(sim->IdleUntilProgress());
      return true;
    };
  }
  std::unique_ptr<transport::Transport> wrapped;
  if (inputs.hooks.wrap_transport) wrapped = inputs.hooks.wrap_transport(*backend);
  metrics::CountingTransport counting(wrapped ? *wrapped : *backend);

  const bool allreduce = config.consistency().mode() == proto::ALLREDUCE;
  STALELEARN_ASSIGN_OR_RETURN(RoleMap roles,
                              RoleMap::Make(bootstrap.world_size(), allreduce ? 0 : config.cluster().memory_ranks(),
                                            config.cluster().placement()));
  std::vector<TableSpec> tables = inputs.app.Tables();
  STALELEARN_RETURN_IF_ERROR(model::ValidateTables(tables));
  const model::ModelLayout layout(std::move(tables), std::max(1, roles.memory_ranks()),
                                  SchemeOf(config.cluster().partitioning()));
  const RankEnv env{config,    inputs.app, layout,      roles, counting, bootstrap, cost_sink,
                    inputs.hooks, wait, metrics::ProgressPrinter(config.output().quiet())};
  RankRunner runner(env, counting);
  return runner.Run();
}

}  // namespace stalelearn::runtime
