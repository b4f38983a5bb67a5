// Setting up the one-sided data plane (framework/README.md, data flow): memory ranks
// register one ring region per compute rank (remote-writable) and one
// published region (remote-read-only) and put their keys in the bootstrap
// store; after the collective Sync, compute rank c imports only ring c of each
// memory rank and every published region (I7). After this, compute and memory
// ranks talk through put/get only (I6).
//
// Lifetimes: endpoints must be destroyed before the Transport that made them.
// Not thread-safe (the rank's main thread; Sync is collective).
#pragma once

#include <memory>
#include <vector>

#include "framework/core/status.h"
#include "framework/model/shard_layout.h"
#include "framework/runtime/roles.h"
#include "framework/sync/ring_layout.h"
#include "framework/transport/bootstrap.h"
#include "framework/transport/transport.h"

namespace stalelearn::runtime {

struct DataPlaneGeometry {
  sync::RingGeometry ring;
  std::vector<sync::PublishedGeometry> published;  // [memory index]: shard sizes differ
};

// Slots are sized to need: at most `slot_bytes`, at most the largest batch a
// clock can send one memory rank (every row of its shard), and small enough
// that a memory rank's rings take at most `ring_bytes` (0: 8 MiB) in all,
// but never below one row's delta. kInvalidArgument, one line, when
// `slot_bytes` cannot hold one row's delta. `reply_bytes` > 0: each memory
// rank keeps a reply area of that size (at most its shard's bytes and the
// reply header) per compute rank, for row requests (sync/row_gather.h).
Result<DataPlaneGeometry> MakeDataPlaneGeometry(const model::ModelLayout& layout, int compute_ranks, int ring_slots,
                                                std::size_t slot_bytes, std::size_t ring_bytes = 0,
                                                std::size_t reply_bytes = 0);
inline constexpr std::size_t kDefaultRingBytes = std::size_t{8} << 20;
// A stratified run's reply areas, with `stripes` stripes: a rank gathers at
// most one in sync::kGatherAtMostOneIn of a stripe's rows (half), all on one
// memory rank at worst, so an area holds that share of the widest stripe of
// any table (and the reply's header). Memory: compute ranks x this per memory
// rank, about a quarter of the largest table's bytes at kStripesPerRank.
std::size_t StripeReplyBytes(const model::ModelLayout& layout, int stripes);

struct MemoryEndpoints {
  std::vector<std::unique_ptr<transport::MemoryRegion>> rings;  // [compute index]
  std::unique_ptr<transport::MemoryRegion> published;
};

struct ComputeEndpoints {
  std::vector<std::unique_ptr<transport::RemoteRegion>> rings;      // [memory index]: my ring there
  std::vector<std::unique_ptr<transport::RemoteRegion>> published;  // [memory index]
};

// Memory rank: registers its regions and stores their keys (before Sync).
Result<MemoryEndpoints> RegisterMemoryEndpoints(transport::Transport& transport, transport::Bootstrap& bootstrap,
                                                const RoleMap& roles, model::MemoryIndex me,
                                                const DataPlaneGeometry& geometry);

// Compute rank: imports its rings and the published regions (after Sync).
Result<ComputeEndpoints> ImportComputeEndpoints(transport::Transport& transport, transport::Bootstrap& bootstrap,
                                                const RoleMap& roles, model::ComputeIndex me);

}  // namespace stalelearn::runtime
