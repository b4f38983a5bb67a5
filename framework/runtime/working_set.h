// The rows a compute rank's samples touch (App::RowsOf over all its
// samples), per table: what its partial replica holds. Dense tables, and
// every table when training.full_replicas is set, are held whole.
// Stateless; thread-safe (the app is const).
#pragma once

#include <span>

#include "framework/model/replica.h"
#include "framework/runtime/app.h"
#include "framework/runtime/rank_env.h"
#include "framework/runtime/sample_schedule.h"

namespace stalelearn::runtime {

// `samples` in any order; in increasing order the pass reads the app's
// sample arrays in address order (SampleSchedule::ascending). On all cores.
model::WorkingSet FindWorkingSet(const App& app, std::span<const std::int64_t> samples, bool full_replicas);
// The working set of the compute rank `schedule` deals to.
model::WorkingSet WorkingSetOf(const RankEnv& env, const SampleSchedule& schedule);

}  // namespace stalelearn::runtime
