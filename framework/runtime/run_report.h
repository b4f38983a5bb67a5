// Building the run report: each rank fills a partial report (its RankReport;
// the evaluating rank also the curve, final metric, checksum and wall time);
// the partials are all-gathered and merged identically on every rank.
// Stateless functions; thread-safe.
#pragma once

#include <vector>

#include "framework/core/status.h"
#include "framework/metrics/counting_transport.h"
#include "framework/proto/config.pb.h"
#include "framework/proto/report.pb.h"
#include "framework/runtime/app.h"
#include "framework/runtime/consistency_mode.h"
#include "framework/runtime/roles.h"
#include "framework/runtime/trainer_result.h"
#include "framework/sync/ring_poller.h"
#include "framework/transport/bootstrap.h"
#include "framework/transport/rank_time.h"

namespace stalelearn::runtime {

// The per-rank part of the report.
proto::RankReport MakeRankReport(transport::Rank rank, Role role, const TrainerResult* trainer,
                                 const sync::MergeCounters* merged, const metrics::TransportCounters& counters);

// This rank's part of the report's `simulated` section (timing backend):
// its clock as total_seconds, its breakdown, the presets and whether the run
// is deterministic. GatherReport takes the maximum total over ranks.
proto::Simulated MakeSimulatedPart(transport::Rank rank, const transport::SimulatedSummary& sim);

// All-gathers every rank's `partial` and merges them under the run's header
// fields (the mode's name and reported staleness). Evaluation parts (apps
// that evaluate in parts) are added over ranks, epoch by epoch, and turned
// into the curve and final metric by the app. Collective.
Result<proto::Report> GatherReport(transport::Bootstrap& bootstrap, const proto::Config& config, const App& app,
                                   const RoleMap& roles, const char* backend, const ModeDefinition& mode,
                                   const proto::Report& partial);

// All-gathers every compute rank's per-clock record as CSV (the trace file of
// output.trace): header "rank,clock,observed_staleness,min_merged_of_others,
// stall_seconds", rows in rank then clock order. Collective.
Result<std::string> GatherTraceCsv(transport::Bootstrap& bootstrap, const std::vector<ClockRecord>& records);

}  // namespace stalelearn::runtime
