// The prices of cost_model.h checked analytically: each expected value is the
// formula worked out by hand (numbers in the comments) or evaluated from the
// preset's own fields.
#include "backends/timing/cost_model.h"

#include <gtest/gtest.h>

#include <cmath>

#include "backends/timing/presets.h"
#include "framework/core/error.h"

namespace stalelearn::backends::timing {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::nanoseconds;

template <class Preset>
Preset Parse(const std::string& text) {
  Preset preset;
  ThrowIfError(ParsePreset(text, "test.pbtxt", "", preset));
  return preset;
}

std::string Q(double value) { return "{ value: " + std::to_string(value) + " tag: ESTIMATE source: \"test\" }"; }

// latency 1 us, 1 GB/s, overhead 0.1 us.
const char* const kLink = R"pb(
  name: "l" latency_ns { value: 1000 tag: ESTIMATE source: "t" }
  bandwidth_gb_per_s { value: 1 tag: ESTIMATE source: "t" }
  per_op_overhead_ns { value: 100 tag: ESTIMATE source: "t" })pb";

TEST(LinkModel, TransferIsOverheadPlusLatencyPlusBytesOverBandwidth) {
  LinkModel link(Parse<proto::LinkPreset>(kLink));
  // 1e6 bytes at 1 GB/s = 1 ms.
  EXPECT_EQ(link.Transfer(1'000'000), nanoseconds(100) + microseconds(1) + milliseconds(1));
  EXPECT_EQ(link.Transfer(0), nanoseconds(1100));
  // One byte at 1 GB/s = 1 ns.
  EXPECT_EQ(link.Serialization(1), nanoseconds(1));
  EXPECT_EQ(link.RoundTrip(1'000'000), nanoseconds(100) + microseconds(2) + milliseconds(1));
}

TEST(LinkModel, RingAllReduceIsTwoNMinusOneChunkTransfers) {
  LinkModel link(Parse<proto::LinkPreset>(kLink));
  // 4 ranks, 4e6 bytes: 6 steps of 1e6 bytes, each 0.1 us + 1 us + 1 ms.
  EXPECT_EQ(link.AllReduce(4'000'000, 4), 6 * (nanoseconds(1100) + milliseconds(1)));
  EXPECT_EQ(link.AllReduce(4'000'000, 1), nanoseconds(0));
  // 3 ranks, 10 bytes: chunks of ceil(10/3) = 4 bytes.
  EXPECT_EQ(link.AllReduce(10, 3), 4 * link.Transfer(4));
}

TEST(LinkModel, ShippedLinksPriceExactlyTheirPresetValues) {
  for (const std::string& name : ListPresets(DefaultPresetDir(), PresetKind::kLink)) {
    const proto::LinkPreset preset = ValueOrThrow(LoadLinkPreset(DefaultPresetDir(), name));
    LinkModel link(preset);
    for (std::uint64_t bytes : {0ull, 1ull, 64ull, 4096ull, 1ull << 20, 1ull << 30}) {
      // ps: latency_ns * 1e3 + bytes / (GB/s * 1e9) * 1e12, each rounded.
      const std::int64_t expected = std::llround(preset.per_op_overhead_ns().value() * 1e3) +
                                    std::llround(preset.latency_ns().value() * 1e3) +
                                    std::llround(double(bytes) * 1e3 / preset.bandwidth_gb_per_s().value());
      EXPECT_EQ(link.Transfer(bytes).count(), expected) << name << " " << bytes;
    }
  }
}

