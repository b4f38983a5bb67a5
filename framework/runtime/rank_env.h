// Everything one rank's role code needs, resolved once at start-up and passed
// down (framework/README.md, convention 10), plus the test hooks.
//
// Lifetimes: every reference outlives the rank's run. Hooks are called from
// the rank's own thread; with ranks as threads they run concurrently on
// several ranks, so they must be thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "framework/metrics/counting_transport.h"
#include "framework/metrics/progress.h"
#include "framework/model/shard_layout.h"
#include "framework/proto/config.pb.h"
#include "framework/runtime/app.h"
#include "framework/runtime/app_facets.h"
#include "framework/runtime/roles.h"
#include "framework/sync/merge_policy.h"
#include "framework/sync/wait_options.h"
#include "framework/transport/bootstrap.h"
#include "framework/transport/transport.h"
#include "framework/transport/rank_time.h"

namespace stalelearn::runtime {

class StopAgreement;  // stop_agreement.h

// What a compute rank saw when it started a clock (kept per clock for tests
// and traces).
struct ClockRecord {
  model::ComputeIndex rank;
  std::int64_t clock = 0;
  // Clocks merged of the slowest other compute rank in the installed model
  // (as far as the rows the clock reads go: in_stratum, below).
  std::uint64_t min_merged_of_others = 0;
  // clock - min_merged_of_others (0 if ahead): how many clocks of others'
  // updates may be missing. The SSP bound keeps it <= s (I1).
  std::int64_t observed_staleness = 0;
  // observed_staleness over the rank's clocks per epoch (set by the clock
  // loop after BeforeClock; marks the clock's batches: sync::BatchHeader).
  double staleness_epochs = 0;
  double stall_seconds = 0;  // waited before this clock (gate + full ring)
  double refresh_cpu_seconds = 0;   // thread CPU of refreshing the replica for it
  std::int64_t rows_refreshed = 0;  // rows those refreshes installed
  std::int64_t meta_only_reads = 0; // their snapshot reads of a meta alone (report.proto)
  std::int64_t stripes_read_ahead = 0;  // its stripe load was read ahead (report.proto)
  std::int64_t stripes_read_ahead_unsettled = 0;  // and begun before the stripe's writer was done
  std::int64_t stripes_read_ahead_dropped = 0;    // reads ahead dropped unused since the last clock
  // Started without a gate or refresh: a stratified clock whose rows no
  // other rank can change (ssp_mode.cc InStratum; report.proto
  // stratum_clocks). min_merged_of_others is then the clock itself.
  bool in_stratum = false;
  // The epoch's last clock (set by the clock loop): deltas a mode kept
  // back go out with it at the latest.
  bool ends_epoch = false;
};

struct RuntimeHooks {
  // Wraps the rank's transport (fault injection in tests); identity if unset.
  std::function<std::unique_ptr<transport::Transport>(transport::Transport& inner)> wrap_transport;
  // After a compute rank refreshed its replica for a clock (I2 tests): the
  // rows the replica holds in a full-size model (zeros where it holds none;
  // training.full_replicas makes it hold every row).
  std::function<void(const ClockRecord&, const TableSet& replica)> after_refresh;
  // While it returns true, memory rank m consumes nothing (I5 tests).
  std::function<bool(model::MemoryIndex)> merging_paused;
  // Memory rank m is about to merge a batch stamped visible at `visible_at`;
  // its clock reads `now` (stamp tests; both 0 in real time).
  std::function<void(model::MemoryIndex, transport::VirtualTime visible_at, transport::VirtualTime now)>
      before_timed_merge;
};

struct RankEnv {
  const proto::Config& config;
  const App& app;
  AppFacets facets;  // the app's optional facets, found once (app_facets.h)
  const model::ModelLayout& layout;
  const RoleMap& roles;
  metrics::CountingTransport& transport;  // counting decorator over the backend
  transport::Bootstrap& bootstrap;
  const RuntimeHooks& hooks;
  sync::WaitOptions wait;  // wait.time: the rank's time service (never null)
  metrics::ProgressPrinter progress;
  std::vector<sync::MergePolicySpec> merge;  // one per table (merge_config.h)
  // The run's stop agreement (stop_agreement.h); null: the run never stops early.
  StopAgreement* stop = nullptr;
};

}  // namespace stalelearn::runtime
