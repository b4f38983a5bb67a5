// Runs one clock's kernel on `training.threads_per_rank` oneTBB threads.
//
// The clock's samples are cut into as many contiguous chunks as threads.
// Each chunk runs the app's UpdateBatch on its own overlay of the replica:
// the first time the chunk touches a row it copies the row (as the replica
// held it at the start of the clock) and works on the copy. When every chunk
// is done, each chunk's change (copy now - copy at first touch) is added to
// the replica, chunk 0 first, through the replica's touch tracking, so the
// clock's deltas are shipped as usual.
//
// So within a clock the chunks see each other's updates one clock late, the
// same bounded staleness the framework applies between ranks; the result is
// a pure function of (samples, threads_per_rank): no data race, the same
// model whatever the scheduling. With one thread the runtime does not use
// this class (the kernel runs on the replica directly).
//
// Apps opt in with the RunsKernelInChunks facet (app_facets.h: their kernel
// may run concurrently on disjoint chunks, each with its own KernelContext: its own
// RandomStream and WorkCounters, and no writes to shared LocalState).
//
// Not thread-safe: one Run at a time (the trainer thread); Run itself uses
// the threads. The app and replica must outlive it.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include <tbb/task_arena.h>

#include "framework/model/replica.h"
#include "framework/runtime/app.h"

namespace stalelearn::runtime {

class ChunkOverlay;

class ParallelKernel {
 public:
  ParallelKernel(const App& app, int threads);
  ~ParallelKernel();

  int threads() const { return threads_; }
  // Runs `samples` as described above; adds every chunk's work to ctx.work.
  // A kernel error (stalelearn::Error, e.g. a row outside the working set)
  // is rethrown on the calling thread.
  void Run(std::span<const std::int64_t> samples, model::Replica& replica, const KernelContext& ctx);

 private:
  const App& app_;
  int threads_;
  tbb::task_arena arena_;
  std::vector<std::unique_ptr<ChunkOverlay>> overlays_;  // [chunk], reused across clocks
};

}  // namespace stalelearn::runtime