TEST(MemoryModel, UpmemMergeIsPipelineBoundForFloatAdds) {
  MemoryModel upmem(ValueOrThrow(LoadMemoryPreset(DefaultPresetDir(), "upmem")));
  // 64 DPUs; per DPU 1000 batch bytes and 200 adds:
  //   read 1000 + 800, write 800 bytes; dma = 1*77 + 1*61 + 0.5*2600 = 1438 cycles
  //   pipeline = 200 * 70 = 14000 cycles -> 14000 / 350 MHz = 40 us
  //   launch 20 us; host->DPU 64000 B / 6.68 GB/s = 9580.838 ns
  const MergeWork work{.bytes = 64'000, .ops = 64 * 200};
  EXPECT_EQ(upmem.Merge(work).count(), 40'000'000 + 20'000'000 + 9'580'838);
}

TEST(MemoryModel, UpmemMergeFollowsTheFormulaWhenDmaBound) {
  // One DPU at 100 MHz, alpha 100/50, beta 1, DMAs of at most 1000 B,
  // 1 instruction per add, no launch, 1 GB/s host->DPU.
  MemoryModel upmem(Parse<proto::MemoryPreset>(
      "name: 'u' atomic_rmw_ns " + Q(10) + " upmem { dpus " + Q(1) + " clock_mhz " + Q(100) +
      " dma_read_alpha_cycles " + Q(100) + " dma_write_alpha_cycles " + Q(50) + " dma_beta_cycles_per_byte " +
      Q(1) + " dma_max_bytes " + Q(1000) + " instructions_per_op " + Q(1) + " launch_overhead_ns " + Q(0) +
      " host_to_dpu_gb_per_s " + Q(1) + " }"));
  // 3000 bytes, 500 adds: read 3000 + 2000 = 5000 B (5 DMAs), write 2000 B (2 DMAs)
  // dma = 5*100 + 2*50 + 7000 = 7600 cycles > pipeline 500 -> 76 us at 100 MHz
  // host->DPU 3000 B at 1 GB/s = 3 us
  EXPECT_EQ(upmem.Merge({.bytes = 3000, .ops = 500}), microseconds(79));
  EXPECT_EQ(upmem.AtomicRmw(), nanoseconds(10));
}

const std::string kHmc = "name: 'h' atomic_rmw_ns " + Q(50) + " hmc { vaults " + Q(4) + " banks_per_vault " + Q(2) +
                         " atomic_request_bytes " + Q(16) + " internal_bandwidth_gb_per_s " + Q(10) + " }";

TEST(MemoryModel, HmcMergeIsVaultParallelAtomics) {
  MemoryModel hmc(Parse<proto::MemoryPreset>(kHmc));
  // 8 RMWs in flight: 80 adds -> 10 rounds x 50 ns = 500 ns;
  // traffic 0 + 2*80*16 = 2560 B at 10 GB/s = 256 ns -> latency bound.
  EXPECT_EQ(hmc.Merge({.bytes = 0, .ops = 80}), nanoseconds(500));
  // 81 adds -> 11 rounds.
  EXPECT_EQ(hmc.Merge({.bytes = 0, .ops = 81}), nanoseconds(550));
  // Bandwidth bound: 100000 batch bytes + 2560 = 102560 B at 10 GB/s = 10256 ns.
  EXPECT_EQ(hmc.Merge({.bytes = 100'000, .ops = 80}), nanoseconds(10'256));
}

TEST(MemoryModel, HbmPimMergeIsColumnCommandsOverUnits) {
  MemoryModel pim(Parse<proto::MemoryPreset>(
      "name: 'p' atomic_rmw_ns " + Q(70) + " hbm_pim { pim_units " + Q(2) + " lanes_per_unit " + Q(16) +
      " lane_bytes " + Q(2) + " command_spacing_ns " + Q(4) + " commands_per_column_op " + Q(3) +
      " mode_switch_ns " + Q(100) + " host_bandwidth_gb_per_s " + Q(2) + " }"));
  // 32-B columns hold 8 elements: 80 adds = 10 columns, 5 per unit x 3 x 4 ns = 60 ns;
  // + mode switch 100 ns + 1000 B at 2 GB/s = 500 ns.
  EXPECT_EQ(pim.Merge({.bytes = 1000, .ops = 80}), nanoseconds(660));
}

TEST(MemoryModel, HostDramMergeIsBandwidthBound) {
  MemoryModel dram(Parse<proto::MemoryPreset>("name: 'd' atomic_rmw_ns " + Q(90) +
                                              " dram { bandwidth_gb_per_s " + Q(10) + " }"));
  // 1000 + 2*250*4 = 3000 B at 10 GB/s = 300 ns.
  EXPECT_EQ(dram.Merge({.bytes = 1000, .ops = 250}), nanoseconds(300));
  // Without a measured host path, rows cost nothing.
  EXPECT_EQ(dram.Merge({.bytes = 1000, .ops = 250, .rows = 50}), nanoseconds(300));
}

// A calibrated host memory prices the data plane around its merge per row
// (decode, change marks, snapshot records); a PIM device does no work for
// rows alone (the memory rank charges them after each poll).
TEST(MemoryModel, CalibratedHostPricesItsDataPlanePerRow) {
  MemoryModel host(Parse<proto::MemoryPreset>("name: 'd' atomic_rmw_ns " + Q(90) + " dram { bandwidth_gb_per_s " +
                                              Q(10) + " host_path_ns_per_row " + Q(20) + " }"));
  EXPECT_EQ(host.Merge({.bytes = 1000, .ops = 250, .rows = 50}), nanoseconds(300 + 50 * 20));
  EXPECT_EQ(host.Merge({.rows = 7}), nanoseconds(140));
  MemoryModel upmem(ValueOrThrow(LoadMemoryPreset(DefaultPresetDir(), "upmem")));
  EXPECT_EQ(upmem.Merge({.rows = 7}), nanoseconds(0));
  EXPECT_GT(upmem.Merge({.bytes = 8, .ops = 1, .rows = 7}), nanoseconds(0));
}

TEST(ComputeModel, PricesFlopsBytesAndDivergentAccesses) {
  ComputeModel gpu(Parse<proto::ComputePreset>(
      "name: 'g' peak_gflops " + Q(100) + " memory_bandwidth_gb_per_s " + Q(10) + " transaction_bytes " + Q(128) +
      " memory_latency_ns " + Q(400) + " outstanding_transactions " + Q(4)));
  // Flop bound: 1e6 flops at 100 GFLOP/s = 10 us.
  EXPECT_EQ(gpu.Compute({.flops = 1e6, .bytes = 1000}), microseconds(10));
  // Bandwidth bound: 1e6 bytes at 10 GB/s = 100 us.
  EXPECT_EQ(gpu.Compute({.flops = 1e3, .bytes = 1e6}), microseconds(100));
  // Divergent: 1000 random rows each pay a 128-B transaction: 128000 B / 10 GB/s
  // = 12.8 us; latency 1000 * 400 ns / 4 = 100 us -> latency bound.
  EXPECT_EQ(gpu.Compute({.random_accesses = 1000}), microseconds(100));
}

TEST(ComputeModel, DivergentAccessCostsATransactionNotItsBytes) {
  ComputeModel gtx580(ValueOrThrow(LoadComputePreset(DefaultPresetDir(), "gpu-gtx580")));
  // 10000 rows of 4 bytes read coalesced vs. each by its own lane transaction.
  const auto coalesced = gtx580.Compute({.bytes = 40'000});
  const auto divergent = gtx580.Compute({.random_accesses = 10'000});
  EXPECT_EQ(divergent, BytesAt(10'000 * 128.0, 192.4));
  EXPECT_GT(divergent, 30 * coalesced);
}

// A calibrated kernel (stalelearn calibrate --config) prices samples, not the
// roofline; without the section the roofline stands; a section without its
// number is refused.
TEST(ComputeModel, CalibratedKernelPricesSamplesInPlaceOfTheRoofline) {
  const std::string roofline = "name: 'c' peak_gflops " + Q(1) + " memory_bandwidth_gb_per_s " + Q(1) +
                               " transaction_bytes " + Q(64) + " memory_latency_ns " + Q(100) +
                               " outstanding_transactions " + Q(1);
  const ComputeWork work{.flops = 1000, .bytes = 0, .random_accesses = 0, .samples = 7};
  EXPECT_EQ(ComputeModel(Parse<proto::ComputePreset>(roofline)).Compute(work), nanoseconds(1000));
  const ComputeModel kernel(Parse<proto::ComputePreset>(roofline + " kernel { ns_per_sample " + Q(50) + " }"));
  EXPECT_EQ(kernel.Compute(work), nanoseconds(350));
  EXPECT_EQ(kernel.Compute(ComputeWork{.flops = 1e9}), nanoseconds(0));
  // A refresh's rows: priced only where the kernel's data plane was measured.
  EXPECT_EQ(kernel.Compute(ComputeWork{.rows_refreshed = 10}), nanoseconds(0));
  const ComputeModel refreshing(Parse<proto::ComputePreset>(roofline + " kernel { ns_per_sample " + Q(50) +
                                                            " ns_per_row_refreshed " + Q(30) + " }"));
  EXPECT_EQ(refreshing.Compute(ComputeWork{.samples = 7, .rows_refreshed = 10}), nanoseconds(350 + 300));
  // The first epoch's warm-up: its samples pay the extra on top.
  const ComputeModel warming(Parse<proto::ComputePreset>(roofline + " kernel { ns_per_sample " + Q(50) +
                                                         " first_epoch_ns_per_sample " + Q(20) + " }"));
  EXPECT_EQ(warming.Compute(ComputeWork{.samples = 7, .first_epoch_samples = 7}), nanoseconds(350 + 140));
  EXPECT_EQ(warming.Compute(ComputeWork{.samples = 7}), nanoseconds(350));
  proto::ComputePreset empty;
  const Status status = ParsePreset(roofline + " kernel { }", "k.pbtxt", "", empty);
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("k.pbtxt: field kernel.ns_per_sample: missing"), std::string::npos) << status.message();
}

// Idle costs (stalelearn calibrate): a rank waiting since `since` sees a
// change only at its back-off's next poll: spin rounds, yield rounds, then
// sleeps doubling to the cap, each late by the overshoot.
TEST(ComputeModel, AWaitingRankPollsOnItsBackoffSchedule) {
  const std::string roofline = "name: 'c' peak_gflops " + Q(1) + " memory_bandwidth_gb_per_s " + Q(1) +
                               " transaction_bytes " + Q(64) + " memory_latency_ns " + Q(100) +
                               " outstanding_transactions " + Q(1);
  EXPECT_FALSE(ComputeModel(Parse<proto::ComputePreset>(roofline)).idle().has_value());
  const ComputeModel cpu(Parse<proto::ComputePreset>(roofline + " idle { poll_ns " + Q(1) + " yield_ns " + Q(10) +
                                                     " sleep_overshoot_ns " + Q(50'000) + " }"));
  ASSERT_TRUE(cpu.idle().has_value());
  const Backoff::Policy policy{.spins = 2, .yields = 2, .first_sleep = microseconds(5), .max_sleep = microseconds(20)};
  const transport::VirtualTime since{};
  const auto next = [&](transport::VirtualDuration waited) { return cpu.NextPoll(since, since + waited, policy) - since; };
  EXPECT_EQ(next(transport::VirtualDuration(1500)), nanoseconds(2)) << "spin rounds of 1 ns";
  EXPECT_EQ(next(nanoseconds(2)), nanoseconds(2));
  EXPECT_EQ(next(nanoseconds(3)), nanoseconds(13)) << "then yield rounds of 10 + 1 ns";
  EXPECT_EQ(next(nanoseconds(24)), nanoseconds(24));
  const auto first_sleep = nanoseconds(24) + microseconds(5) + microseconds(50) + nanoseconds(1);
  EXPECT_EQ(next(nanoseconds(25)), first_sleep) << "then a 5 us sleep, 50 us late, and a poll";
  const auto second_sleep = first_sleep + microseconds(10) + microseconds(50) + nanoseconds(1);
  EXPECT_EQ(next(first_sleep + nanoseconds(1)), second_sleep);
  const auto capped = second_sleep + microseconds(20) + microseconds(50) + nanoseconds(1);
  EXPECT_EQ(next(second_sleep + nanoseconds(1)), capped) << "20 us: the cap";
  EXPECT_EQ(next(capped + nanoseconds(1)), capped + (capped - second_sleep)) << "capped sleeps repeat";
  EXPECT_EQ(next(nanoseconds(0)), nanoseconds(0)) << "nothing waited: polls now";
}

}  // namespace
}  // namespace stalelearn::backends::timing
