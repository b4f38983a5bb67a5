#include "backends/timing/cost_model.h"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace stalelearn::backends::timing {
namespace {

std::uint64_t CeilDiv(std::uint64_t a, std::uint64_t b) { return b == 0 ? 0 : (a + b - 1) / b; }
// Whole-number preset values (validated as such) as integers.
std::uint64_t Count(const proto::Quantity& q) { return static_cast<std::uint64_t>(q.value()); }

}  // namespace

VirtualDuration Picoseconds(double ps) {
  assert(std::isfinite(ps) && ps >= 0);
  return VirtualDuration(static_cast<std::int64_t>(std::llround(ps)));
}

VirtualDuration Nanoseconds(double ns) { return Picoseconds(ns * 1e3); }

// bytes / (gb_per_s * 1e9 B/s) seconds = bytes * 1e3 / gb_per_s picoseconds.
VirtualDuration BytesAt(double bytes, double gb_per_s) { return Picoseconds(bytes * 1e3 / gb_per_s); }

LinkModel::LinkModel(const proto::LinkPreset& preset)
    : name_(preset.name()),
      latency_(Nanoseconds(preset.latency_ns().value())),
      overhead_(Nanoseconds(preset.per_op_overhead_ns().value())),
      gb_per_s_(preset.bandwidth_gb_per_s().value()) {}

VirtualDuration LinkModel::AllReduce(std::uint64_t bytes, int ranks) const {
  if (ranks <= 1) return VirtualDuration(0);
  const auto n = static_cast<std::uint64_t>(ranks);
  return static_cast<std::int64_t>(2 * (n - 1)) * Transfer(CeilDiv(bytes, n));
}

MemoryModel::MemoryModel(const proto::MemoryPreset& preset)
    : name_(preset.name()), atomic_rmw_(Nanoseconds(preset.atomic_rmw_ns().value())), preset_(preset) {}

VirtualDuration MemoryModel::Merge(const MergeWork& work) const {
  // Rows alone (the host path after a poll, MemoryRank) start no device
  // work; any other charge prices the device as it always did.
  const bool device_work = !(work.rows > 0 && work.bytes == 0 && work.ops == 0);
  switch (preset_.device_case()) {
    case proto::MemoryPreset::kUpmem: return device_work ? MergeUpmem(preset_.upmem(), work) : VirtualDuration(0);
    case proto::MemoryPreset::kHmc: return device_work ? MergeHmc(preset_.hmc(), work) : VirtualDuration(0);
    case proto::MemoryPreset::kHbmPim: return device_work ? MergeHbmPim(preset_.hbm_pim(), work) : VirtualDuration(0);
    case proto::MemoryPreset::kDram: return MergeDram(preset_.dram(), work);
    case proto::MemoryPreset::DEVICE_NOT_SET: break;
  }
  assert(false && "MemoryModel built from an unvalidated preset");
  return VirtualDuration(0);
}

VirtualDuration MemoryModel::MergeUpmem(const proto::UpmemModel& m, const MergeWork& work) const {
  const std::uint64_t dpus = Count(m.dpus());
  const std::uint64_t batch_bytes = CeilDiv(work.bytes, dpus);
  const std::uint64_t ops = CeilDiv(work.ops, dpus);
  const std::uint64_t read_bytes = batch_bytes + ops * kElementBytes;  // delta + master
  const std::uint64_t write_bytes = ops * kElementBytes;               // master back
  const std::uint64_t max_dma = Count(m.dma_max_bytes());
  const double dma_cycles = double(CeilDiv(read_bytes, max_dma)) * m.dma_read_alpha_cycles().value() +
                            double(CeilDiv(write_bytes, max_dma)) * m.dma_write_alpha_cycles().value() +
                            m.dma_beta_cycles_per_byte().value() * double(read_bytes + write_bytes);
  const double pipeline_cycles = double(ops) * m.instructions_per_op().value();
  // cycles / (MHz * 1e6 /s) seconds = cycles * 1e6 / MHz picoseconds.
  const VirtualDuration on_dpus = Picoseconds(std::max(dma_cycles, pipeline_cycles) * 1e6 / m.clock_mhz().value());
  return Nanoseconds(m.launch_overhead_ns().value()) + BytesAt(double(work.bytes), m.host_to_dpu_gb_per_s().value()) +
         on_dpus;
}

VirtualDuration MemoryModel::MergeHmc(const proto::HmcModel& m, const MergeWork& work) const {
  const std::uint64_t in_flight = Count(m.vaults()) * Count(m.banks_per_vault());
  const VirtualDuration latency_bound = static_cast<std::int64_t>(CeilDiv(work.ops, in_flight)) * atomic_rmw_;
  const double traffic = double(work.bytes) + 2.0 * double(work.ops) * m.atomic_request_bytes().value();
  return std::max(latency_bound, BytesAt(traffic, m.internal_bandwidth_gb_per_s().value()));
}

