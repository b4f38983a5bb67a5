// The memory-side merge policy of every table, from the config's `merge` map
// (table name -> MergeConfig; "*" for every table not named) onto
// sync::MergePolicySpec (framework/sync/merge_policy.h): the policy's options
// (MergeConfig.params, resolved by the config loader; absent: the declared
// defaults) copied in by the policy's registry entry, which also gives the
// spec its factory. A table no key names merges by sum.
// Stateless functions; thread-safe.
#pragma once

#include <vector>

#include "framework/core/status.h"
#include "framework/model/table_spec.h"
#include "framework/proto/config.pb.h"
#include "framework/sync/merge_policy.h"

namespace stalelearn::runtime {

// One spec per table, in table order; kInvalidArgument naming the field if
// a key names no table or a policy does not fit its table (e.g. adam on an
// int32 table), or if `uses_memory_ranks` is false and a policy is not sum
// (without memory ranks nothing merges on the memory side).
Result<std::vector<sync::MergePolicySpec>> MergeSpecsOf(const proto::Config& config,
                                                        const std::vector<model::TableSpec>& tables,
                                                        bool uses_memory_ranks,
                                                        const sync::MergePolicyRegistry& policies);

// Whether every table's merge is master += scale x delta (MergePolicy::
// adds_delta: `sum`, `staleness_aware`). Then a compute rank's own deltas in
// its replica are what the master made of them (exactly under sum and with
// one compute rank; under staleness_aware with several, up to the scale of
// the stale clocks, which the next refresh that other ranks' clocks force
// replaces by the master's), and its own clocks need not be waited for (I2
// covers them); under any other policy (adam, adagrad, average) the master's
// version of an own batch differs from the raw delta, and the staleness
// bound must count the rank's own clocks too.
// `specs`: MergeSpecsOf's, one per table (with their factories).
Result<bool> MergesAddDeltas(const std::vector<sync::MergePolicySpec>& specs,
                             const std::vector<model::TableSpec>& tables);

}  // namespace stalelearn::runtime
