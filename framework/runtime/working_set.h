// The rows a compute rank's samples touch (App::RowsOf over all its
// samples), per table: what its partial replica holds. Dense tables, and
// every table when training.full_replicas is set, are held whole.
// Stateless; thread-safe (the app is const).
#pragma once

#include <span>

#include "framework/model/replica.h"
#include "framework/runtime/app.h"
#include "framework/runtime/rank_env.h"

namespace stalelearn::runtime {

model::WorkingSet FindWorkingSet(const App& app, std::span<const std::int64_t> samples, bool full_replicas);
// The working set of compute rank `me` (the samples its clock loop is dealt).
model::WorkingSet WorkingSetOfRank(const RankEnv& env, model::ComputeIndex me);

}  // namespace stalelearn::runtime
