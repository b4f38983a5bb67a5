// Merge throughput of each merge policy (rows merged per second, one merge
// thread), at row widths 20 and 1024, next to a STREAM triad in the same run.
// A window is 4 batches of about 256 KiB each (as a PollOnce pass might see);
// rows are random and distinct within a batch, in increasing order (as
// Replica::DrainDeltasInto sends them). The master is allocated as a memory
// rank's is (model::RowBlock: huge pages where the kernel gives them).
//
// Against the memory system: the triad (a[i] = a[i] + s * c[i], a = the
// master shard, c = the batches' delta values) runs on the same buffers, one
// thread, interleaved with the merge: every segment of kWindowsPerSegment
// merge windows is followed by one triad pass, both timed in thread CPU
// seconds. vs_triad is the median over segments of (the merge's counted
// bytes per second: read delta, read + write master, the triad's 3 streams)
// over (the triad's bytes per second in the pass right after it). Pairing
// adjacent measurements keeps this VM's minute-to-minute swings (+-20% on
// either alone) out of the ratio. The merge walks random rows, the triad
// streams: vs_triad >= 0.6 for sum is the target.
//
//   build/tests/bench/merge_bench --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <time.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "framework/core/error.h"
#include "framework/sync/batch_codec.h"
#include "framework/sync/merge_policy.h"
#include "framework/sync/shard_merger.h"

