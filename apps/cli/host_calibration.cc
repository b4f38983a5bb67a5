#include "apps/cli/host_calibration.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <limits>
#include <mutex>
#include <numeric>
#include <random>
#include <thread>
#include <vector>

#include "framework/core/error.h"
#include "framework/core/wait.h"
#include "framework/metrics/work_counters.h"
#include "framework/sync/batch_codec.h"
#include "framework/sync/merge_policy.h"
#include "framework/sync/shard_merger.h"

namespace stalelearn::cli {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Keeps a result alive without letting the compiler see through it.
volatile double g_sink = 0;

Measured Peak(bool quick) {
  // 32 independent multiply-adds per step: what this build's vectorised code
  // reaches on one core (no -march: the instructions the apps' kernels get).
  constexpr int kLanes = 32;
  const long steps = quick ? 2'000'000 : 20'000'000;
  volatile float va = 0.9999999f;
  volatile float vb = 1e-7f;
  const float a = va;
  const float b = vb;
  std::vector<double> rates;
  for (int rep = 0; rep < (quick ? 1 : 5); ++rep) {
    alignas(64) float acc[kLanes];
    for (int j = 0; j < kLanes; ++j) acc[j] = 1.0f + static_cast<float>(j);
    const auto start = Clock::now();
    for (long s = 0; s < steps; ++s) {
      for (int j = 0; j < kLanes; ++j) acc[j] = acc[j] * a + b;
    }
    const double seconds = SecondsSince(start);
    g_sink = std::accumulate(acc, acc + kLanes, 0.0);
    rates.push_back(2.0 * kLanes * static_cast<double>(steps) / seconds / 1e9);
  }
  return {Median(rates), fmt::format("median of {} runs of {} x 32 independent float multiply-adds, one core",
                                     rates.size(), steps)};
}

Measured Triad(bool quick) {
  const std::size_t n = quick ? (1u << 20) : (std::size_t{32} << 20);  // floats per array
  std::vector<float> a(n, 1.0f);
  std::vector<float> b(n, 2.0f);
  std::vector<float> c(n, 0.5f);
  std::vector<double> rates;
  for (int rep = 0; rep < (quick ? 2 : 6); ++rep) {
    const auto start = Clock::now();
    float* __restrict pa = a.data();
    const float* __restrict pb = b.data();
    const float* __restrict pc = c.data();
    for (std::size_t i = 0; i < n; ++i) pa[i] = pb[i] + 0.5f * pc[i];
    const double seconds = SecondsSince(start);
    g_sink = a[n / 2];
    if (rep > 0) rates.push_back(3.0 * 4.0 * static_cast<double>(n) / seconds / 1e9);  // the first touches pages
  }
  return {Median(rates), fmt::format("median of {} STREAM triads a = b + s c over 3 x {} MiB of floats, one core "
                                     "(3 x 4 bytes per element)",
                                     rates.size(), n * 4 >> 20)};
}

// Cache lines of a buffer that random accesses reach (far beyond the caches).
struct Lines {
  std::vector<std::uint64_t> words;  // 8 words per 64-byte line
  std::size_t count() const { return words.size() / 8; }
};

Lines MakeLines(bool quick) {
  Lines lines;
  lines.words.assign((quick ? (std::size_t{8} << 20) : (std::size_t{256} << 20)) / 8, 0);
  return lines;
}

Measured Latency(Lines& lines, bool quick) {
  // A pointer chase through one random cycle of all lines (Sattolo): every
  // load depends on the one before.
  const std::size_t n = lines.count();
  std::vector<std::uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  std::mt19937_64 rng(7);
  for (std::size_t i = n - 1; i > 0; --i) std::swap(order[i], order[std::uniform_int_distribution<std::size_t>(0, i - 1)(rng)]);
  for (std::size_t i = 0; i < n; ++i) lines.words[order[i] * 8] = order[(i + 1) % n];
  const long hops = quick ? 200'000 : 4'000'000;
  std::vector<double> ns;
  for (int rep = 0; rep < (quick ? 1 : 3); ++rep) {
    std::uint64_t at = order[0];
    const auto start = Clock::now();
    for (long h = 0; h < hops; ++h) at = lines.words[at * 8];
    ns.push_back(SecondsSince(start) * 1e9 / static_cast<double>(hops));
    g_sink = static_cast<double>(at);
  }
  return {Median(ns), fmt::format("median of {} pointer chases of {} dependent loads over one random cycle of "
                                  "{} MiB of 64-byte lines, one core",
                                  ns.size(), hops, lines.words.size() * 8 >> 20)};
}

std::vector<std::uint32_t> RandomLines(std::size_t lines, std::size_t count) {
  std::vector<std::uint32_t> index(count);
  std::mt19937_64 rng(11);
  std::uniform_int_distribution<std::uint32_t> pick(0, static_cast<std::uint32_t>(lines - 1));
  for (std::uint32_t& i : index) i = pick(rng);
  return index;
}

// Independent random loads: their time each, against the latency, is how
// many misses one core keeps in flight.
Measured Outstanding(const Lines& lines, double latency_ns, bool quick) {
  const std::vector<std::uint32_t> index = RandomLines(lines.count(), quick ? 200'000 : 4'000'000);
  std::vector<double> ns;
  for (int rep = 0; rep < (quick ? 1 : 3); ++rep) {
    std::uint64_t sum = 0;
    const auto start = Clock::now();
    for (const std::uint32_t i : index) sum += lines.words[static_cast<std::size_t>(i) * 8];
    ns.push_back(SecondsSince(start) * 1e9 / static_cast<double>(index.size()));
    g_sink = static_cast<double>(sum);
  }
  const double each = Median(ns);
  return {std::max(1.0, std::round(latency_ns / each)),
          fmt::format("the pointer-chase latency over the median time of one of {} independent random loads "
                      "({:.2f} ns each, {} runs), rounded",
                      index.size(), each, ns.size())};
}

Measured AtomicRmw(Lines& lines, bool quick) {
  const std::vector<std::uint32_t> index = RandomLines(lines.count(), quick ? 100'000 : 2'000'000);
  const auto start = Clock::now();
  for (const std::uint32_t i : index) {
    std::atomic_ref<std::uint64_t>(lines.words[static_cast<std::size_t>(i) * 8]).fetch_add(1, std::memory_order_seq_cst);
  }
  const double ns = SecondsSince(start) * 1e9 / static_cast<double>(index.size());
  return {ns, fmt::format("mean of {} 8-byte atomic fetch-adds at random lines of {} MiB, one core", index.size(),
                          lines.words.size() * 8 >> 20)};
}

// What the dram model divides by its bandwidth for `work`, as a memory rank
// charges it (metrics::ToMergeWork, cost_model.h): batch bytes + 2 x 4 per
// element update.
double ModelBytes(const metrics::WorkCounters& work) {
  const transport::MergeWork merge = metrics::ToMergeWork(work);
  return static_cast<double>(merge.bytes) + 2.0 * 4.0 * static_cast<double>(merge.ops);
}

// The merge kernel the memory ranks run (sync::ShardMerger), on a master far
// of `master_bytes` (beyond the caches, or a small shard in them), fed
// batches of ~256 KiB of random distinct rows in increasing order (as
// compute ranks send them), 4 batches per window.
Measured MergeBandwidth(const std::string& policy, std::int64_t master_bytes, bool quick) {
  constexpr std::int32_t kWidth = 21;  // a float row of 20 factors and a bias
  const std::int64_t rows = master_bytes / (kWidth * 4);
  const model::ModelLayout layout({{"w", model::ElementType::kFloat32, rows, kWidth}}, 1,
                                  model::PartitionScheme::kRange);
  sync::MergePolicySpec spec;
  spec.name = policy;
  sync::ShardMerger merger(layout, model::MemoryIndex{0}, 1,
                           ValueOrThrow(sync::CreateMergePolicies({spec}, layout, model::MemoryIndex{0})));
  // Batches of 256 KiB, or half a cached master (a clock's batch is smaller than the shard).
  const std::int64_t batch_bytes = std::min<std::int64_t>(256 << 10, master_bytes / 2);
  const std::int64_t per_batch = batch_bytes / (kWidth * 4 + static_cast<std::int64_t>(sync::kEntryPrefixBytes));
  std::mt19937_64 rng(3);
  std::normal_distribution<float> value(0.0f, 0.01f);
  std::vector<std::vector<std::byte>> bytes;
  std::vector<std::int64_t> all(static_cast<std::size_t>(rows));
  std::iota(all.begin(), all.end(), 0);
  std::vector<float> delta(kWidth);
  for (int k = 0; k < 16; ++k) {
    std::vector<std::int64_t> picked;
    std::sample(all.begin(), all.end(), std::back_inserter(picked), per_batch, rng);  // sorted: sample keeps order
    sync::BatchEncoder encoder(layout.tables());
    for (const std::int64_t r : picked) {
      for (float& d : delta) d = value(rng);
      encoder.Add(model::TableId{0}, model::RowId{r}, std::as_bytes(std::span(delta)));
    }
    bytes.push_back(encoder.Seal(1, 0, sync::kEndOfClock));
  }
  std::vector<sync::DecodedBatch> batches;
  for (const auto& b : bytes) batches.push_back(ValueOrThrow(sync::DecodeBatch(b, 1, layout, model::MemoryIndex{0})));
  const auto pass = [&](double seconds) {
    double counted = 0;
    std::size_t next = 0;
    const auto start = Clock::now();
    while (SecondsSince(start) < seconds) {
      merger.BeginWindow();
      for (int k = 0; k < 4; ++k) counted += ModelBytes(ValueOrThrow(merger.Merge(batches[next++ % batches.size()])));
      counted += ModelBytes(merger.EndWindow());
    }
    return counted / SecondsSince(start) / 1e9;
  };
  pass(quick ? 0.01 : 0.1);  // pages touched, policy state made
  std::vector<double> rates;
  for (int rep = 0; rep < (quick ? 1 : 5); ++rep) rates.push_back(pass(quick ? 0.02 : 0.15));
  return {Median(rates), fmt::format("median of {} runs of the '{}' merge (sync::ShardMerger, one thread) of "
                                     "{}-KiB batches of random rows of 21 floats into a {} KiB master; bytes as the "
                                     "timing backend prices a merge (batch + 8 per element update, metrics::ToMergeWork)",
                                     rates.size(), policy, batch_bytes >> 10, rows * kWidth * 4 >> 10)};
}

// A thread switch: two threads pass a token back and forth through a
// condition variable each, so every pass wakes one and blocks the other (as
// ranks sharing cores do at each wait); the median of 5 runs, per pass.
Measured HandOff(bool quick) {
  const int passes = quick ? 2000 : 20000;
  std::vector<double> each;
  for (int rep = 0; rep < 5; ++rep) {
    std::mutex mutex;
    std::condition_variable turn[2];
    int holder = 0, passed = 0;
    const auto start = std::chrono::steady_clock::now();
    const auto player = [&](int me) {
      std::unique_lock lock(mutex);
      while (passed < passes) {
        turn[me].wait(lock, [&] { return holder == me || passed >= passes; });
        if (passed >= passes) break;
        holder = 1 - me;
        ++passed;
        lock.unlock();
        turn[1 - me].notify_one();
        lock.lock();
      }
      turn[1 - me].notify_one();
    };
    std::thread other(player, 1);
    player(0);
    other.join();
    each.push_back(SecondsSince(start) * 1e9 / passes);
  }
  return {Median(each), fmt::format("median of 5 runs of {} passes of a token between two threads through a condition "
                                    "variable each (one wakes, one blocks), per pass",
                                    passes)};
}

// The back-off's idle rounds (core/wait.h): a spin round (a poll of an
// acquire load that finds nothing), a yield, and how much longer than asked
// a sleep lasts (timer slack and wake-up; the back-off asks for 5-500 us).
void MeasureIdle(HostCalibration& host, bool quick) {
  std::atomic<std::uint64_t> word{0};
  const Backoff::Policy spins_only{.spins = std::numeric_limits<std::int64_t>::max()};
  Backoff spin(spins_only);
  const int polls = quick ? 100000 : 2000000;
  auto start = std::chrono::steady_clock::now();
  std::uint64_t seen = 0;
  for (int i = 0; i < polls; ++i) {
    seen += word.load(std::memory_order_acquire);
    (void)spin.Idle();
  }
  g_sink = static_cast<double>(seen);
  host.poll_ns = {std::max(0.1, SecondsSince(start) * 1e9 / polls),
                  fmt::format("{} spin rounds of the back-off, each polling an acquire load", polls)};
  std::vector<double> yields;
  for (int rep = 0; rep < 5; ++rep) {
    start = std::chrono::steady_clock::now();
    for (int i = 0; i < (quick ? 1000 : 20000); ++i) std::this_thread::yield();
    yields.push_back(SecondsSince(start) * 1e9 / (quick ? 1000 : 20000));
  }
  host.yield_ns = {Median(yields), "median of 5 runs of std::this_thread::yield() on an idle machine"};
  std::vector<double> over;
  for (const int asked_us : {5, 40, 320}) {
    for (int i = 0; i < (quick ? 3 : 40); ++i) {
      start = std::chrono::steady_clock::now();
      std::this_thread::sleep_for(std::chrono::microseconds(asked_us));
      over.push_back(std::max(0.0, SecondsSince(start) * 1e9 - asked_us * 1e3));
    }
  }
  host.sleep_overshoot_ns = {Median(over), fmt::format("median excess of {} std::this_thread::sleep_for calls of 5, 40 "
                                                       "and 320 us over what they asked",
                                                       over.size())};
  host.switch_ns = HandOff(quick);
}

}  // namespace

proto::Quantity QuantityOf(const Measured& m, const std::string& prefix) {
  proto::Quantity q;
  // 4 significant digits: the file stays readable and its text parses back exactly.
  q.set_value(std::stod(fmt::format("{:.4g}", m.value)));
  q.set_tag(proto::MEASURED);
  q.set_source(fmt::format("{}: {}", prefix, m.method));
  return q;
}

HostCalibration MeasureHost(const HostCalibrationOptions& options) {
  HostCalibration host;
  host.peak_gflops = Peak(options.quick);
  host.bandwidth_gb_per_s = Triad(options.quick);
  const long line = sysconf(_SC_LEVEL1_DCACHE_LINESIZE);
  host.transaction_bytes = {static_cast<double>(line > 0 ? line : 64),
                            line > 0 ? "sysconf(_SC_LEVEL1_DCACHE_LINESIZE): one cache line per random row access"
                                     : "sysconf gave no line size: 64 bytes assumed"};
  Lines lines = MakeLines(options.quick);
  host.latency_ns = Latency(lines, options.quick);
  host.outstanding = Outstanding(lines, host.latency_ns.value, options.quick);
  host.atomic_rmw_ns = AtomicRmw(lines, options.quick);
  MeasureIdle(host, options.quick);
  for (const std::string& policy : options.policies) {
    const std::int64_t large = options.quick ? (std::int64_t{4} << 20) : (std::int64_t{128} << 20);
    host.merges.push_back({policy, false, MergeBandwidth(policy, large, options.quick)});
    host.merges.push_back({policy, true, MergeBandwidth(policy, kCachedMasterBytes, options.quick)});
  }
  return host;
}

proto::ComputePreset ComputePresetOf(const HostCalibration& host, const std::string& name,
                                     const std::string& source_prefix) {
  proto::ComputePreset p;
  p.set_name(name);
  p.set_description(fmt::format("one core of this machine, measured ({})", source_prefix));
  *p.mutable_peak_gflops() = QuantityOf(host.peak_gflops, source_prefix);
  *p.mutable_memory_bandwidth_gb_per_s() = QuantityOf(host.bandwidth_gb_per_s, source_prefix);
  *p.mutable_transaction_bytes() = QuantityOf(host.transaction_bytes, source_prefix);
  *p.mutable_memory_latency_ns() = QuantityOf(host.latency_ns, source_prefix);
  *p.mutable_outstanding_transactions() = QuantityOf(host.outstanding, source_prefix);
  *p.mutable_idle()->mutable_poll_ns() = QuantityOf(host.poll_ns, source_prefix);
  *p.mutable_idle()->mutable_yield_ns() = QuantityOf(host.yield_ns, source_prefix);
  *p.mutable_idle()->mutable_sleep_overshoot_ns() = QuantityOf(host.sleep_overshoot_ns, source_prefix);
  *p.mutable_idle()->mutable_switch_ns() = QuantityOf(host.switch_ns, source_prefix);
  return p;
}

std::string MemoryPresetName(const std::string& prefix, const MergeCalibration& merge) {
  return prefix + "-host" + (merge.cached ? "-cached" : "") + (merge.policy == "sum" ? "" : "-" + merge.policy);
}

double CachedSumBandwidth(const HostCalibration& host) {
  for (const MergeCalibration& merge : host.merges) {
    if (merge.policy == "sum" && merge.cached) return merge.bandwidth_gb_per_s.value;
  }
  return host.merges.empty() ? host.bandwidth_gb_per_s.value : host.merges.front().bandwidth_gb_per_s.value;
}

proto::MemoryPreset MemoryPresetOf(const HostCalibration& host, const MergeCalibration& merge,
                                   const std::optional<Measured>& host_path, const std::string& name,
                                   const std::string& source_prefix) {
  proto::MemoryPreset p;
  p.set_name(name);
  p.set_description(fmt::format("this machine's {} merged by one core with the '{}' policy, measured ({})",
                                merge.cached ? "caches (a shard of 256 KiB)" : "DRAM", merge.policy, source_prefix));
  *p.mutable_atomic_rmw_ns() = QuantityOf(host.atomic_rmw_ns, source_prefix);
  *p.mutable_dram()->mutable_bandwidth_gb_per_s() = QuantityOf(merge.bandwidth_gb_per_s, source_prefix);
  if (host_path) *p.mutable_dram()->mutable_host_path_ns_per_row() = QuantityOf(*host_path, source_prefix);
  return p;
}

}  // namespace stalelearn::cli
