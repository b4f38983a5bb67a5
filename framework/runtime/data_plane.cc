#include "framework/runtime/data_plane.h"

#include <fmt/format.h>

#include <algorithm>

#include "framework/sync/batch_codec.h"
#include "framework/sync/row_gather.h"

namespace stalelearn::runtime {
namespace {

std::string RingKey(model::ComputeIndex c) { return fmt::format("stalelearn/ring/{}", c.value); }
constexpr std::string_view kPublishedKey = "stalelearn/published";

}  // namespace

Result<DataPlaneGeometry> MakeDataPlaneGeometry(const model::ModelLayout& layout, int compute_ranks, int ring_slots,
                                                std::size_t slot_bytes, std::size_t ring_bytes,
                                                std::size_t reply_bytes) {
  const std::vector<model::TableSpec>& tables = layout.tables();
  std::size_t one_row = 0;           // the largest batch of one entry
  std::size_t whole_shard = sizeof(sync::BatchHeader);  // the largest batch a clock can send
  std::string widest;
  for (std::size_t t = 0; t < tables.size(); ++t) {
    const std::size_t entry = sync::kEntryPrefixBytes + tables[t].row_bytes();
    if (sizeof(sync::BatchHeader) + entry > one_row) {
      one_row = sizeof(sync::BatchHeader) + entry;
      widest = tables[t].name;
    }
    std::int64_t most_rows = 0;
    const model::RowPartition& p = layout.partition(model::TableId{static_cast<std::uint32_t>(t)});
    for (int m = 0; m < layout.memory_ranks(); ++m) most_rows = std::max(most_rows, p.ShardRows(model::MemoryIndex{m}));
    whole_shard += static_cast<std::size_t>(most_rows) * entry;
  }
  if (one_row > slot_bytes) {
    return InvalidArgument(fmt::format("cluster.slot_bytes {} cannot hold one row's delta of table '{}' ({} bytes with "
                                       "the batch header)",
                                       slot_bytes, widest, one_row));
  }
  if (ring_bytes == 0) ring_bytes = kDefaultRingBytes;
  const std::size_t budget =
      ring_bytes / (static_cast<std::size_t>(std::max(compute_ranks, 1)) * static_cast<std::size_t>(ring_slots));
  std::size_t slot = std::min({slot_bytes, budget, whole_shard});
  slot = std::max(sync::RoundUp(std::max(slot, one_row), sync::kCacheLine), std::size_t{4096});
  DataPlaneGeometry g;
  g.ring.slots = ring_slots;
  g.ring.slot_bytes = slot;
  for (int m = 0; m < layout.memory_ranks(); ++m) {
    sync::PublishedGeometry p;
    p.compute_ranks = compute_ranks;
    p.shard_bytes = layout.ShardBytes(model::MemoryIndex{m});
    std::size_t smallest = 0;
    for (const model::TableSpec& t : layout.tables()) {
      smallest = smallest == 0 ? t.row_bytes() : std::min(smallest, t.row_bytes());
    }
    if (smallest > 0) p.min_row_bytes = smallest;
    if (reply_bytes > 0) {
      const std::size_t whole_shard = sizeof(sync::RowReplyHeader) + p.shard_bytes;
      p.reply_bytes = sync::RoundUp(std::min(reply_bytes, whole_shard), sync::kCacheLine);
    }
    g.published.push_back(p);
  }
  return g;
}

std::size_t StripeReplyBytes(const model::ModelLayout& layout, int stripes) {
  const auto n = static_cast<std::size_t>(std::max(stripes, 1));
  constexpr std::size_t k = sync::kGatherAtMostOneIn;
  std::size_t widest = 0;
  for (const model::TableSpec& t : layout.tables()) {
    const std::size_t rows = (static_cast<std::size_t>(t.rows) + n - 1) / n;  // a stripe's
    widest = std::max(widest, (rows + k - 1) / k * t.row_bytes());
  }
  return sizeof(sync::RowReplyHeader) + widest;
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
