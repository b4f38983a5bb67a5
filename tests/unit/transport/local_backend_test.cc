// What the 'local' backend does beyond the conformance suite: registry
// errors, key forgery, use of a freed region, teardown orders.
#include <gtest/gtest.h>

#include <cstring>

#include "backends/local/register.h"
#include "framework/core/error.h"
#include "framework/transport/inprocess_bootstrap.h"

namespace stalelearn::transport {
namespace {

using namespace std::chrono_literals;

const std::map<std::string, std::string> kNoOptions;

BackendRegistry LocalRegistry() {
  BackendRegistry registry;
  ThrowIfError(backends::local::RegisterBackend(registry));
  return registry;
}

std::unique_ptr<Transport> MakeLocal(const BackendRegistry& registry, Bootstrap& bootstrap) {
  return ValueOrThrow(registry.Create("local", BackendContext{bootstrap, kNoOptions, registry}));
}

// A bootstrap that is not in-process (like MPI's).
class OutOfProcessBootstrap final : public Bootstrap {
 public:
  Rank rank() const override { return Rank{0}; }
  int world_size() const override { return 1; }
  Status Put(std::string_view, std::span<const std::byte>) override { return Unimplemented("test"); }
  Result<Bytes> Get(Rank, std::string_view) override { return Unimplemented("test"); }
  Status Sync() override { return Unimplemented("test"); }
  Result<std::vector<Bytes>> AllGather(std::string_view, std::span<const std::byte>) override {
    return Unimplemented("test");
  }
  Status AllReduceSum(std::span<float>) override { return Unimplemented("test"); }
  Status AllReduceSum(std::span<double>) override { return Unimplemented("test"); }
  Status AllReduceMax(std::span<std::int64_t>) override { return Unimplemented("test"); }
  Status Barrier() override { return Unimplemented("test"); }
};

TEST(BackendRegistry, UnknownNameIsAnErrorListingTheKnownNames) {
  BackendRegistry registry = LocalRegistry();
  ThrowIfError(registry.Add("other", "test", [](const BackendContext&) -> Result<std::unique_ptr<Transport>> {
    return Unimplemented("test");
  }));
  OutOfProcessBootstrap bootstrap;
  auto created = registry.Create("nosuch", BackendContext{bootstrap, kNoOptions, registry});
  ASSERT_FALSE(created.ok());
  EXPECT_EQ(created.status().code(), StatusCode::kNotFound);
  EXPECT_NE(created.status().message().find("'nosuch'"), std::string::npos) << created.status().ToString();
  EXPECT_NE(created.status().message().find("local, other"), std::string::npos) << created.status().ToString();
}

TEST(LocalBackend, NeedsTheInProcessBootstrap) {
  BackendRegistry registry = LocalRegistry();
  OutOfProcessBootstrap bootstrap;
  auto created = registry.Create("local", BackendContext{bootstrap, kNoOptions, registry});
  ASSERT_FALSE(created.ok());
  EXPECT_EQ(created.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(created.status().message(), "backend 'local': needs single-process emulation (--ranks C:M)");
}

TEST(LocalBackend, UnknownOptionIsOneCleanError) {
  const BackendRegistry registry = LocalRegistry();
  RunRanks(1, [&](Bootstrap& bootstrap) {
    const std::map<std::string, std::string> options = {{"bogus", "1"}};
    auto created = registry.Create("local", BackendContext{bootstrap, options, registry});
    ASSERT_FALSE(created.ok());
    EXPECT_EQ(created.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(created.status().message(), "backend 'local': unknown option 'bogus' (the local backend takes no options)");
  });
}

TEST(LocalBackend, ForgedKeysAreRejected) {
  const BackendRegistry registry = LocalRegistry();
  RunRanks(2, [&](Bootstrap& bootstrap) {
    auto transport = MakeLocal(registry, bootstrap);
    auto region = ValueOrThrow(transport->Register(64, Access::kAll));
    std::vector<Bytes> keys = ValueOrThrow(bootstrap.AllGather("key", region->key()));
    const Rank peer{1 - bootstrap.rank().value};
    ASSERT_TRUE(transport->Import(peer, keys[peer.value]).ok());

    // A key imported under the wrong owner.
    EXPECT_EQ(transport->Import(bootstrap.rank(), keys[peer.value]).status().code(), StatusCode::kInvalidArgument);
    // Every single flipped byte is noticed: magic, version, group, id, owner,
    // access, size or tag.
    for (std::size_t i = 0; i < keys[peer.value].size(); ++i) {
      Bytes forged = keys[peer.value];
      forged[i] ^= std::byte{0x40};
      auto imported = transport->Import(peer, forged);
      EXPECT_FALSE(imported.ok()) << "flipped byte " << i << " went unnoticed";
    }
    ThrowIfError(bootstrap.Barrier());
  });
}

TEST(LocalBackend, KeysOfAnotherGroupAreRejected) {
  const BackendRegistry registry = LocalRegistry();
  Bytes foreign_key;
  RunRanks(1, [&](Bootstrap& bootstrap) {
    auto transport = MakeLocal(registry, bootstrap);
    auto region = ValueOrThrow(transport->Register(64, Access::kAll));
    foreign_key = region->key();
  });
  RunRanks(1, [&](Bootstrap& bootstrap) {
    auto transport = MakeLocal(registry, bootstrap);
    auto region = ValueOrThrow(transport->Register(64, Access::kAll));  // same id in this group
    EXPECT_EQ(transport->Import(Rank{0}, foreign_key).status().code(), StatusCode::kInvalidArgument);
  });
}

TEST(LocalBackend, UsingARegionFreedByItsOwnerIsUnavailableNotACrash) {
  const BackendRegistry registry = LocalRegistry();
  RunRanks(2, [&](Bootstrap& bootstrap) {
    auto transport = MakeLocal(registry, bootstrap);
    auto region = ValueOrThrow(transport->Register(64, Access::kAll));
    std::vector<Bytes> keys = ValueOrThrow(bootstrap.AllGather("key", region->key()));
    const Rank peer{1 - bootstrap.rank().value};
    auto remote = ValueOrThrow(transport->Import(peer, keys[peer.value]));
    ThrowIfError(bootstrap.Barrier());
    region.reset();  // both ranks free their region while the peer holds it
    ThrowIfError(bootstrap.Barrier());

    std::uint64_t word = 7;
    EXPECT_EQ(transport->Put(&word, 8, *remote, 0).status().code(), StatusCode::kUnavailable);
    EXPECT_EQ(transport->Get(&word, 8, *remote, 0).status().code(), StatusCode::kUnavailable);
    EXPECT_EQ(transport->AtomicAdd(*remote, 0, 1).status().code(), StatusCode::kUnavailable);
    EXPECT_EQ(transport->Import(peer, keys[peer.value]).status().code(), StatusCode::kUnavailable);
  });
}

TEST(LocalBackend, RegionsAndRemoteRegionsMayOutliveTheirTransport) {
  const BackendRegistry registry = LocalRegistry();
  RunRanks(2, [&](Bootstrap& bootstrap) {
    auto transport = MakeLocal(registry, bootstrap);
    auto region = ValueOrThrow(transport->Register(64, Access::kAll));
    std::vector<Bytes> keys = ValueOrThrow(bootstrap.AllGather("key", region->key()));
    auto remote = ValueOrThrow(transport->Import(Rank{1 - bootstrap.rank().value}, keys[1 - bootstrap.rank().value]));
    transport.reset();
    ThrowIfError(bootstrap.Barrier());
    EXPECT_EQ(region->size(), 64u);
    std::memset(region->data(), 1, region->size());
    region.reset();
    remote.reset();
  });
}

TEST(LocalBackend, CapabilitiesDescribeTheReferenceBackend) {
  const BackendRegistry registry = LocalRegistry();
  RunRanks(1, [&](Bootstrap& bootstrap) {
    auto transport = MakeLocal(registry, bootstrap);
    const Capabilities caps = transport->capabilities();
    EXPECT_TRUE(caps.enforces_remote_access);
    EXPECT_TRUE(caps.checks_remote_bounds);
    EXPECT_FALSE(caps.target_must_progress);
    EXPECT_TRUE(caps.in_process);
    EXPECT_STREQ(transport->name(), "local");
    EXPECT_EQ(transport->Register(0, Access::kAll).status().code(), StatusCode::kInvalidArgument);
  });
}

}  // namespace
}  // namespace stalelearn::transport
