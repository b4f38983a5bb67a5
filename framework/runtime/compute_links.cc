#include "framework/runtime/compute_links.h"

#include <fmt/format.h>

#include "framework/sync/wait_until.h"

namespace stalelearn::runtime {
namespace {

std::vector<const transport::RemoteRegion*> Raw(const std::vector<std::unique_ptr<transport::RemoteRegion>>& v) {
  std::vector<const transport::RemoteRegion*> out;
  for (const auto& r : v) out.push_back(r.get());
  return out;
}

std::vector<std::unique_ptr<sync::RingWriter>> MakeWriters(const RankEnv& env, ComputeEndpoints& endpoints,
                                                           const DataPlaneGeometry& geometry) {
  const model::ComputeIndex me = env.roles.compute_index(env.transport.rank());
  std::vector<std::unique_ptr<sync::RingWriter>> writers;
  for (std::size_t m = 0; m < endpoints.rings.size(); ++m) {
    writers.push_back(std::make_unique<sync::RingWriter>(env.transport, std::move(endpoints.rings[m]),
                                                         *endpoints.published[m], me, geometry.ring,
                                                         geometry.published[m], env.wait));
  }
  return writers;
}

}  // namespace

ComputeLinks::ComputeLinks(const RankEnv& env, ComputeEndpoints moved, const DataPlaneGeometry& geometry,
                           bool keep_pending)
    : endpoints(std::move(moved)),
      clocks(env.transport, Raw(endpoints.published), geometry.published.at(0), env.wait),
      refresher(env.transport, env.layout, env.roles.compute_index(env.transport.rank()), Raw(endpoints.published),
                geometry.published, env.wait),
      pusher(env.layout, MakeWriters(env, endpoints, geometry), keep_pending ? &refresher : nullptr, &clocks) {
  if (!geometry.published.empty() && geometry.published[0].reply_bytes > 0) {
    gather = std::make_unique<sync::RowGatherClient>(env.transport, env.roles.compute_index(env.transport.rank()),
                                                     Raw(endpoints.published), geometry.published,
                                                     pusher.ring_writers(), env.wait);
  }
}

Status ComputeLinks::AwaitMergedBefore(const RankEnv& env, std::uint64_t clock) {
  std::string missing;
  return sync::WaitUntil(
             env.wait, env.transport,
             [&]() -> Result<bool> {
               STALELEARN_RETURN_IF_ERROR(clocks.Refresh());
               for (int m = 0; m < clocks.memory_ranks(); ++m) {
                 for (int c = 0; c < clocks.compute_ranks(); ++c) {
                   const std::uint64_t merged = clocks.merged_clock(model::MemoryIndex{m}, model::ComputeIndex{c});
                   if (merged < clock) {
                     missing = fmt::format("memory rank {} has {} of compute rank {}'s {} clocks", m, merged, c,
                                           clock);
                     // Nothing else can end the wait (timing backend: sleep until then).
                     clocks.WaitOnlyFor({model::ComputeIndex{c}, merged, model::MemoryIndex{m}});
                     return false;
                   }
                 }
               }
               return true;
             },
             [&] { return "every rank's clocks merged (" + missing + ")"; })
      .status();
}

Status ComputeLinks::ReadFinalModel(const RankEnv& env, std::uint64_t total_clocks, TableSet& model,
                                    model::ModelRows rows) {
  STALELEARN_RETURN_IF_ERROR(AwaitMergedBefore(env, total_clocks).WithContext("the final model"));
  // A memory rank shows a generation's clocks before it writes its live
  // rows (snapshot.h): a read begun in between gets the rows and then the
  // generation's records to lay over them, the last pushes' rows twice. The
  // final generation is the last one: wait for its rows instead.
  STALELEARN_RETURN_IF_ERROR(
      sync::WaitUntil(
          env.wait, env.transport,
          [&]() -> Result<bool> {
            STALELEARN_RETURN_IF_ERROR(clocks.Refresh());
            for (int m = 0; m < clocks.memory_ranks(); ++m) {
              const model::MemoryIndex memory{m};
              if (clocks.live_generation(memory) < clocks.latest_generation(memory)) return false;
            }
            return true;
          },
          [] { return std::string("the final generation's rows written"); })
          .status());
  return refresher.ReadMergedRows(model, rows);
}

}  // namespace stalelearn::runtime
