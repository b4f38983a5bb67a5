// Which world rank plays which role. With M memory ranks in a world of N:
// MEMORY_LAST makes ranks N-M..N-1 the memory ranks, MEMORY_FIRST ranks
// 0..M-1; the rest are compute ranks, numbered in rank order. In ALLREDUCE
// mode every rank computes (no memory ranks).
// Immutable value; thread-safe.
#pragma once

#include <vector>

#include "framework/core/status.h"
#include "framework/model/rank_index.h"
#include "framework/proto/config.pb.h"
#include "framework/transport/types.h"

namespace stalelearn::runtime {

enum class Role { kCompute, kMemory };
const char* RoleName(Role role);

class RoleMap {
 public:
  // kInvalidArgument unless 0 <= memory_ranks < world_size.
  static Result<RoleMap> Make(int world_size, int memory_ranks, proto::Placement placement);

  int world_size() const { return static_cast<int>(roles_.size()); }
  int compute_ranks() const { return static_cast<int>(compute_.size()); }
  int memory_ranks() const { return static_cast<int>(memory_.size()); }

  Role role(transport::Rank r) const { return roles_[r.value]; }
  // Only for ranks of that role (asserted).
  model::ComputeIndex compute_index(transport::Rank r) const;
  model::MemoryIndex memory_index(transport::Rank r) const;
  transport::Rank compute_rank(model::ComputeIndex c) const { return compute_[c.value]; }
  transport::Rank memory_rank(model::MemoryIndex m) const { return memory_[m.value]; }

 private:
  std::vector<Role> roles_;
  std::vector<int> index_;  // index inside its role
  std::vector<transport::Rank> compute_;
  std::vector<transport::Rank> memory_;
};

}  // namespace stalelearn::runtime