VirtualDuration MemoryModel::MergeHbmPim(const proto::HbmPimModel& m, const MergeWork& work) const {
  const std::uint64_t column_bytes = Count(m.lanes_per_unit()) * Count(m.lane_bytes());
  const std::uint64_t elements_per_column = std::max<std::uint64_t>(1, column_bytes / kElementBytes);
  const std::uint64_t columns_per_unit = CeilDiv(CeilDiv(work.ops, elements_per_column), Count(m.pim_units()));
  const double command_ns =
      double(columns_per_unit) * m.commands_per_column_op().value() * m.command_spacing_ns().value();
  return Nanoseconds(m.mode_switch_ns().value()) + BytesAt(double(work.bytes), m.host_bandwidth_gb_per_s().value()) +
         Nanoseconds(command_ns);
}

VirtualDuration MemoryModel::MergeDram(const proto::DramModel& m, const MergeWork& work) const {
  const double traffic = double(work.bytes) + 2.0 * double(work.ops) * double(kElementBytes);
  const double host_path_ns = m.has_host_path_ns_per_row() ? double(work.rows) * m.host_path_ns_per_row().value() : 0;
  return BytesAt(traffic, m.bandwidth_gb_per_s().value()) + Nanoseconds(host_path_ns);
}

ComputeModel::ComputeModel(const proto::ComputePreset& preset) : name_(preset.name()), preset_(preset) {
  if (preset.has_idle()) {
    idle_ = IdleCosts{Nanoseconds(preset.idle().poll_ns().value()), Nanoseconds(preset.idle().yield_ns().value()),
                      Nanoseconds(preset.idle().sleep_overshoot_ns().value())};
    if (preset.idle().has_switch_ns()) idle_->handoff = Nanoseconds(preset.idle().switch_ns().value());
  }
}

VirtualTime ComputeModel::NextPoll(VirtualTime since, VirtualTime now, const Backoff::Policy& policy) const {
  assert(idle_.has_value());
  if (now <= since) return now;
  // Rounds of a fixed length `round` from `start`: how many end by the first
  // poll at or after `now`.
  const auto rounds_to = [now](VirtualTime start, VirtualDuration round) {
    return ((now - start).count() + round.count() - 1) / round.count();
  };
  const VirtualDuration poll = std::max(idle_->poll, VirtualDuration(1));
  // Compared, not multiplied: a policy may spin "forever" (spins = INT64_MAX).
  if (const std::int64_t k = rounds_to(since, poll); k <= policy.spins) return since + k * poll;
  VirtualTime t = since + policy.spins * poll;
  const VirtualDuration yield_round = idle_->yield + poll;
  if (const std::int64_t k = rounds_to(t, yield_round); k <= policy.yields) return t + k * yield_round;
  t += policy.yields * yield_round;
  for (auto sleep = std::chrono::duration_cast<VirtualDuration>(policy.first_sleep);;) {
    const VirtualDuration round = std::max(sleep + idle_->overshoot + poll, VirtualDuration(1));
    const auto longest = std::chrono::duration_cast<VirtualDuration>(policy.max_sleep);
    if (sleep >= longest || sleep.count() <= 0) return t + rounds_to(t, round) * round;  // the cap: fixed rounds
    if (now <= t + round) return t + round;
    t += round;
    sleep = std::min(2 * sleep, longest);
  }
}

VirtualDuration ComputeModel::Compute(const ComputeWork& work) const {
  assert(work.flops >= 0 && work.bytes >= 0 && work.random_accesses >= 0 && work.samples >= 0 &&
         work.rows_refreshed >= 0);
  if (preset_.has_kernel()) {
    const proto::KernelCost& k = preset_.kernel();
    const double refresh_ns = k.has_ns_per_row_refreshed() ? work.rows_refreshed * k.ns_per_row_refreshed().value() : 0;
    const double warmup_ns =
        k.has_first_epoch_ns_per_sample() ? work.first_epoch_samples * k.first_epoch_ns_per_sample().value() : 0;
    return Nanoseconds(work.samples * k.ns_per_sample().value() + warmup_ns + refresh_ns);
  }
  // flops / (GFLOP/s * 1e9) seconds = flops * 1e3 / GFLOP/s picoseconds.
  const VirtualDuration arithmetic = Picoseconds(work.flops * 1e3 / preset_.peak_gflops().value());
  const double traffic = work.bytes + work.random_accesses * preset_.transaction_bytes().value();
  const VirtualDuration memory = BytesAt(traffic, preset_.memory_bandwidth_gb_per_s().value());
  const VirtualDuration latency = Nanoseconds(work.random_accesses * preset_.memory_latency_ns().value() /
                                              preset_.outstanding_transactions().value());
  return std::max({arithmetic, memory, latency});
}

}  // namespace stalelearn::backends::timing
