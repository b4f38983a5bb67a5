#include "tests/conformance/rank_env.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "framework/core/wait.h"

namespace stalelearn::conformance {
namespace {

// Words of the barrier region (on rank 0): ranks that arrived, and ranks
// that stopped reading the arrival word (see RmaBarrier).
constexpr std::uint64_t kArrivedOffset = 0;
constexpr std::uint64_t kLeftOffset = 8;
constexpr std::size_t kBarrierRegionBytes = 64;

std::uint64_t SplitMix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

Result<std::unique_ptr<RankEnv>> RankEnv::Create(Transport& transport, Bootstrap& bootstrap,
                                                 TransportFactory make_transport, CheckSink& sink) {
  std::unique_ptr<RankEnv> env(new RankEnv(transport, bootstrap, std::move(make_transport), sink));
  STALELEARN_ASSIGN_OR_RETURN(env->barrier_words_, transport.Register(kBarrierRegionBytes, Access::kAll));
  STALELEARN_ASSIGN_OR_RETURN(std::vector<Bytes> keys,
                              bootstrap.AllGather("conformance.barrier", env->barrier_words_->key()));
  STALELEARN_ASSIGN_OR_RETURN(env->barrier_on_rank0_, transport.Import(Rank{0}, keys[0]));
  return env;
}

Rank RankEnv::Peer(int k) const {
  const int n = world_size();
  return Rank{((rank().value + k) % n + n) % n};
}

bool RankEnv::Check(bool condition, std::string_view what, std::source_location where) {
  if (!condition) sink_.Fail(rank(), std::string(what), where);
  return condition;
}

bool RankEnv::CheckOk(const Status& status, std::string_view what, std::source_location where) {
  if (!status.ok()) sink_.Fail(rank(), fmt::format("{}: {}", what, status.ToString()), where);
  return status.ok();
}

bool RankEnv::CheckError(const Status& status, StatusCode expected, std::string_view what,
                         std::source_location where) {
  if (status.code() == expected) return true;
  sink_.Fail(rank(),
             fmt::format("{}: expected {}, got {}", what, StatusCodeName(expected),
                         status.ok() ? std::string("ok") : status.ToString()),
             where);
  return false;
}

void RankEnv::Fail(std::string_view what, std::source_location where) {
  sink_.Fail(rank(), std::string(what), where);
  throw ConformanceAbort();
}

void RankEnv::Require(bool condition, std::string_view what, std::source_location where) {
  if (!Check(condition, what, where)) throw ConformanceAbort();
}

void RankEnv::RequireOk(const Status& status, std::string_view what, std::source_location where) {
  if (!CheckOk(status, what, where)) throw ConformanceAbort();
}

void RankEnv::Barrier() {
  if (caps().target_must_progress) {
    RmaBarrier();
  } else {
    RequireOk(bootstrap_.Barrier(), "bootstrap barrier");
  }
}

void RankEnv::StopIfAnyRankFailed() {
  if (sink_.AnyFailure()) throw ConformanceAbort();
}

void RankEnv::WaitUntil(const std::function<bool()>& done, std::string_view what) {
  // Yields on every idle poll: more ranks than cores must not starve (deploy/README.md).
  const WaitSpec spec{.timeout = kOpTimeout, .backoff = {.spins = 0, .yields = std::numeric_limits<std::int64_t>::max()}};
  const auto waited = WaitFor(spec, done, [&] {
    StopIfAnyRankFailed();
    transport_.Progress();
  });
  Require(waited.ok(), fmt::format("{}: no progress within {} s", what, kOpTimeout.count()));  // kTimeout only
}

// Every rank adds 1 to `arrived` on rank 0 and waits until it reaches
// n * generation. Rank 0 then also waits until every other rank added 1 to
// `left`, i.e. stopped reading `arrived`. The adds are never flushed: rank 0
// waits for their effect, and a flush would need rank 0 to progress once more
// after it saw them. So when any rank returns, no rank waits for another one
// to progress, and all may block in a bootstrap collective.
void RankEnv::RmaBarrier() {
  const std::uint64_t generation = ++barriers_;
  const auto n = static_cast<std::uint64_t>(world_size());
  Transport& t = transport_;
  RequireOk(Complete(t.AtomicAdd(*barrier_on_rank0_, kArrivedOffset, 1)), "barrier: arrive");
  if (rank().value == 0) {
    const std::byte* words = barrier_words_->data();
    WaitUntil([&] { return transport::LoadAcquire64(words + kArrivedOffset) >= n * generation; }, "barrier: arrivals");
    WaitUntil([&] { return transport::LoadAcquire64(words + kLeftOffset) >= (n - 1) * generation; },
              "barrier: departures");
    return;
  }
  WaitUntil(
      [&] {
        std::uint64_t arrived = 0;
        RequireOk(transport::GetBlocking(t, &arrived, sizeof arrived, *barrier_on_rank0_, kArrivedOffset, kOpTimeout),
                  "barrier: read arrivals");
        return arrived >= n * generation;
      },
      "barrier: arrivals");
  RequireOk(Complete(t.AtomicAdd(*barrier_on_rank0_, kLeftOffset, 1)), "barrier: leave");
}

Status Complete(Result<transport::RequestPtr> issued) {
  if (!issued.ok()) return issued.status();
  return (*issued)->Wait(kOpTimeout);
}

std::vector<std::unique_ptr<RemoteRegion>> ImportAll(RankEnv& env, Transport& transport, const MemoryRegion& region,
                                                     std::string_view name) {
  std::vector<Bytes> keys = env.RequireValue(env.bootstrap().AllGather(name, region.key()), "exchange keys");
  std::vector<std::unique_ptr<RemoteRegion>> remotes;
  for (int owner = 0; owner < env.world_size(); ++owner) {
    remotes.push_back(env.RequireValue(transport.Import(Rank{owner}, keys[owner]),
                                       fmt::format("import '{}' of rank {}", name, owner)));
  }
  return remotes;
}

Bytes Pattern(std::uint64_t seed, std::size_t size) {
  Bytes bytes(size);
  for (std::size_t i = 0; i < size; i += 8) {
    const std::uint64_t word = SplitMix64(seed ^ SplitMix64(i));
    std::memcpy(bytes.data() + i, &word, std::min<std::size_t>(8, size - i));
  }
  return bytes;
}

std::uint64_t PatternSeed(int rank, std::uint64_t test_case, std::uint64_t round) {
  return SplitMix64(SplitMix64(static_cast<std::uint64_t>(rank) + 1) ^ SplitMix64(test_case << 32 | round));
}

std::size_t FirstMismatch(std::span<const std::byte> actual, std::uint64_t seed) {
  const Bytes expected = Pattern(seed, actual.size());
  const auto [mismatch, unused] = std::mismatch(actual.begin(), actual.end(), expected.begin());
  return static_cast<std::size_t>(mismatch - actual.begin());
}

bool AllZero(std::span<const std::byte> bytes) {
  return std::all_of(bytes.begin(), bytes.end(), [](std::byte b) { return b == std::byte{0}; });
}

}  // namespace stalelearn::conformance
