// Turns per second of the timing backend's virtual-time scheduler, next to
// the bare hand-off it is built on, in the same run.
//
// A 64:8 run on the timing backend hands the turn between its 72 threads
// ~10^4 times a clock; on this VM a thread switch is ~10 us, so the
// scheduler's own cost per turn is what a large emulation's wall time is
// made of. Each segment runs `world` threads twice:
//   - scheduler: every thread Joins, then Yields kTurnsPerThread times at a
//     pseudo-random later virtual time (so the turn goes to another thread
//     most times), writing its own memory and one other rank's (so idle
//     tracking has work), then Leaves;
//   - hand-off: the same threads pass a token through a condition variable
//     each, in the order the scheduler run granted the turns (its trace),
//     with nothing else: the floor for any scheduler of OS threads.
// vs_handoff is the median over segments of (scheduler turns/s) over
// (hand-off turns/s) in the pass right after it: 1 would be a scheduler that
// costs nothing beyond the switch. Pairing adjacent passes keeps this VM's
// minute-to-minute swings out of the ratio.
//
//   build/tests/bench/scheduler_bench --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "backends/timing/virtual_time_scheduler.h"

namespace stalelearn::backends::timing {
namespace {

constexpr int kTurnsPerThread = 200;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

// One scheduler pass: returns seconds and fills `trace` with the grants.
double SchedulerPass(int world, std::vector<VirtualTimeScheduler::Grant>& trace) {
  VirtualTimeScheduler scheduler(world, std::chrono::milliseconds(60000));
  scheduler.set_tracing(true);
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&scheduler, world, r] {
      std::vector<char> wrote(static_cast<std::size_t>(world), 0);
      transport::VirtualTime now{};
      if (!scheduler.Join(r, now).ok()) return;
      std::uint64_t x = 0x9E3779B97F4A7C15ull * static_cast<std::uint64_t>(r + 1);
      for (int i = 0; i < kTurnsPerThread; ++i) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;  // xorshift: a step of 1..1024 ns
        now += transport::VirtualDuration(1000 + static_cast<std::int64_t>(x % 1024) * 1000);
        std::fill(wrote.begin(), wrote.end(), 0);
        wrote[static_cast<std::size_t>(r)] = 1;
        wrote[static_cast<std::size_t>(x % static_cast<std::uint64_t>(world))] = 1;
        if (!scheduler.Yield(r, now, VirtualTimeScheduler::Effect::kMayWrite, wrote).ok()) return;
      }
      scheduler.Leave(r);
    });
  }
  for (std::thread& t : threads) t.join();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  trace = scheduler.grants();
  return seconds;
}

// The bare hand-off: the token visits the threads in `trace`'s order.
double HandoffPass(int world, const std::vector<VirtualTimeScheduler::Grant>& trace) {
  std::mutex mutex;
  std::vector<std::condition_variable> turn(static_cast<std::size_t>(world));
  std::size_t at = 0;
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      std::unique_lock lock(mutex);
      while (true) {
        turn[static_cast<std::size_t>(r)].wait(lock, [&] { return at >= trace.size() || trace[at].rank == r; });
        if (at >= trace.size()) return;
        ++at;
        if (at >= trace.size()) {
          for (auto& t : turn) t.notify_all();
          return;
        }
        const auto next = static_cast<std::size_t>(trace[at].rank);
        lock.unlock();
        turn[next].notify_one();
        lock.lock();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void BM_SchedulerTurns(benchmark::State& state) {
  const auto world = static_cast<int>(state.range(0));
  std::vector<double> ratios;
  std::vector<double> switches;
  double turns = 0, seconds = 0;
  std::vector<VirtualTimeScheduler::Grant> trace;
  for (auto _ : state) {
    const double s = SchedulerPass(world, trace);
    state.PauseTiming();
    // Grants to the rank that already held the turn switch no thread.
    double handed = 0;
    for (std::size_t i = 1; i < trace.size(); ++i) handed += trace[i].rank != trace[i - 1].rank ? 1 : 0;
    const double h = HandoffPass(world, trace);
    state.ResumeTiming();
    turns += static_cast<double>(trace.size());
    seconds += s;
    ratios.push_back((static_cast<double>(trace.size()) / s) / (static_cast<double>(trace.size()) / h));
    switches.push_back(handed / static_cast<double>(trace.size()));
  }
  state.counters["turns_per_second"] = turns / std::max(seconds, 1e-9);
  state.counters["switch_fraction"] = Median(switches);
  state.counters["vs_handoff"] = Median(ratios);
}
BENCHMARK(BM_SchedulerTurns)->Arg(8)->Arg(72)->ArgName("world")->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace stalelearn::backends::timing

BENCHMARK_MAIN();
