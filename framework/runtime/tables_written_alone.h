// Which tables of a compute rank's replica only that rank writes: every row
// it holds is named (App::RowsOf) by its own samples and by no other compute
// rank's under the deal SampleSchedule makes. The common case is an app that
// deals all samples naming a row of one table to one rank (the
// GroupsSamples facet): that row has one writer. A refresh need not read
// change records of such rows under a merge that adds deltas: the replica
// already holds master plus its own deltas there
// (ReplicaRefresher::set_tables_written_alone).
//
// Finding out takes one pass over every training sample (on all cores),
// done once for the ranks of a run that share a process (ranks as threads):
// the result is shared while any of them keeps its WrittenAloneHandle. The
// handle keeps it alive, so a later run with another app at the same address
// cannot be served a stale answer.
// Thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "framework/model/rank_index.h"
#include "framework/model/replica.h"
#include "framework/runtime/app.h"

namespace stalelearn::runtime {

// Per keyed table, per row: the one compute rank whose samples name it,
// kNamedByNone or kNamedBySeveral (empty for dense tables).
struct RowNamers {
  static constexpr std::int32_t kNamedByNone = -1;
  static constexpr std::int32_t kNamedBySeveral = -2;
  std::vector<std::vector<std::int32_t>> by_table;
};
using WrittenAloneHandle = std::shared_ptr<const RowNamers>;

// The namers of every row under the deal of `compute_ranks` ranks with `seed`
// (computed, or shared with another rank of this run holding the handle).
WrittenAloneHandle FindRowNamers(const App& app, int compute_ranks, std::uint64_t seed);

// Per table of `replica`: whether compute rank `me` is the only rank whose
// samples name the rows it holds. With one compute rank every table is; a
// dense table or one held whole never is with more (other ranks write it).
std::vector<bool> TablesWrittenAlone(const RowNamers& namers, int compute_ranks, model::ComputeIndex me,
                                     const model::Replica& replica);

}  // namespace stalelearn::runtime
