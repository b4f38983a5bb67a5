// Errors of the 'ucx' backend are statuses, never crashes: bounds, rights,
// keys, alignment, ranks, options (ranks as threads, shared memory).
#include <gtest/gtest.h>

#include "framework/transport/inprocess_bootstrap.h"
#include "framework/transport/registry.h"
#include "backends/ucx/register.h"
#include "tests/unit/ucx/ucx_test_support.h"

namespace stalelearn::backends::ucx {
namespace {

using testing::BarrierWhileProgressing;
using testing::CreateUcx;
using testing::kTestTimeout;
using transport::Access;
using transport::Bootstrap;
using transport::Rank;

constexpr std::size_t kBytes = 4096;

// Rank 0 probes rank 1's regions: one of each access kind.
TEST(UcxErrors, OriginRefusesBadAccessesWithTheRightCode) {
  transport::RunRanks(2, [](Bootstrap& bootstrap) {
    auto t = CreateUcx(bootstrap, {});
    auto writable = ValueOrThrow(t->Register(kBytes, Access::kAll));
    auto read_only = ValueOrThrow(t->Register(kBytes, Access::kRemoteReadOnly));
    auto write_only = ValueOrThrow(t->Register(kBytes, Access::kLocal | Access::kRemoteWrite));
    auto keys_all = ValueOrThrow(bootstrap.AllGather("all", writable->key()));
    auto keys_ro = ValueOrThrow(bootstrap.AllGather("ro", read_only->key()));
    auto keys_wo = ValueOrThrow(bootstrap.AllGather("wo", write_only->key()));
    if (t->rank() == Rank{0}) {
      auto all = ValueOrThrow(t->Import(Rank{1}, keys_all[1]));
      auto ro = ValueOrThrow(t->Import(Rank{1}, keys_ro[1]));
      auto wo = ValueOrThrow(t->Import(Rank{1}, keys_wo[1]));
      char buffer[16] = {};
      std::uint64_t old = 0;
      auto code = [](const auto& result) { return result.status().code(); };

      EXPECT_EQ(code(t->Put(buffer, 16, *all, kBytes - 8)), StatusCode::kOutOfRange);
      EXPECT_EQ(code(t->Put(buffer, 1, *all, kBytes + 1)), StatusCode::kOutOfRange);
      EXPECT_EQ(code(t->Get(buffer, 16, *all, ~std::uint64_t{0} - 4)), StatusCode::kOutOfRange);
      EXPECT_EQ(code(t->FetchAdd(*all, kBytes, 1, &old)), StatusCode::kOutOfRange);
      EXPECT_EQ(code(t->AtomicAdd(*all, 4, 1)), StatusCode::kInvalidArgument);  // misaligned
      EXPECT_EQ(code(t->CompareSwap(*all, 0, 0, 1, nullptr)), StatusCode::kInvalidArgument);

      EXPECT_EQ(code(t->Put(buffer, 16, *ro, 0)), StatusCode::kPermissionDenied);
      EXPECT_EQ(code(t->AtomicAdd(*ro, 0, 1)), StatusCode::kPermissionDenied);
      EXPECT_EQ(code(t->CompareSwap(*ro, 0, 0, 1, &old)), StatusCode::kPermissionDenied);
      EXPECT_TRUE(GetBlocking(*t, buffer, 16, *ro, 0, kTestTimeout).ok());
      EXPECT_EQ(code(t->Get(buffer, 16, *wo, 0)), StatusCode::kPermissionDenied);
      EXPECT_TRUE(PutBlocking(*t, buffer, 16, *wo, 0, kTestTimeout).ok());

      EXPECT_EQ(t->Fence(Rank{2}).code(), StatusCode::kInvalidArgument);
      EXPECT_EQ(t->Flush(Rank{-1}, kTestTimeout).code(), StatusCode::kInvalidArgument);
      EXPECT_TRUE(t->FlushAll(kTestTimeout).ok());
    }
    ThrowIfError(BarrierWhileProgressing(*t, bootstrap));
    // Nothing landed in the read-only region.
    for (std::size_t i = 0; i < kBytes; ++i) ASSERT_EQ(read_only->data()[i], std::byte{0}) << "byte " << i;
  });
}

TEST(UcxErrors, ImportRefusesForeignCorruptAndMisattributedKeys) {
  transport::RunRanks(2, [](Bootstrap& bootstrap) {
    auto t = CreateUcx(bootstrap, {});
    auto region = ValueOrThrow(t->Register(kBytes, Access::kAll));
    auto keys = ValueOrThrow(bootstrap.AllGather("keys", region->key()));
    const Rank peer{1 - t->rank().value};
    const transport::PackedKey garbage(100, std::byte{7});
    transport::PackedKey corrupt = keys[peer.value];
    corrupt[corrupt.size() / 2] ^= std::byte{1};
    EXPECT_EQ(t->Import(peer, garbage).status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(t->Import(peer, corrupt).status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(t->Import(peer, {}).status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(t->Import(t->rank(), keys[peer.value]).status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(t->Import(Rank{2}, keys[peer.value]).status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(t->Register(0, Access::kAll).status().code(), StatusCode::kInvalidArgument);
    EXPECT_TRUE(t->Import(peer, keys[peer.value]).ok());
    ThrowIfError(BarrierWhileProgressing(*t, bootstrap));
  });
}

TEST(UcxErrors, UnknownOptionFailsBeforeAnyCollective) {
  auto group = ValueOrThrow(transport::InProcessGroup::Create(1));
  auto bootstrap = ValueOrThrow(group->MakeBootstrap(Rank{0}));
  transport::BackendRegistry registry;
  ThrowIfError(RegisterBackend(registry));
  const std::map<std::string, std::string> options = {{"transport", "tcp"}};
  auto created = registry.Create("ucx", transport::BackendContext{*bootstrap, options, registry});
  ASSERT_FALSE(created.ok());
  EXPECT_EQ(created.status().code(), StatusCode::kInvalidArgument);
  // One clean line, the backend named once (the registry adds the prefix).
  const std::string message = created.status().message();
  EXPECT_EQ(message.rfind("backend 'ucx': unknown option 'transport' (known: net_devices, progress_thread, tls)", 0),
            0u)
      << message;
  EXPECT_EQ(message.find("backend 'ucx'", 1), std::string::npos) << "prefix doubled: " << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

TEST(UcxErrors, SingleRankCanTalkToItself) {
  transport::RunRanks(1, [](Bootstrap& bootstrap) {
    auto t = CreateUcx(bootstrap, {});
    auto region = ValueOrThrow(t->Register(kBytes, Access::kAll));
    auto self = ValueOrThrow(t->Import(Rank{0}, region->key()));
    EXPECT_EQ(ValueOrThrow(FetchAddBlocking(*t, *self, 8, 5, kTestTimeout)), 0u);
    EXPECT_EQ(ValueOrThrow(CompareSwapBlocking(*t, *self, 8, 5, 9, kTestTimeout)), 5u);
    EXPECT_EQ(transport::LoadAcquire64(region->data() + 8), 9u);
    EXPECT_EQ(t->capabilities().in_process, true);
    EXPECT_TRUE(t->capabilities().checks_remote_bounds);
  });
}

}  // namespace
}  // namespace stalelearn::backends::ucx
