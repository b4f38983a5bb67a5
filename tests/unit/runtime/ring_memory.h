// Rings of compute ranks as a memory rank holds them, for dead-rank detector
// tests: the heartbeat word is written as the heartbeat thread's put leaves it.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "framework/runtime/peer_liveness.h"
#include "framework/transport/transport.h"

namespace stalelearn::runtime {

// A ring's registered memory, as the memory rank sees it.
class RingMemory final : public transport::MemoryRegion {
 public:
  explicit RingMemory(std::size_t bytes) : bytes_(bytes) {}
  std::byte* data() override { return bytes_.data(); }
  std::size_t size() const override { return bytes_.size(); }
  transport::Access access() const override { return transport::Access::kRemoteWrite; }
  const transport::PackedKey& key() const override { return key_; }

 private:
  std::vector<std::byte> bytes_;
  transport::PackedKey key_;
};

class TestRings {
 public:
  explicit TestRings(int compute_ranks) : beats_(static_cast<std::size_t>(compute_ranks), 0) {
    geometry_.slots = 2;
    geometry_.slot_bytes = 64;
    for (int c = 0; c < compute_ranks; ++c) rings_.push_back(std::make_unique<RingMemory>(geometry_.region_bytes()));
  }
  DeadRankDetector MakeDetector(std::chrono::duration<double> dead_after) {
    std::vector<transport::MemoryRegion*> raw;
    for (auto& r : rings_) raw.push_back(r.get());
    return DeadRankDetector(raw, geometry_, dead_after);
  }
  void Beat(int c) {
    transport::StoreRelease64(rings_[static_cast<std::size_t>(c)]->data() + geometry_.heartbeat_word_offset(),
                              ++beats_[static_cast<std::size_t>(c)]);
  }
  static std::vector<int> Ranks(const std::vector<model::ComputeIndex>& dead) {
    std::vector<int> out;
    for (model::ComputeIndex c : dead) out.push_back(c.value);
    return out;
  }

 private:
  sync::RingGeometry geometry_;
  std::vector<std::unique_ptr<RingMemory>> rings_;
  std::vector<std::uint64_t> beats_;
};

}  // namespace stalelearn::runtime
