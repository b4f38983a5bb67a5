#include "framework/runtime/roles.h"

#include <fmt/format.h>

#include <cassert>
#include <cstdint>

namespace stalelearn::runtime {

const char* RoleName(Role role) { return role == Role::kCompute ? "compute" : "memory"; }

Result<RoleMap> RoleMap::Make(int world_size, int memory_ranks, proto::Placement placement) {
  if (memory_ranks < 0 || memory_ranks >= world_size) {
    return InvalidArgument(fmt::format("cluster.memory_ranks = {} leaves no compute rank in a world of {} ranks",
                                       memory_ranks, world_size));
  }
  RoleMap map;
  const bool memory_first = placement == proto::MEMORY_FIRST;
  // MEMORY_SPREAD: memory rank m is the last of block m of N/M ranks
  // (rank floor((m+1)N/M)-1), so when mpirun fills hosts of equal slots in
  // rank order every host gets its share of memory ranks.
  const auto spread_memory = [&](int r) {
    for (std::int64_t m = 0; m < memory_ranks; ++m) {
      if ((m + 1) * world_size / memory_ranks - 1 == r) return true;
    }
    return false;
  };
  for (int r = 0; r < world_size; ++r) {
    const bool memory = placement == proto::MEMORY_SPREAD ? spread_memory(r)
                        : memory_first                    ? r < memory_ranks
                                                          : r >= world_size - memory_ranks;
    if (memory) {
      map.roles_.push_back(Role::kMemory);
      map.index_.push_back(static_cast<int>(map.memory_.size()));
      map.memory_.push_back(transport::Rank{r});
    } else {
      map.roles_.push_back(Role::kCompute);
      map.index_.push_back(static_cast<int>(map.compute_.size()));
      map.compute_.push_back(transport::Rank{r});
    }
  }
  return map;
}

model::ComputeIndex RoleMap::compute_index(transport::Rank r) const {
  assert(role(r) == Role::kCompute);
  return model::ComputeIndex{index_[r.value]};
}

model::MemoryIndex RoleMap::memory_index(transport::Rank r) const {
  assert(role(r) == Role::kMemory);
  return model::MemoryIndex{index_[r.value]};
}

}  // namespace stalelearn::runtime
