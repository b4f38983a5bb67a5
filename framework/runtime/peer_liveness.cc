#include "framework/runtime/peer_liveness.h"

#include "framework/core/planted_defect.h"

#include <fmt/format.h>

#include "framework/core/log.h"
#include "framework/sync/ring_poller.h"
#include "framework/sync/wait_until.h"
#include "framework/transport/transport.h"

namespace stalelearn::runtime {

HeartbeatSender::HeartbeatSender(transport::Transport& transport, std::vector<const transport::RemoteRegion*> rings,
                                 sync::RingGeometry geometry)
    : transport_(transport), rings_(std::move(rings)), geometry_(geometry) {
  thread_ = std::thread([this] {
    std::unique_lock lock(mutex_);
    while (!stop_) {
      lock.unlock();
      Beat();
      lock.lock();
      stop_signal_.wait_for(lock, kHeartbeatPeriod, [this] { return stop_; });
    }
  });
}

HeartbeatSender::~HeartbeatSender() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  stop_signal_.notify_all();
  thread_.join();
}

void HeartbeatSender::Beat() {
  ++beats_;
  for (const transport::RemoteRegion* ring : rings_) {
    // A failed beat is only a missed beat: the main thread sees the same
    // transport errors and reports them.
    Result<transport::RequestPtr> put = transport_.Put(&beats_, sizeof beats_, *ring, geometry_.heartbeat_word_offset());
    if (!put.ok()) continue;
    (void)(*put)->Wait(std::chrono::seconds(5));
    (void)transport_.Flush(ring->owner(), std::chrono::seconds(5));
  }
}

DeadRankDetector::DeadRankDetector(std::vector<transport::MemoryRegion*> rings, sync::RingGeometry geometry,
                                   std::chrono::duration<double> dead_after)
    : rings_(std::move(rings)),
      geometry_(geometry),
      dead_after_(dead_after),
      last_beat_(rings_.size(), 0),
      last_change_(rings_.size()),
      seen_(rings_.size(), false) {}

std::vector<model::ComputeIndex> DeadRankDetector::Check(const std::vector<bool>& watched) {
  const auto now = std::chrono::steady_clock::now();
  std::vector<model::ComputeIndex> dead;
  for (std::size_t c = 0; c < rings_.size(); ++c) {
    if (!watched[c]) continue;
    const std::uint64_t beat = transport::LoadAcquire64(rings_[c]->data() + geometry_.heartbeat_word_offset());
    if (!seen_[c] || beat != last_beat_[c]) {
      seen_[c] = true;
      last_beat_[c] = beat;
      last_change_[c] = now;
      continue;
    }
    if (DefectPlanted(PlantedDefect::kDeadRankNeverDropped)) continue;
    if (now - last_change_[c] > dead_after_) dead.push_back(model::ComputeIndex{static_cast<int>(c)});
  }
  return dead;
}

DeadRankAwareMode::DeadRankAwareMode(const RankEnv& env, std::unique_ptr<ConsistencyMode> inner,
                                     std::vector<const transport::RemoteRegion*> published,
                                     sync::PublishedGeometry geometry,
                                     std::function<void(std::int64_t)> before_clock)
    : env_(env),
      inner_(std::move(inner)),
      clocks_(env.transport, std::move(published), geometry, env.wait),
      before_clock_(std::move(before_clock)) {}

Status DeadRankAwareMode::Finish(std::uint64_t total_clocks) {
  total_clocks_ = total_clocks;
  return inner_->Finish(total_clocks);
}

Status DeadRankAwareMode::Release() {
  const auto settled = [&]() -> Result<bool> {
    STALELEARN_RETURN_IF_ERROR(clocks_.Refresh());
    for (int m = 0; m < clocks_.memory_ranks(); ++m) {
      for (int c = 0; c < clocks_.compute_ranks(); ++c) {
        if (clocks_.merged_clock(model::MemoryIndex{m}, model::ComputeIndex{c}) < total_clocks_) return false;
      }
    }
    return true;
  };
  STALELEARN_RETURN_IF_ERROR(sync::WaitUntil(env_.wait, env_.transport, settled, [&] {
                               return fmt::format("every compute rank finished or dropped as dead (clock {})",
                                                  total_clocks_);
                             }).status());
  for (int c = 0; c < clocks_.compute_ranks(); ++c) {
    for (int m = 0; m < clocks_.memory_ranks(); ++m) {
      if (clocks_.merged_clock(model::MemoryIndex{m}, model::ComputeIndex{c}) == sync::RingPoller::kDeadClock) {
        dead_.push_back(model::ComputeIndex{c});
        break;
      }
    }
  }
  if (on_settled_) STALELEARN_RETURN_IF_ERROR(on_settled_(dead_));
  return inner_->Release();
}

}  // namespace stalelearn::runtime
