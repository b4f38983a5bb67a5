// The case table and the data-movement bodies: integrity and flush.
#include "tests/conformance/conformance_bodies.h"

#include <fmt/format.h>

#include <array>
#include <cstring>

namespace stalelearn::conformance {
namespace {

using transport::GetBlocking;
using transport::PutBlocking;
using transport::RequestPtr;

// Pattern seeds are per case, so a stale byte from another case never passes.
enum CaseId : std::uint64_t { kIntegrityCase = 1, kFlushCase = 2 };

constexpr std::array<ConformanceCase, 9> kCases{{
    {"PutGetIntegrity", PutGetIntegrity, 1},
    {"FlushCompletesEverything", FlushCompletesEverything, 1},
    {"OrderingCommitWord", OrderingCommitWord, 2},
    {"AtomicContention", AtomicContention, 1},
    {"CompareSwapElection", CompareSwapElection, 1},
    {"BarrierOverRma", BarrierOverRma, 1},
    {"AccessRights", AccessRights, 1},
    {"ErrorsAreStatuses", ErrorsAreStatuses, 1},
    {"TeardownInAnyOrder", TeardownInAnyOrder, 1},
}};

}  // namespace

std::span<const ConformanceCase> ConformanceCases() { return kCases; }

void PutGetIntegrity(RankEnv& env) {
  constexpr std::size_t kMaxBytes = std::size_t{16} << 20;
  constexpr std::size_t kRegionBytes = kMaxBytes + 64;
  constexpr std::array<std::size_t, 12> kSizes{1, 2, 7, 8, 9, 63, 64, 4095, 4096, 65537, 1 << 20, kMaxBytes};
  constexpr std::array<std::uint64_t, 3> kOffsets{0, 1, 13};  // aligned, odd, odd and across a word

  Transport& t = env.transport();
  auto region = env.RequireValue(t.Register(kRegionBytes, Access::kAll), "register 16 MiB");
  auto remotes = ImportAll(env, *region, "integrity");
  // A ring: every rank writes to the next one and is written by the previous.
  const Rank target = env.Peer(1);
  const Rank source = env.Peer(-1);
  const std::span<const std::byte> mine(region->data(), kRegionBytes);

  std::uint64_t round = 0;
  for (std::size_t size : kSizes) {
    for (std::uint64_t offset : kOffsets) {
      ++round;
      const std::string what = fmt::format("{} bytes at offset {}", size, offset);
      const Bytes sent = Pattern(PatternSeed(env.rank().value, kIntegrityCase, round), size);
      env.CheckOk(PutBlocking(t, sent.data(), size, *remotes[target.value], offset, kOpTimeout), "put " + what);
      env.CheckOk(t.Flush(target, kOpTimeout), "flush after put of " + what);
      env.Barrier();

      const std::size_t bad = FirstMismatch(mine.subspan(offset, size), PatternSeed(source.value, kIntegrityCase, round));
      env.Check(bad == size, fmt::format("put of {}: byte {} is not what rank {} put", what, bad, source.value));
      env.Check(offset == 0 || mine[offset - 1] == std::byte{0}, "put of " + what + " wrote the byte before it");
      env.Check(mine[offset + size] == std::byte{0}, "put of " + what + " wrote the byte after it");
      Bytes got(size);
      env.CheckOk(GetBlocking(t, got.data(), size, *remotes[target.value], offset, kOpTimeout), "get " + what);
      env.Check(got == sent, "get of " + what + " returned other bytes than were put");

      // Clear for the next round only once the reader (source) is done, and
      // let no one write the next round before every rank cleared.
      env.Barrier();
      std::memset(region->data() + offset, 0, size);
      env.Barrier();
    }
  }
}

void FlushCompletesEverything(RankEnv& env) {
  constexpr int kOps = 64;
  constexpr std::size_t kSlotBytes = 512;
  constexpr std::uint64_t kCounterOffset = 0;
  constexpr std::uint64_t kSlotsOffset = 64;
  const std::uint64_t all_ranks_offset = kSlotsOffset + kOps * kSlotBytes;  // FlushAll slots, 128 B per rank
  const std::size_t region_bytes = all_ranks_offset + 128 * static_cast<std::size_t>(env.world_size());
  auto slot_size = [](int i) { return std::size_t{1} + (i * 37) % (kSlotBytes - 1); };

  Transport& t = env.transport();
  auto region = env.RequireValue(t.Register(region_bytes, Access::kAll), "register");
  auto remotes = ImportAll(env, *region, "flush");
  const Rank target = env.Peer(1);
  const RemoteRegion& remote = *remotes[target.value];

  // Flush to one peer: puts (requests kept for even i, dropped for odd i)
  // and atomic adds (dropped); sources stay alive until the flush.
  std::vector<Bytes> sources;
  std::vector<RequestPtr> kept;
  for (int i = 0; i < kOps; ++i) {
    sources.push_back(Pattern(PatternSeed(env.rank().value, kFlushCase, i), slot_size(i)));
    auto put = t.Put(sources.back().data(), sources.back().size(), remote, kSlotsOffset + i * kSlotBytes);
    env.RequireOk(put.status(), fmt::format("issue put {}", i));
    if (i % 2 == 0) kept.push_back(std::move(*put));
    auto add = t.AtomicAdd(remote, kCounterOffset, 1);
    env.RequireOk(add.status(), fmt::format("issue atomic add {}", i));
  }
  env.RequireOk(t.Flush(target, kOpTimeout), "flush");
  for (std::size_t i = 0; i < kept.size(); ++i) env.Check(kept[i]->Test(), fmt::format("put {} incomplete after flush", 2 * i));
  std::uint64_t counter = 0;
  env.CheckOk(GetBlocking(t, &counter, sizeof counter, remote, kCounterOffset, kOpTimeout), "get counter");
  env.Check(counter == kOps, fmt::format("origin reads counter {} after flush, expected {}", counter, kOps));

  // FlushAll: one put to every rank, then one flush for all of them.
  const Bytes everyone = Pattern(PatternSeed(env.rank().value, kFlushCase, 1000), 100);
  const std::uint64_t my_slot = all_ranks_offset + 128 * static_cast<std::uint64_t>(env.rank().value);
  for (const auto& peer : remotes) env.RequireOk(t.Put(everyone.data(), everyone.size(), *peer, my_slot + 3).status(), "put to all");
  env.RequireOk(t.FlushAll(kOpTimeout), "flush all");
  env.Barrier();

  // At the target, everything issued before the flushes is there.
  const std::byte* base = region->data();
  const Rank source = env.Peer(-1);
  env.Check(transport::LoadAcquire64(base + kCounterOffset) == kOps, "atomic adds missing at the target after flush");
  for (int i = 0; i < kOps; ++i) {
    const std::span<const std::byte> slot(base + kSlotsOffset + i * kSlotBytes, kSlotBytes);
    env.Check(FirstMismatch(slot.first(slot_size(i)), PatternSeed(source.value, kFlushCase, i)) == slot_size(i),
              fmt::format("put {} from rank {} incomplete at the target after flush", i, source.value));
    env.Check(AllZero(slot.subspan(slot_size(i))), fmt::format("put {} wrote past its end", i));
  }
  for (int writer = 0; writer < env.world_size(); ++writer) {
    const std::span<const std::byte> slot(base + all_ranks_offset + 128 * writer + 3, 100);
    env.Check(FirstMismatch(slot, PatternSeed(writer, kFlushCase, 1000)) == 100,
              fmt::format("put from rank {} incomplete after FlushAll", writer));
  }
  env.Barrier();  // nobody reads this region any more
}

}  // namespace stalelearn::conformance
