// Bodies about what must fail cleanly: access rights, bad input, teardown.
#include <fmt/format.h>

#include <cstring>
#include <limits>

#include "tests/conformance/conformance_bodies.h"

namespace stalelearn::conformance {
namespace {

using transport::GetBlocking;
using transport::PutBlocking;

enum CaseId : std::uint64_t { kAccessCase = 4, kErrorsCase = 5, kTeardownCase = 6 };

constexpr Access kRemoteWriteOnly = Access::kLocal | Access::kRemoteWrite;

}  // namespace

void AccessRights(RankEnv& env) {
  constexpr std::size_t kBytes = 64;
  Transport& t = env.transport();
  auto read_only = env.RequireValue(t.Register(kBytes, Access::kRemoteReadOnly), "register read-only");
  auto write_only = env.RequireValue(t.Register(kBytes, kRemoteWriteOnly), "register write-only");
  const Bytes content = Pattern(PatternSeed(env.rank().value, kAccessCase), kBytes);
  std::memcpy(read_only->data(), content.data(), kBytes);  // before its key is published
  auto read_only_remotes = ImportAll(env, *read_only, "read-only");
  auto write_only_remotes = ImportAll(env, *write_only, "write-only");
  const Rank peer = env.Peer(1);
  const RemoteRegion& peer_read_only = *read_only_remotes[peer.value];
  const RemoteRegion& peer_write_only = *write_only_remotes[peer.value];

  // What the rights allow works on every backend.
  Bytes got(kBytes);
  env.CheckOk(GetBlocking(t, got.data(), kBytes, peer_read_only, 0, kOpTimeout), "get from read-only");
  env.Check(got == Pattern(PatternSeed(peer.value, kAccessCase), kBytes), "get from read-only returned other bytes");
  const std::uint64_t word = 0x5eed;
  env.CheckOk(PutBlocking(t, &word, 8, peer_write_only, 8, kOpTimeout), "put to write-only");
  env.CheckOk(t.Flush(peer, kOpTimeout), "flush");

  const bool enforced = env.caps().enforces_remote_access;
  if (enforced) {
    std::uint64_t old = 0;
    const StatusCode denied = StatusCode::kPermissionDenied;
    env.CheckError(Complete(t.Put(&word, 8, peer_read_only, 0)), denied, "put to read-only");
    env.CheckError(Complete(t.Put(&word, 1, peer_read_only, 3)), denied, "1-byte put to read-only");
    env.CheckError(Complete(t.AtomicAdd(peer_read_only, 0, 1)), denied, "atomic add to read-only");
    env.CheckError(Complete(t.FetchAdd(peer_read_only, 8, 1, &old)), denied, "fetch-add to read-only");
    env.CheckError(Complete(t.CompareSwap(peer_read_only, 16, 0, 1, &old)), denied, "compare-swap to read-only");
    env.CheckError(Complete(t.Get(got.data(), 8, peer_write_only, 0)), denied, "get from write-only");
    env.CheckOk(t.Flush(peer, kOpTimeout), "flush after refused operations");
  }
  env.Barrier();

  env.Check(std::memcmp(read_only->data(), content.data(), kBytes) == 0, "a peer changed a remote-read-only region");
  env.Check(transport::LoadAcquire64(write_only->data() + 8) == word, "put to a write-only region missing");
  env.Barrier();
  if (!enforced) env.Skip("backend does not enforce remote access rights (Capabilities::enforces_remote_access)");
}

void ErrorsAreStatuses(RankEnv& env) {
  constexpr std::size_t kBytes = 4096;
  Transport& t = env.transport();
  auto region = env.RequireValue(t.Register(kBytes, Access::kAll), "register");
  auto remotes = ImportAll(env, *region, "errors");
  const Rank peer = env.Peer(1);
  const RemoteRegion& remote = *remotes[peer.value];
  const Rank outside{env.world_size()};

  // Keys: nothing that is not a key made by the backend is accepted.
  const Bytes& good = region->key();
  const Bytes garbage_keys[] = {
      Bytes{},
      Bytes(5, std::byte{0xab}),
      Bytes(good.begin(), good.begin() + good.size() / 2),
      Pattern(PatternSeed(env.rank().value, kErrorsCase), good.size()),
  };
  for (const Bytes& key : garbage_keys) {
    env.Check(!t.Import(env.rank(), key).ok(), fmt::format("a bad key of {} bytes was imported", key.size()));
  }
  env.Check(!t.Import(Rank{-1}, good).ok(), "import from rank -1 succeeded");
  env.Check(!t.Import(outside, good).ok(), "import from a rank beyond the world succeeded");
  env.Check(!t.Fence(outside).ok(), "fence to a rank beyond the world succeeded");
  env.Check(!t.Flush(Rank{-1}, kOpTimeout).ok(), "flush to rank -1 succeeded");

  // Addresses and sizes outside the region, unaligned atomics.
  const bool bounds_checked = env.caps().checks_remote_bounds;
  if (bounds_checked) {
    const StatusCode out = StatusCode::kOutOfRange;
    Bytes buffer(kBytes + 1);
    std::uint64_t old = 0;
    env.CheckError(Complete(t.Put(buffer.data(), 1, remote, kBytes)), out, "put at the end");
    env.CheckError(Complete(t.Put(buffer.data(), kBytes + 1, remote, 0)), out, "put of size+1 bytes");
    env.CheckError(Complete(t.Put(buffer.data(), 8, remote, kBytes - 4)), out, "put across the end");
    env.CheckError(Complete(t.Put(buffer.data(), 8, remote, std::numeric_limits<std::uint64_t>::max() - 3)), out,
                   "put at an offset that overflows");
    env.CheckError(Complete(t.Get(buffer.data(), 1, remote, kBytes)), out, "get at the end");
    env.CheckError(Complete(t.Get(buffer.data(), kBytes + 1, remote, 0)), out, "get of size+1 bytes");
    env.CheckError(Complete(t.AtomicAdd(remote, kBytes, 1)), out, "atomic add at the end");
    env.CheckError(Complete(t.CompareSwap(remote, kBytes, 0, 1, &old)), out, "compare-swap at the end");
    env.CheckError(Complete(t.FetchAdd(remote, 4, 1, &old)), StatusCode::kInvalidArgument, "unaligned fetch-add");
  }

  // Nothing landed, and the transport still works.
  const Bytes tail = Pattern(PatternSeed(env.rank().value, kErrorsCase, 1), 8);
  env.CheckOk(PutBlocking(t, tail.data(), 8, remote, kBytes - 8, kOpTimeout), "put after errors");
  env.CheckOk(t.Flush(peer, kOpTimeout), "flush after errors");
  env.Barrier();
  const std::span<const std::byte> mine(region->data(), kBytes);
  env.Check(AllZero(mine.first(kBytes - 8)), "a refused operation changed the region");
  env.Check(FirstMismatch(mine.last(8), PatternSeed(env.Peer(-1).value, kErrorsCase, 1)) == 8,
            "the put after the errors did not land");
  env.Barrier();
  if (!bounds_checked) env.Skip("backend does not check remote bounds (Capabilities::checks_remote_bounds)");
}

void TeardownInAnyOrder(RankEnv& env) {
  enum class Order { kRemotesFirst, kRegionFirst, kStaggered };
  const bool even = env.rank().value % 2 == 0;
  for (Order order : {Order::kRemotesFirst, Order::kRegionFirst, Order::kStaggered}) {
    auto t = env.RequireValue(env.MakeTransport(), "make another transport");
    auto region = env.RequireValue(t->Register(4096, Access::kAll), "register");
    auto remotes = ImportAll(env, *t, *region, "teardown");
    // Use the transport, so that teardown has connections and keys to undo.
    // Only towards this rank itself when peers must progress: they progress
    // the env's transport while they wait, not this one.
    const Rank target = env.caps().target_must_progress ? env.rank() : env.Peer(1);
    const Bytes sent = Pattern(PatternSeed(env.rank().value, kTeardownCase), 64);
    env.CheckOk(PutBlocking(*t, sent.data(), sent.size(), *remotes[target.value], 0, kOpTimeout), "put");
    env.CheckOk(t->Flush(target, kOpTimeout), "flush");
    env.Barrier();

    switch (order) {
      case Order::kRemotesFirst:
        remotes.clear();
        env.Barrier();
        region.reset();
        t.reset();
        break;
      case Order::kRegionFirst:  // peers still hold remote regions of it
        region.reset();
        env.Barrier();
        remotes.clear();
        t.reset();
        break;
      case Order::kStaggered:  // even ranks are gone while odd ones still hold their keys
        if (even) {
          remotes.clear();
          region.reset();
          t.reset();
        }
        env.Barrier();
        region.reset();
        remotes.clear();
        t.reset();
        break;
    }
    env.Barrier();
  }

  // The env's own transport is untouched by all of this.
  auto region = env.RequireValue(env.transport().Register(64, Access::kAll), "register after teardown");
  auto remotes = ImportAll(env, *region, "after teardown");
  const std::uint64_t word = 42;
  std::uint64_t back = 0;
  env.CheckOk(PutBlocking(env.transport(), &word, 8, *remotes[env.rank().value], 0, kOpTimeout),
              "put after teardown");
  env.CheckOk(env.transport().Flush(env.rank(), kOpTimeout), "flush after teardown");
  env.CheckOk(GetBlocking(env.transport(), &back, 8, *remotes[env.rank().value], 0, kOpTimeout),
              "get after teardown");
  env.Check(back == word, "put/get after teardown lost the word");
  env.Barrier();
}

}  // namespace stalelearn::conformance
