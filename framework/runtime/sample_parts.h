// The start-up passes over a rank's samples (its working set, the locality
// plan) run on all cores, one contiguous part of the samples per core, each
// part with its own scratch (marks, counts, verdicts) combined after the
// parts are joined. A pass written so (marks or-ed, counts summed, a part's
// samples after the parts' before it) does not depend on the part count.
// Stateless; `fn` runs on several threads at once, one call per part.
#pragma once

#include <algorithm>
#include <cstddef>

#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

namespace stalelearn::runtime {

// The number of parts: the cores of the calling thread's arena.
inline int SampleParts() { return std::max(1, tbb::this_task_arena::max_concurrency()); }

// fn(part, begin, end) for the `parts` contiguous parts of [0, n), in parallel.
template <class Fn>
void ForEachSamplePart(int parts, std::size_t n, const Fn& fn) {
  tbb::parallel_for(0, parts, [&](int part) {
    const auto p = static_cast<std::size_t>(part);
    const auto count = static_cast<std::size_t>(parts);
    fn(part, n * p / count, n * (p + 1) / count);
  });
}

}  // namespace stalelearn::runtime
