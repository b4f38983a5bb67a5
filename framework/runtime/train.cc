#include "framework/runtime/train.h"
#include "framework/runtime/app_facets.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "framework/metrics/counting_transport.h"
#include "framework/runtime/locality_plan.h"
#include "framework/runtime/merge_config.h"
#include "framework/runtime/run_lifecycle.h"
#include "framework/runtime/sample_schedule.h"
#include "framework/runtime/stop_agreement.h"
#include "framework/sync/wait_until.h"

namespace stalelearn::runtime {
namespace {

model::PartitionScheme SchemeOf(proto::Partitioning p) {
  return p == proto::HASH ? model::PartitionScheme::kHash : model::PartitionScheme::kRange;
}

// Dispatches on the rank's role; the run's steps are the lifecycle's
// (run_lifecycle.h), what each role does in between is its loop's.
Result<RankRun> RunRank(const RankEnv& env, const ModeDefinition& mode, metrics::CountingTransport& counting) {
  STALELEARN_ASSIGN_OR_RETURN(std::unique_ptr<RunLifecycle> lifecycle, RunLifecycle::Make(env, mode, counting));
  if (!mode.uses_memory_ranks) return RunComputeRole(*lifecycle, nullptr);
  const proto::ClusterConfig& cluster = env.config.cluster();
  const int strata = StrataOf(env.config, env.roles.compute_ranks());
  STALELEARN_ASSIGN_OR_RETURN(
      const DataPlaneGeometry geometry,
      MakeDataPlaneGeometry(env.layout, env.roles.compute_ranks(), cluster.ring_slots(),
                            static_cast<std::size_t>(cluster.slot_bytes()),
                            static_cast<std::size_t>(std::max<std::int64_t>(cluster.ring_bytes(), 0)),
                            strata > 1 ? StripeReplyBytes(env.layout, RunStrata(strata, 0).stripes()) : 0));
  if (env.roles.role(env.transport.rank()) == Role::kMemory) return RunMemoryRole(*lifecycle, geometry);
  return RunComputeRole(*lifecycle, &geometry);
}

}  // namespace

Result<RankRun> TrainRank(const TrainInputs& inputs, transport::Bootstrap& bootstrap) {
  const proto::Config& config = inputs.config;
  STALELEARN_ASSIGN_OR_RETURN(const ModeDefinition* mode, inputs.modes.Find(config.consistency().mode()));
  const std::map<std::string, std::string> no_options;  // the config's are sections
  const transport::BackendContext context{bootstrap, no_options, inputs.backends,
                                          config.backend().has_params() ? &config.backend().params() : nullptr,
                                          &config.backend().wrapped()};
  STALELEARN_ASSIGN_OR_RETURN(std::unique_ptr<transport::Transport> backend,
                              inputs.backends.Create(config.backend().name(), context));
  // Capabilities are asked of the transport (decorators forward them).
  // The rank's time service: virtual on a backend that simulates time,
  // else real (transport/rank_time.h); it outlives the rank's run.
  const std::unique_ptr<transport::RankTime> time = transport::MakeRankTime(*backend, bootstrap);
  sync::WaitOptions wait = inputs.wait;
  sync::ApplyWaitConfig(config.wait(), wait);
  wait.time = time.get();
  time->ConfigureIdling(wait.backoff);
  std::unique_ptr<transport::Transport> wrapped;
  if (inputs.hooks.wrap_transport) wrapped = inputs.hooks.wrap_transport(*backend);
  metrics::CountingTransport counting(wrapped ? *wrapped : *backend);

  STALELEARN_ASSIGN_OR_RETURN(
      RoleMap roles, RoleMap::Make(bootstrap.world_size(), mode->uses_memory_ranks ? config.cluster().memory_ranks() : 0,
                                   config.cluster().placement()));
  std::vector<TableSpec> tables = inputs.app.Tables();
  STALELEARN_RETURN_IF_ERROR(model::ValidateTables(tables));
  const sync::MergePolicyRegistry builtin_policies =
      inputs.merge_policies == nullptr ? sync::BuiltinMergePolicyRegistry() : sync::MergePolicyRegistry();
  STALELEARN_ASSIGN_OR_RETURN(
      std::vector<sync::MergePolicySpec> merge,
      MergeSpecsOf(config, tables, mode->uses_memory_ranks,
                   inputs.merge_policies != nullptr ? *inputs.merge_policies : builtin_policies));
  for (sync::MergePolicySpec& spec : merge) spec.batches_per_clock = std::max(1, roles.compute_ranks());
  const model::ModelLayout layout(std::move(tables), std::max(1, roles.memory_ranks()),
                                  SchemeOf(config.cluster().partitioning()));
  // training.locality "auto" becomes what it means for this app and rank
  // count (every rank resolves the same config alike).
  proto::Config resolved = config;
  // training.samples_per_clock 0 becomes this rank count's share of the
  // global samples per clock.
  resolved.mutable_training()->set_locality(ResolvedLocality(inputs.app, config, roles.compute_ranks()));
  resolved.mutable_training()->set_samples_per_clock(
      static_cast<std::int32_t>(SamplesPerClock(config.training(), roles.compute_ranks())));
  // A stop request becomes one clock every rank stops at (stop_agreement.h);
  // a rank blocked on a peer that already agreed joins from its wait.
  const StopAgreement::Kind stop_kind = config.faults().dead_after_seconds() > 0 ? StopAgreement::Kind::kOff
                                        : mode->uses_memory_ranks               ? StopAgreement::Kind::kOnRequest
                                                                                : StopAgreement::Kind::kEveryClock;
  StopAgreement stop(
      bootstrap, [&counting] { counting.Progress(); }, *time, stop_kind, roles.compute_ranks(), wait.timeout);
  if (config.debug().stop_rank() >= std::max(1, roles.compute_ranks())) {
    return InvalidArgument(fmt::format("debug.stop_rank {} is not a compute rank (the run has {})",
                                       config.debug().stop_rank(), roles.compute_ranks()));
  }
  stop.set_request_at_clock(config.debug().stop_at_clock(),
                            config.debug().stop_rank() > 0 ? config.debug().stop_rank() : -1);
  const AppFacets facets = AppFacets::ForRun(inputs.app, config, roles.compute_ranks());
  STALELEARN_RETURN_IF_ERROR(facets.CheckPartRows(inputs.app, roles.compute_ranks()));
  const bool stops_early = config.training().early_stopping().patience() > 0;
  stop.set_hears_announcements(stops_early);  // the evaluating rank announces its stop
  // Apps that evaluate in parts: compute rank 0 combines the parts as they
  // arrive and decides (eval_parts_exchange.h).
  if (stops_early) {
    if (stop_kind == StopAgreement::Kind::kOff) {
      return InvalidArgument("training.early_stopping cannot be combined with faults.dead_after_seconds: a run that "
                             "survives a dead rank has no stop agreement");
    }
  }
  wait.while_waiting = [&stop] { return stop.Poll(); };
  const RankEnv env{resolved,
                    inputs.app,
                    facets,
                    layout,
                    roles,
                    counting,
                    bootstrap,
                    inputs.hooks,
                    wait,
                    metrics::ProgressPrinter(config.output().quiet()),
                    merge,
                    &stop};
  return RunRank(env, *mode, counting);
}

}  // namespace stalelearn::runtime
