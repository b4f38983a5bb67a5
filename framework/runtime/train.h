// One rank's whole training run: creates the backend, takes its role from the
// rank (framework/runtime/roles.h), sets up the data plane, trains under the
// configured consistency mode, and assembles the run report on every rank.
//
//   RunRanks(4, [&](Bootstrap& bootstrap) {        // or MakeMpiBootstrap()
//     RankRun run = ValueOrThrow(TrainRank(inputs, bootstrap));
//     if (run.writes_report) WriteReportFile(run.report, "r.json");
//   });
//
// Collective: every rank of the bootstrap calls it with the same config.
// Thread-safety: one call per rank; with ranks as threads the calls run
// concurrently and share `inputs` read-only (hooks must be thread-safe).
#pragma once

#include <vector>

#include "framework/proto/report.pb.h"
#include "framework/runtime/consistency_mode.h"
#include "framework/runtime/rank_env.h"
#include "framework/transport/registry.h"

namespace stalelearn::runtime {

struct TrainInputs {
  const proto::Config& config;  // resolved (config_loader); backend.name set
  const App& app;
  const transport::BackendRegistry& backends;
  const ModeRegistry& modes;    // consistency.mode is looked up here
  RuntimeHooks hooks = {};
  sync::WaitOptions wait = {};
  // The merge policies config.merge names (Registries::merge_policies);
  // null: the built-in ones.
  const sync::MergePolicyRegistry* merge_policies = nullptr;
};

struct RankRun {
  proto::Report report;              // the whole run's report (same on every rank)
  std::vector<ClockRecord> records;  // this rank's per-clock record (compute ranks)
  std::string trace_csv;             // every rank's records, when output.trace is set
  // This rank writes the report: the lowest surviving world rank (world rank
  // 0 unless it died; faults.dead_after_seconds). True on exactly one rank.
  bool writes_report = false;
};

Result<RankRun> TrainRank(const TrainInputs& inputs, transport::Bootstrap& bootstrap);

}  // namespace stalelearn::runtime