namespace stalelearn::sync {
namespace {

constexpr int kBatchesPerWindow = 4;
constexpr int kDistinctBatches = 32;  // cycled through, so no step repeats its inputs exactly
constexpr std::size_t kMasterBytes = 16 << 20;  // beyond the caches, as a real shard
constexpr std::size_t kBatchBytes = 256 << 10;

const char* const kPolicies[] = {"sum", "average", "adagrad", "adam"};

// Encoded and decoded batches of one table, kept alive together.
struct Batches {
  std::vector<std::vector<std::byte>> bytes;
  std::vector<DecodedBatch> decoded;
  std::int64_t rows_per_batch = 0;
};

Batches MakeBatches(const model::ModelLayout& layout) {
  const model::TableSpec& table = layout.tables()[0];
  Batches b;
  b.rows_per_batch = std::max<std::int64_t>(
      1, static_cast<std::int64_t>(kBatchBytes / (table.row_bytes() + kEntryPrefixBytes)));
  std::mt19937_64 rng(1);
  std::normal_distribution<float> value(0.0f, 0.01f);
  std::vector<std::int64_t> rows(static_cast<std::size_t>(table.rows));
  std::iota(rows.begin(), rows.end(), 0);
  std::vector<float> delta(table.width);
  for (int k = 0; k < kDistinctBatches; ++k) {
    std::shuffle(rows.begin(), rows.end(), rng);
    // In increasing row order, as compute ranks send them (Replica::DrainDeltasInto).
    std::sort(rows.begin(), rows.begin() + b.rows_per_batch);
    BatchEncoder encoder(layout.tables());
    for (std::int64_t i = 0; i < b.rows_per_batch; ++i) {
      for (float& d : delta) d = value(rng);
      encoder.Add(model::TableId{0}, model::RowId{rows[i]}, std::as_bytes(std::span(delta)));
    }
    b.bytes.push_back(encoder.Seal(1, 0, kEndOfClock));
  }
  for (const auto& bytes : b.bytes) {
    b.decoded.push_back(ValueOrThrow(DecodeBatch(bytes, 1, layout, model::MemoryIndex{0})));
  }
  return b;
}

double ThreadCpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// The batches' delta values, gathered once: the triad's c stream.
std::vector<float> GatherDeltas(const Batches& batches, std::int32_t width) {
  std::vector<float> deltas;
  for (const DecodedBatch& batch : batches.decoded) {
    for (const DecodedEntry& e : batch.entries) {
      const std::size_t at = deltas.size();
      deltas.resize(at + static_cast<std::size_t>(width));
      std::memcpy(deltas.data() + at, e.delta, static_cast<std::size_t>(width) * sizeof(float));
    }
  }
  return deltas;
}

// One triad pass a[i] = a[i] + s * c[i] over the whole master (c cycled), in
// bytes per thread CPU second (3 x 4 bytes per element, as STREAM counts).
double TriadPass(std::span<float> master, std::span<const float> deltas) {
  const double start = ThreadCpuSeconds();
  for (std::size_t at = 0; at < master.size();) {
    const std::size_t n = std::min(deltas.size(), master.size() - at);
    float* __restrict a = master.data() + at;
    const float* __restrict c = deltas.data();
    for (std::size_t i = 0; i < n; ++i) a[i] = a[i] + 0.5f * c[i];
    at += n;
  }
  benchmark::ClobberMemory();
  return 3.0 * sizeof(float) * static_cast<double>(master.size()) / (ThreadCpuSeconds() - start);
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Merge windows timed per segment before each triad pass (~10 ms at width 20).
constexpr int kWindowsPerSegment = 64;

// Args: policy index into kPolicies, row width.
void BM_Merge(benchmark::State& state) {
  const std::string policy = kPolicies[state.range(0)];
  const auto width = static_cast<std::int32_t>(state.range(1));
  const auto rows = static_cast<std::int64_t>(kMasterBytes / (width * model::kElementBytes));
  const model::ModelLayout layout({{"w", model::ElementType::kFloat32, rows, width}}, 1,
                                  model::PartitionScheme::kRange);
  MergePolicySpec spec;
  spec.name = policy;
  ShardMerger merger(layout, model::MemoryIndex{0}, 1,
                     ValueOrThrow(CreateMergePolicies({spec}, layout, model::MemoryIndex{0})));
  const Batches batches = MakeBatches(layout);
  const std::vector<float> deltas = GatherDeltas(batches, width);
  const std::span<float> master(merger.mutable_master()[0].FloatRow(0).data(), static_cast<std::size_t>(rows) * width);
  TriadPass(master, deltas);  // warm: the master in the caches it fits, pages touched
  std::vector<double> ratios;
  std::vector<double> triads;
  std::size_t next = 0;
  double bytes_counted = 0;
  double segment_bytes = 0;
  int segment_windows = 0;
  double segment_start = ThreadCpuSeconds();
  for (auto _ : state) {
    merger.BeginWindow();
    for (int k = 0; k < kBatchesPerWindow; ++k) {
      segment_bytes += ValueOrThrow(merger.Merge(batches.decoded[next])).bytes;
      next = (next + 1) % batches.decoded.size();
    }
    segment_bytes += merger.EndWindow().bytes;
    if (++segment_windows == kWindowsPerSegment) {
      const double merge_rate = segment_bytes / (ThreadCpuSeconds() - segment_start);
      state.PauseTiming();
      const double triad = TriadPass(master, deltas);
      state.ResumeTiming();
      ratios.push_back(merge_rate / triad);
      triads.push_back(triad);
      bytes_counted += segment_bytes;
      segment_bytes = 0;
      segment_windows = 0;
      segment_start = ThreadCpuSeconds();
    }
  }
  bytes_counted += segment_bytes;
  benchmark::DoNotOptimize(merger.master()[0].FloatRow(0)[0]);
  state.SetItemsProcessed(state.iterations() * kBatchesPerWindow * batches.rows_per_batch);
  state.SetLabel(policy + " w" + std::to_string(width));
  // Bytes the policy says it moved (master, delta and state), per second.
  state.counters["counted_bytes"] = benchmark::Counter(bytes_counted, benchmark::Counter::kIsRate);
  state.counters["triad_bytes_per_second"] = Median(triads);
  state.counters["segments"] = static_cast<double>(ratios.size());
  state.counters["vs_triad"] = Median(ratios);
}

BENCHMARK(BM_Merge)->ArgsProduct({{0, 1, 2, 3}, {20, 1024}})->ArgNames({"policy", "width"})->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace stalelearn::sync

BENCHMARK_MAIN();
