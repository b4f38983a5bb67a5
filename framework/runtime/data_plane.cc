#include "framework/runtime/data_plane.h"

#include <fmt/format.h>

namespace stalelearn::runtime {
namespace {

std::string RingKey(model::ComputeIndex c) { return fmt::format("stalelearn/ring/{}", c.value); }
constexpr std::string_view kPublishedKey = "stalelearn/published";

}  // namespace

DataPlaneGeometry MakeDataPlaneGeometry(const model::ModelLayout& layout, int compute_ranks, int ring_slots,
                                        std::size_t slot_bytes) {
  DataPlaneGeometry g;
  g.ring.slots = ring_slots;
  g.ring.slot_bytes = sync::RoundUp(slot_bytes, sync::kCacheLine);
  for (int m = 0; m < layout.memory_ranks(); ++m) {
    sync::PublishedGeometry p;
    p.compute_ranks = compute_ranks;
    p.shard_bytes = layout.ShardBytes(model::MemoryIndex{m});
    g.published.push_back(p);
  }
  return g;
}

Result<MemoryEndpoints> RegisterMemoryEndpoints(transport::Transport& transport, transport::Bootstrap& bootstrap,
                                                const RoleMap& roles, model::MemoryIndex me,
                                                const DataPlaneGeometry& geometry) {
  MemoryEndpoints endpoints;
  for (int c = 0; c < roles.compute_ranks(); ++c) {
    STALELEARN_ASSIGN_OR_RETURN(auto ring, transport.Register(geometry.ring.region_bytes(), transport::Access::kAll));
    STALELEARN_RETURN_IF_ERROR(bootstrap.Put(RingKey(model::ComputeIndex{c}), ring->key()));
    endpoints.rings.push_back(std::move(ring));
  }
  STALELEARN_ASSIGN_OR_RETURN(endpoints.published,
                              transport.Register(geometry.published[me.value].region_bytes(),
                                                 transport::Access::kRemoteReadOnly));
  STALELEARN_RETURN_IF_ERROR(bootstrap.Put(kPublishedKey, endpoints.published->key()));
  return endpoints;
}

Result<ComputeEndpoints> ImportComputeEndpoints(transport::Transport& transport, transport::Bootstrap& bootstrap,
                                                const RoleMap& roles, model::ComputeIndex me) {
  ComputeEndpoints endpoints;
  for (int m = 0; m < roles.memory_ranks(); ++m) {
    const transport::Rank owner = roles.memory_rank(model::MemoryIndex{m});
    STALELEARN_ASSIGN_OR_RETURN(transport::Bytes ring_key, bootstrap.Get(owner, RingKey(me)));
    STALELEARN_ASSIGN_OR_RETURN(auto ring, transport.Import(owner, ring_key));
    endpoints.rings.push_back(std::move(ring));
    STALELEARN_ASSIGN_OR_RETURN(transport::Bytes published_key, bootstrap.Get(owner, kPublishedKey));
    STALELEARN_ASSIGN_OR_RETURN(auto published, transport.Import(owner, published_key));
    endpoints.published.push_back(std::move(published));
  }
  return endpoints;
}

}  // namespace stalelearn::runtime
