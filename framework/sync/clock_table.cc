#include "framework/sync/clock_table.h"

#include <algorithm>
#include <cstring>
#include <limits>

namespace stalelearn::sync {

ClockTable::ClockTable(transport::Transport& transport, std::vector<const transport::RemoteRegion*> published,
                       PublishedGeometry geometry, WaitOptions wait)
    : transport_(transport), published_(std::move(published)), geometry_(geometry), wait_(wait) {
  blocks_.assign(published_.size(), std::vector<std::byte>(geometry_.control_bytes()));
}

Status ClockTable::Refresh() { return RefreshOnly({}); }

bool ClockTable::Selects(std::span<const std::uint8_t> which, std::size_t m) {
  return which.empty() || (m < which.size() && which[m] != 0);
}

Status ClockTable::RefreshOnly(std::span<const std::uint8_t> which) {
  STALELEARN_RETURN_IF_ERROR(BeginRefreshOnly(which));
  return TakeRefresh(/*wait=*/true).status();
}

Status ClockTable::BeginRefreshOnly(std::span<const std::uint8_t> which) {
  if (refreshing()) return FailedPrecondition("ClockTable: a refresh begun while another is in flight");
  which_.assign(which.begin(), which.end());
  for (std::size_t m = 0; m < published_.size(); ++m) {
    if (!Selects(which_, m)) continue;
    STALELEARN_ASSIGN_OR_RETURN(transport::RequestPtr r,
                                transport_.Get(blocks_[m].data(), blocks_[m].size(), *published_[m], 0));
    requests_.push_back(std::move(r));
  }
  return Status::Ok();
}

Result<bool> ClockTable::TakeRefresh(bool wait) {
  if (!refreshing()) return FailedPrecondition("ClockTable::TakeRefresh without a refresh begun");
  if (wait) STALELEARN_RETURN_IF_ERROR(Settle());
  std::erase_if(requests_, [](const transport::RequestPtr& r) { return r->Test(); });
  if (refreshing()) return false;
  STALELEARN_RETURN_IF_ERROR(Took());
  return true;
}

Status ClockTable::Settle() {
  for (transport::RequestPtr& r : requests_) STALELEARN_RETURN_IF_ERROR(r->Wait(wait_.timeout));
  requests_.clear();
  return Status::Ok();
}

Status ClockTable::Took() {
  // What was read is known no earlier than it can have arrived (virtual time).
  transport::VirtualTime visible{};
  for (std::size_t m = 0; m < published_.size(); ++m) {
    if (!Selects(which_, m)) continue;
    const auto published_at = static_cast<std::int64_t>(
        Word(model::MemoryIndex{static_cast<int>(m)}, geometry_.control_published_at_offset()));
    visible = std::max(visible, wait_.time->GetVisibleAt(transport::VirtualTimeFromPs(published_at),
                                                         geometry_.control_bytes()));
  }
  return wait_.time->AdvanceTo(visible);
}

std::uint64_t ClockTable::Word(model::MemoryIndex m, std::size_t offset) const {
  std::uint64_t w;
  std::memcpy(&w, blocks_[m.value].data() + offset, sizeof w);
  return w;
}

ClockTable::Slowest ClockTable::SlowestOther(model::ComputeIndex except, std::span<const std::uint8_t> which) const {
  Slowest slowest{except, std::numeric_limits<std::uint64_t>::max()};
  for (int c = 0; c < compute_ranks(); ++c) {
    if (c == except.value) continue;
    const Slowest of = SlowestOf(model::ComputeIndex{c}, which);
    if (of.merged_clock < slowest.merged_clock) slowest = of;
  }
  return slowest;
}

ClockTable::Slowest ClockTable::SlowestOf(model::ComputeIndex rank, std::span<const std::uint8_t> which) const {
  Slowest slowest{rank, std::numeric_limits<std::uint64_t>::max()};
  for (int m = 0; m < memory_ranks(); ++m) {
    if (!Selects(which, static_cast<std::size_t>(m))) continue;
    const std::uint64_t clock = merged_clock(model::MemoryIndex{m}, rank);
    if (clock < slowest.merged_clock) slowest = {rank, clock, model::MemoryIndex{m}};
  }
  return slowest;
}

void ClockTable::WaitOnlyFor(const Slowest& slowest) const {
  if (slowest.rank.value < 0 || slowest.memory.value < 0 || slowest.memory.value >= memory_ranks()) {
    return;
  }
  // Refresh reads each block from offset 0 of the published region.
  const std::size_t offset = geometry_.merged_clock_offset(slowest.rank);
  wait_.time->WaitOnlyFor(*published_[slowest.memory.value], offset, blocks_[slowest.memory.value].data() + offset,
                          sizeof(std::uint64_t));
}

std::uint64_t MinMergedClockOfOthers(const std::vector<std::vector<std::uint64_t>>& merged_clock_by_memory,
                                     model::ComputeIndex except) {
  std::uint64_t min = std::numeric_limits<std::uint64_t>::max();
  for (const auto& clocks : merged_clock_by_memory) min = std::min(min, MinMergedClockOfOthers(clocks, except));
  return min;
}

std::uint64_t MinMergedClockOfOthers(std::span<const std::uint64_t> merged_clock, model::ComputeIndex except) {
  std::uint64_t min = std::numeric_limits<std::uint64_t>::max();
  for (std::size_t c = 0; c < merged_clock.size(); ++c) {
    if (static_cast<int>(c) != except.value && merged_clock[c] < min) min = merged_clock[c];
  }
  return min;
}

}  // namespace stalelearn::sync
