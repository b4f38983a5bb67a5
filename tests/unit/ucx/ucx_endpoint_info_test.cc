// What the 'ucx' backend says its endpoints use (endpoint_info.h,
// Transport::DescribeEndpoints): the parser on UCX 1.13's text, and live
// endpoints that must name tcp when only tcp is allowed and shared memory
// otherwise (ranks as threads of one process).
#include <gtest/gtest.h>

#include <algorithm>

#include "backends/ucx/endpoint_info.h"
#include "framework/metrics/counting_transport.h"
#include "framework/transport/inprocess_bootstrap.h"
#include "tests/unit/ucx/ucx_test_support.h"

namespace stalelearn::backends::ucx {
namespace {

using transport::Bootstrap;
using transport::Rank;

TEST(UcxEndpointInfo, ParsesEachLaneOnceInLaneOrder) {
  const char* text =
      "#\n# UCP endpoint \n#\n#               peer: <no debug data>\n"
      "#                 lane[0]:  0:self/memory0.0 md[0]          -> md[0]/self/sysdev[255] amo#0 am am_bw#0\n"
      "#                 lane[1]:  4:sysv/memory.0 md[2]           -> md[2]/sysv/sysdev[255]\n"
      "#                 lane[2]:  5:posix/memory.0 md[3]          -> md[3]/posix/sysdev[255]\n"
      "#                 lane[3]:  5:posix/memory.0 md[3]          -> md[3]/posix/sysdev[255]\n"
      "#                  put[0]: 0..<short>..4294967296..<bcopy>..(inf)\n";
  EXPECT_EQ(ParseLaneTransports(text), (std::vector<std::string>{"self/memory0", "sysv/memory", "posix/memory"}));
  EXPECT_EQ(ParseLaneTransports("#   lane[0]:  1:tcp/eth0.0 md[0]   -> md[0]/tcp/sysdev[255] am wireup\n"),
            (std::vector<std::string>{"tcp/eth0"}));
  EXPECT_TRUE(ParseLaneTransports("no lanes here\n").empty());
}

// Each rank's endpoints after a put and flush to every peer (wireup done).
std::vector<transport::PeerTransports> EndpointsAfterTraffic(Bootstrap& bootstrap,
                                                             const std::map<std::string, std::string>& options) {
  auto t = testing::CreateUcx(bootstrap, options);
  auto region = ValueOrThrow(t->Register(64, transport::Access::kAll));
  auto remotes = testing::ExchangeAndImport(*t, bootstrap, *region, "endpoint-info");
  const std::uint64_t word = 1;
  for (int peer = 0; peer < bootstrap.world_size(); ++peer) {
    ThrowIfError(transport::PutBlocking(*t, &word, sizeof word, *remotes[peer], 0, testing::kTestTimeout));
  }
  // Complete at the targets (a put's completion is local only) before the
  // region may go away; both ranks flush, so both progress.
  ThrowIfError(t->FlushAll(testing::kTestTimeout));
  ThrowIfError(testing::BarrierWhileProgressing(*t, bootstrap));
  // Through a decorator, as the report gets them.
  metrics::CountingTransport counting(*t);
  std::vector<transport::PeerTransports> endpoints = counting.counters().endpoints;
  ThrowIfError(testing::BarrierWhileProgressing(*t, bootstrap));
  return endpoints;
}

bool AllStartWith(const std::vector<std::string>& names, const std::string& prefix) {
  return !names.empty() && std::ranges::all_of(names, [&](const std::string& n) { return n.starts_with(prefix); });
}

TEST(UcxEndpointInfo, TcpOnlyEndpointsSayTcp) {
  transport::RunRanks(2, [](Bootstrap& bootstrap) {
    const auto endpoints = EndpointsAfterTraffic(bootstrap, {{"tls", "tcp,self"}, {"net_devices", "lo"}});
    ASSERT_EQ(endpoints.size(), 2u);
    const Rank other{1 - bootstrap.rank().value};
    EXPECT_EQ(endpoints[other.value].peer, other);
    EXPECT_TRUE(AllStartWith(endpoints[other.value].transports, "tcp/"))
        << ::testing::PrintToString(endpoints[other.value].transports);
  });
}

TEST(UcxEndpointInfo, SharedMemoryEndpointsSaySo) {
  transport::RunRanks(2, [](Bootstrap& bootstrap) {
    const auto endpoints = EndpointsAfterTraffic(bootstrap, {{"tls", "sm,self"}});
    ASSERT_EQ(endpoints.size(), 2u);
    const auto& names = endpoints[1 - bootstrap.rank().value].transports;
    EXPECT_FALSE(names.empty());
    EXPECT_TRUE(std::ranges::none_of(names, [](const std::string& n) { return n.starts_with("tcp/"); }))
        << ::testing::PrintToString(names);
  });
}

}  // namespace
}  // namespace stalelearn::backends::ucx
