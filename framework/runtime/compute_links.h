// A compute rank's links to the memory ranks, shared by the SSP and DIRECT
// trainers: the clock table (control blocks), the replica refresher
// (snapshots + read-your-writes) and the delta pusher (rings).
//
// Not thread-safe: the rank's main thread. Owns the imported endpoints,
// which it keeps alive longer than everything that uses them.
#pragma once

#include <cstdint>

#include "framework/runtime/data_plane.h"
#include "framework/runtime/delta_pusher.h"
#include "framework/runtime/rank_env.h"
#include "framework/runtime/replica_refresher.h"
#include "framework/sync/clock_table.h"
#include "framework/sync/row_gather.h"

namespace stalelearn::runtime {

struct ComputeLinks {
  ComputeLinks(const RankEnv& env, ComputeEndpoints endpoints, const DataPlaneGeometry& geometry,
               bool keep_pending);
  // After Finish: waits until every memory rank has published the snapshot
  // holding all `total_clocks` clocks of every compute rank and reads it
  // into `model`. Call before Release.
  Status ReadFinalModel(const RankEnv& env, std::uint64_t total_clocks, TableSet& model, model::ModelRows rows);
  // Waits until every memory rank has merged every compute rank's clocks
  // before `clock` (this rank's included), as its control block says.
  Status AwaitMergedBefore(const RankEnv& env, std::uint64_t clock);
  // The last call to the memory ranks (they progress until every compute
  // rank released them).
  Status Release() { return pusher.Release(); }

  ComputeEndpoints endpoints;  // declared first: destroyed last
  sync::ClockTable clocks;
  ReplicaRefresher refresher;
  DeltaPusher pusher;
  // Row requests to the memory ranks, where they keep reply areas (a
  // stratified run); null otherwise.
  std::unique_ptr<sync::RowGatherClient> gather;
};

}  // namespace stalelearn::runtime
