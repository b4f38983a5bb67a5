// Proves that the tsan label can fail inside a parallel_for body: two chunks
// of a TBB loop, annotated like ShardMerger::ForChunks and
// ParallelKernel::Run (TbbHappensBefore), add to one plain counter. Run under
// tests/tsan/suppressions.txt, TSan must report it (CTest matches the report:
// tests/tsan/CMakeLists.txt). It guards the suppressions: the former
// race:tbb::detail:: matched every chunk's stack and hid such races, and an
// annotation that ordered chunks among themselves would hide them too.
// Built and run only in ThreadSanitizer builds (deploy/tsan.sh).
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>
#include <tbb/task_arena.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>

#include "framework/core/sanitizer.h"

namespace {

long planted_counter = 0;  // written by both chunks without synchronisation
std::atomic<int> arrived{0};

__attribute__((noinline)) void PlantedRace(long chunk) { planted_counter += chunk + 1; }

}  // namespace

int main() {
  tbb::task_arena arena(2);
  stalelearn::TbbHappensBefore hb;
  hb.BeforeLoop();
  arena.execute([&] {
    tbb::parallel_for(
        tbb::blocked_range<long>(0, 2, 1),
        [&](const tbb::blocked_range<long>& r) {
          hb.ChunkBegins();
          // Both chunks on their own threads at once where TBB allows it; the
          // relaxed counter gives TSan no ordering between them.
          arrived.fetch_add(1, std::memory_order_relaxed);
          const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
          while (arrived.load(std::memory_order_relaxed) < 2 && std::chrono::steady_clock::now() < until) {
            std::this_thread::yield();
          }
          for (long c = r.begin(); c != r.end(); ++c) PlantedRace(c);
          hb.ChunkEnds();
        },
        tbb::simple_partitioner());
  });
  hb.AfterLoop();
  std::printf("planted counter %ld, chunks met: %s\n", planted_counter,
              arrived.load(std::memory_order_relaxed) == 2 ? "yes" : "no");
  return 0;
}
