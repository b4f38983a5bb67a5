#include "framework/runtime/memory_rank.h"

#include <fmt/format.h>

#include "framework/sync/backoff.h"

namespace stalelearn::runtime {
namespace {

std::vector<transport::MemoryRegion*> RawRings(const MemoryEndpoints& e) {
  std::vector<transport::MemoryRegion*> rings;
  for (const auto& r : e.rings) rings.push_back(r.get());
  return rings;
}

}  // namespace

MemoryRank::MemoryRank(const RankEnv& env, MemoryEndpoints endpoints, const DataPlaneGeometry& geometry)
    : env_(env),
      me_(env.roles.memory_index(env.transport.rank())),
      endpoints_(std::move(endpoints)),
      merger_(env.layout, me_, env.config.training().threads_per_rank()),
      publisher_(*endpoints_.published, geometry.published[me_.value], env.layout) {
  poller_ = std::make_unique<sync::RingPoller>(env.layout, me_, geometry.ring, RawRings(endpoints_),
                                               *endpoints_.published, geometry.published[me_.value], merger_);
  if (env.cost_sink != nullptr) {
    poller_->set_merge_observer([sink = env.cost_sink](const metrics::WorkCounters& w) { sink->ChargeMerge(w); });
  }
}

void MemoryRank::PublishInitial() {
  InitializeShard(env_.app, env_.layout, me_, merger_.mutable_master());
  publisher_.Publish(merger_.master(), *poller_);
}

Result<MemoryRankResult> MemoryRank::Run() {
  sync::IdleBackoff backoff(env_.wait.backoff);
  auto last_work = std::chrono::steady_clock::now();
  while (true) {
    env_.transport.Progress();
    const bool paused = env_.hooks.merging_paused && env_.hooks.merging_paused(me_);
    const int consumed = paused ? 0 : poller_->PollOnce();
    if (consumed > 0) {
      // Publish after every pass that merged something: waiting compute ranks
      // see new clocks as soon as possible.
      publisher_.Publish(merger_.master(), *poller_);
      backoff.Reset();
      last_work = std::chrono::steady_clock::now();
      continue;
    }
    if (!paused && poller_->AllFinished()) break;
    if (std::chrono::steady_clock::now() - last_work > env_.wait.timeout) {
      return TimeoutError(fmt::format("memory rank {} received no batch for the wait limit; some compute rank "
                                      "stopped without finishing",
                                      me_.value));
    }
    backoff.Idle();
  }
  return MemoryRankResult{poller_->counters(), publisher_.generation()};
}

}  // namespace stalelearn::runtime
