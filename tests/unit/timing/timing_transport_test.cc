// TimingTransport over the local backend: each operation advances the
// virtual clock by exactly the documented price, the runtime's cost sink
// charges compute and merges, options are checked, and stamps enforce
// visibility in virtual time.
#include "backends/timing/timing_transport.h"

#include <gtest/gtest.h>

#include <cstring>
#include <functional>

#include "backends/local/register.h"
#include "backends/timing/register.h"
#include "backends/timing/timing_options.h"
#include "framework/core/error.h"
#include "framework/metrics/work_counters.h"
#include "framework/transport/inprocess_bootstrap.h"

namespace stalelearn::backends::timing {
namespace {

using namespace std::chrono_literals;
using transport::Access;
using transport::Bootstrap;
using transport::Bytes;
using transport::Rank;
using transport::VirtualTimeFromPs;

using Options = std::map<std::string, std::string>;

transport::BackendRegistry Registry() {
  transport::BackendRegistry registry;
  ThrowIfError(local::RegisterBackend(registry));
  ThrowIfError(RegisterBackend(registry));
  return registry;
}

std::unique_ptr<TimingTransport> MakeTiming(const transport::BackendRegistry& registry, Bootstrap& bootstrap,
                                            const Options& options) {
  auto created = ValueOrThrow(registry.Create("timing", {bootstrap, options, registry}));
  return std::unique_ptr<TimingTransport>(static_cast<TimingTransport*>(created.release()));
}

const Options kIbUpmem = {{"link", "infiniband-hdr"}, {"memory", "upmem"}, {"compute", "gpu-a100"}};

// Three ranks as threads, each with a timing transport of kIbUpmem (shared
// ports or not) and a region of `bytes` whose keys every rank has: the
// setting of the shared-ports tests. `body` runs on each rank.
void OnThreeRanks(bool shared, std::size_t bytes,
                  const std::function<void(Bootstrap&, TimingTransport&, const std::vector<Bytes>& keys)>& body) {
  Options options = kIbUpmem;
  if (shared) options["shared_ports"] = "true";
  const auto registry = Registry();
  transport::RunRanks(3, [&](Bootstrap& bootstrap) {
    auto timing = MakeTiming(registry, bootstrap, options);
    auto region = ValueOrThrow(timing->Register(bytes, Access::kAll));
    const std::vector<Bytes> keys = ValueOrThrow(bootstrap.AllGather("key", region->key()));
    body(bootstrap, *timing, keys);
  });
}

// Two ranks: rank 1 operates on a region of rank 0; `check` runs on rank 1.
void WithPeerRegion(const Options& options,
                    const std::function<void(TimingTransport&, transport::RemoteRegion&, std::byte*)>& check) {
  const auto registry = Registry();
  transport::RunRanks(2, [&](Bootstrap& bootstrap) {
    auto timing = MakeTiming(registry, bootstrap, options);
    auto region = ValueOrThrow(timing->Register(1 << 20, Access::kAll));
    std::vector<Bytes> keys = ValueOrThrow(bootstrap.AllGather("key", region->key()));
    if (bootstrap.rank().value == 1) {
      auto remote = ValueOrThrow(timing->Import(Rank{0}, keys[0]));
      check(*timing, *remote, region->data());
    }
    ThrowIfError(bootstrap.Barrier());
  });
}

TEST(TimingTransport, PutCostsOverheadThenBytesOverBandwidthThenLatency) {
  WithPeerRegion(kIbUpmem, [](TimingTransport& t, transport::RemoteRegion& remote, std::byte*) {
    const LinkModel& link = t.model().link;
    constexpr std::uint64_t kBytes = 65'536;
    std::vector<std::byte> payload(kBytes, std::byte{7});
    const VirtualTime visible = t.PutVisibleAt(kBytes, remote.owner());
    EXPECT_EQ(visible.time_since_epoch(), link.Transfer(kBytes));  // O + L + S(B) from an idle start

    auto put = ValueOrThrow(t.Put(payload.data(), kBytes, remote, 0));
    EXPECT_EQ(t.Now().time_since_epoch(), link.overhead());          // issuing costs the overhead
    ThrowIfError(put->Wait(1s));
    EXPECT_EQ(t.Now().time_since_epoch(), link.overhead() + link.Serialization(kBytes));  // left the rank
    ThrowIfError(t.Flush(Rank{0}, 1s));
    // The origin learns completion one more latency after the target saw it.
    EXPECT_EQ(t.Now(), visible + link.latency());
    EXPECT_EQ(t.breakdown().transfer, t.Now().time_since_epoch());
    EXPECT_EQ(t.breakdown().total(), t.Now().time_since_epoch());
  });
}

TEST(TimingTransport, BackToBackPutsQueueBehindEachOther) {
  WithPeerRegion(kIbUpmem, [](TimingTransport& t, transport::RemoteRegion& remote, std::byte*) {
    const LinkModel& link = t.model().link;
    std::vector<std::byte> payload(1 << 20);
    auto first = ValueOrThrow(t.Put(payload.data(), payload.size(), remote, 0));
    // The second transfer starts when the first has left (S(1 MiB) >> overhead).
    const VirtualTime expected = VirtualTimeFromPs(0) + link.overhead() + 2 * link.Serialization(payload.size()) +
                                 link.latency();
    EXPECT_EQ(t.PutVisibleAt(payload.size(), remote.owner()), expected);
    auto second = ValueOrThrow(t.Put(payload.data(), payload.size(), remote, 0));
    ThrowIfError(t.FlushAll(1s));
    EXPECT_EQ(t.Now(), expected + link.latency());
  });
}

TEST(TimingTransport, GetAndFetchingAtomicsCostARoundTrip) {
  WithPeerRegion(kIbUpmem, [](TimingTransport& t, transport::RemoteRegion& remote, std::byte* mine) {
    (void)mine;
    const HardwareModel& m = t.model();
    std::vector<std::byte> into(4096);
    ThrowIfError(transport::GetBlocking(t, into.data(), into.size(), remote, 0, 1s));
    EXPECT_EQ(t.Now().time_since_epoch(), m.link.RoundTrip(4096));
    const VirtualTime before = t.Now();
    EXPECT_EQ(ValueOrThrow(transport::FetchAddBlocking(t, remote, 8, 5, 1s)), 0u);
    EXPECT_EQ(ValueOrThrow(transport::FetchAddBlocking(t, remote, 8, 1, 1s)), 5u);  // data still moves
    EXPECT_EQ(t.Now() - before, 2 * (m.link.RoundTrip(8) + m.memory.AtomicRmw()));
  });
}

// A poll between clocks (a stratified rank's ask, ClockTable::TakeRefresh)
// tests its get without waiting: before the rank's clock reaches the get's
// completion, Test says not yet and moves no clock; once the rank's own
// work has passed it, Test says done and still moves no clock.
TEST(TimingTransport, TestingARequestBeforeItsCompletionNeitherCompletesNorWaits) {
  WithPeerRegion(kIbUpmem, [](TimingTransport& t, transport::RemoteRegion& remote, std::byte*) {
    const LinkModel& link = t.model().link;
    std::vector<std::byte> into(4096);
    auto get = ValueOrThrow(t.Get(into.data(), into.size(), remote, 0));
    const VirtualTime issued = t.Now();
    EXPECT_EQ(issued.time_since_epoch(), link.overhead());
    EXPECT_FALSE(get->Test());
    EXPECT_EQ(t.Now(), issued);  // no wait
    ThrowIfError(t.AdvanceTo(VirtualTimeFromPs(0) + link.RoundTrip(4096) - VirtualDuration(1)));
    EXPECT_FALSE(get->Test());  // a picosecond short
    const VirtualTime later = VirtualTimeFromPs(0) + 2 * link.RoundTrip(4096);
    ThrowIfError(t.AdvanceTo(later));
    EXPECT_TRUE(get->Test());
    EXPECT_EQ(t.Now(), later);
    ThrowIfError(get->Wait(1s));  // complete: waiting costs nothing
    EXPECT_EQ(t.Now(), later);
  });
}

// A rank's link brings the replies to its gets in one after another: a
// second get issued while the first's reply still comes in completes a
// serialization after it (with or without shared ports), not alongside it.
TEST(TimingTransport, TheRepliesToOneRanksGetsComeInOneAfterAnother) {
  for (const bool shared : {false, true}) {
    Options options = kIbUpmem;
    if (shared) options["shared_ports"] = "true";
    WithPeerRegion(options, [&](TimingTransport& t, transport::RemoteRegion& remote, std::byte*) {
      const LinkModel& link = t.model().link;
      constexpr std::size_t kBytes = 1 << 20;
      std::vector<std::byte> first(kBytes), second(kBytes);
      auto a = ValueOrThrow(t.Get(first.data(), kBytes, remote, 0));
      auto b = ValueOrThrow(t.Get(second.data(), kBytes, remote, 0));
      ThrowIfError(a->Wait(1s));
      EXPECT_EQ(t.Now().time_since_epoch(), link.RoundTrip(kBytes)) << shared;
      ThrowIfError(b->Wait(1s));
      // The second was issued one overhead after the first (S >> O): O + 2L + 2S.
      EXPECT_EQ(t.Now().time_since_epoch(), link.RoundTrip(kBytes) + link.Serialization(kBytes)) << shared;
    });
  }
}

// shared_ports (serving_links.h): two readers of one rank share its link, so
// one reply leaves after the other; without it each has a path of its own.
TEST(TimingTransport, SharedPortsQueueTheReadsOneRankServes) {
  constexpr std::size_t kBytes = 1 << 20;
  for (const bool shared : {false, true}) {
    OnThreeRanks(shared, kBytes, [&](Bootstrap& bootstrap, TimingTransport& timing, const std::vector<Bytes>& keys) {
      const LinkModel& link = timing.model().link;
      std::int64_t done_ps = 0;
      if (bootstrap.rank().value < 2) {  // both read rank 2's region at time 0
        auto source = ValueOrThrow(timing.Import(Rank{2}, keys[2]));
        std::vector<std::byte> into(kBytes);
        ThrowIfError(transport::GetBlocking(timing, into.data(), kBytes, *source, 0, 1s));
        done_ps = timing.Now().time_since_epoch().count();
      }
      std::vector<Bytes> done = ValueOrThrow(bootstrap.AllGather("done", std::as_bytes(std::span(&done_ps, 1))));
      if (bootstrap.rank().value != 0) return;
      std::int64_t first = 0, second = 0;
      std::memcpy(&first, done[0].data(), sizeof first);
      std::memcpy(&second, done[1].data(), sizeof second);
      EXPECT_EQ(VirtualDuration(std::min(first, second)), link.RoundTrip(kBytes)) << shared;
      EXPECT_EQ(VirtualDuration(std::max(first, second)),
                shared ? link.RoundTrip(kBytes) + link.Serialization(kBytes) : link.RoundTrip(kBytes))
          << shared;
    });
  }
  const auto registry = Registry();
  transport::RunRanks(1, [&](Bootstrap& bootstrap) {
    const Options options = {{"shared_ports", "true"}, {"schedule", "none"}};
    const auto made = registry.Create("timing", {bootstrap, options, registry});
    ASSERT_FALSE(made.ok());
    EXPECT_NE(made.status().message().find("shared_ports needs ranks as threads"), std::string::npos);
  });
}

// shared_ports: two ranks' puts to a third go into its one link one after
// the other (a star network's port), and a get's request to it waits behind
// them; without it every transfer has a path of its own.
TEST(TimingTransport, SharedPortsQueueThePutsOneRankReceives) {
  constexpr std::size_t kBytes = 1 << 20;
  for (const bool shared : {false, true}) {
    OnThreeRanks(shared, kBytes, [&](Bootstrap& bootstrap, TimingTransport& timing, const std::vector<Bytes>& keys) {
      const LinkModel& link = timing.model().link;
      std::int64_t acked_ps = 0;
      std::int64_t read_ps = 0;
      if (bootstrap.rank().value < 2) {  // both write rank 2's region, then one reads it
        auto target = ValueOrThrow(timing.Import(Rank{2}, keys[2]));
        std::vector<std::byte> payload(kBytes);
        ThrowIfError(transport::PutBlocking(timing, payload.data(), kBytes, *target, 0, 1s));
        ThrowIfError(timing.FlushAll(1s));
        acked_ps = timing.Now().time_since_epoch().count();
        ThrowIfError(bootstrap.Barrier());
        if (bootstrap.rank().value == 0) {
          std::uint64_t word = 0;
          const VirtualTime before = timing.Now();
          ThrowIfError(transport::GetBlocking(timing, &word, sizeof word, *target, 0, 1s));
          read_ps = (timing.Now() - before).count();
        }
      } else {
        ThrowIfError(bootstrap.Barrier());
      }
      std::vector<Bytes> acked = ValueOrThrow(bootstrap.AllGather("acked", std::as_bytes(std::span(&acked_ps, 1))));
      std::vector<Bytes> read = ValueOrThrow(bootstrap.AllGather("read", std::as_bytes(std::span(&read_ps, 1))));
      if (bootstrap.rank().value != 0) return;
      std::int64_t first = 0;
      std::int64_t second = 0;
      std::memcpy(&first, acked[0].data(), sizeof first);
      std::memcpy(&second, acked[1].data(), sizeof second);
      // Alone each is acked at O + S + 2L; queued, the later one S after.
      const VirtualDuration alone = link.overhead() + link.Serialization(kBytes) + 2 * link.latency();
      EXPECT_EQ(VirtualDuration(std::min(first, second)), alone) << shared;
      EXPECT_EQ(VirtualDuration(std::max(first, second)), shared ? alone + link.Serialization(kBytes) : alone)
          << shared;
      std::memcpy(&read_ps, read[0].data(), sizeof read_ps);
      // Rank 0's read after its ack: the port is empty by then unless rank 1's
      // bytes were still going in (shared, and rank 0 was first).
      const VirtualDuration round_trip = link.RoundTrip(sizeof(std::uint64_t));  // O + 2L + S(8)
      EXPECT_GE(VirtualDuration(read_ps), round_trip) << shared;
      if (!shared) {
        EXPECT_EQ(VirtualDuration(read_ps), round_trip);
      }
    });
  }
}

TEST(TimingTransport, ChargesComputeAndMergeByThePresets) {
  WithPeerRegion(kIbUpmem, [](TimingTransport& t, transport::RemoteRegion&, std::byte*) {
    transport::SimulatedTime* sim = static_cast<transport::Transport&>(t).simulated_time();
    ASSERT_EQ(sim, &t) << "the capability is asked through the Transport interface";
    const metrics::WorkCounters kernel{.flops = 1e6, .bytes = 4e5, .random_row_accesses = 2000};
    ASSERT_TRUE(sim->ChargeComputeWork(metrics::ToComputeWork(kernel)).ok());
    EXPECT_EQ(t.breakdown().compute, t.model().compute.Compute({.flops = 1e6, .bytes = 4e5, .random_accesses = 2000}));
    // ShardMerger's counters for 100 rows of width 20: 2000 adds, 3 x 4 bytes each.
    const metrics::WorkCounters merged{.flops = 2000, .bytes = 3 * 2000 * 4};
    EXPECT_EQ(metrics::ToMergeWork(merged).bytes, 2000u * 4);
    EXPECT_EQ(metrics::ToMergeWork(merged).ops, 2000u);
    ASSERT_TRUE(sim->ChargeMergeWork(metrics::ToMergeWork(merged)).ok());
    EXPECT_EQ(t.breakdown().merge, t.model().memory.Merge({.bytes = 8000, .ops = 2000}));
    EXPECT_EQ(t.Now().time_since_epoch(), t.breakdown().compute + t.breakdown().merge);
  });
}

TEST(TimingTransport, AdvanceToCountsAsWaitAndNeverGoesBack) {
  WithPeerRegion(kIbUpmem, [](TimingTransport& t, transport::RemoteRegion&, std::byte*) {
    ThrowIfError(t.AdvanceTo(VirtualTimeFromPs(5000)));
    ThrowIfError(t.AdvanceTo(VirtualTimeFromPs(10)));
    EXPECT_EQ(t.Now(), VirtualTimeFromPs(5000));
    EXPECT_EQ(t.breakdown().wait, VirtualDuration(5000));
    EXPECT_EQ(t.GetVisibleAt(VirtualTimeFromPs(5000), 1000),
              VirtualTimeFromPs(5000) + t.model().link.latency() + t.model().link.Serialization(1000));
  });
}

TEST(TimingTransport, IsFoundAsSimulatedTimeAndReportsItsPresets) {
  WithPeerRegion(kIbUpmem, [](TimingTransport& t, transport::RemoteRegion&, std::byte*) {
    transport::SimulatedTime* sim = transport::FindSimulatedTime(t);
    ASSERT_NE(sim, nullptr);
    EXPECT_FALSE(sim->deterministic());  // not before it joins the schedule
    EXPECT_EQ(sim->presets().memory, "upmem");
    EXPECT_EQ(sim->presets().link, "infiniband-hdr");
    EXPECT_EQ(sim->presets().compute, "gpu-a100");
    EXPECT_STREQ(t.name(), "timing");
    EXPECT_TRUE(t.capabilities().in_process);
  });
}

TEST(TimingTransport, BadOptionsAreOneLineErrors) {
  const auto registry = Registry();
  auto error_of = [&](const Options& options) {
    std::string message;
    transport::RunRanks(1, [&](Bootstrap& bootstrap) {
      auto created = registry.Create("timing", {bootstrap, options, registry});
      EXPECT_FALSE(created.ok());
      if (!created.ok()) message = created.status().message();
    });
    return message;
  };
  // Each message names the backend once, says what is wrong with which value,
  // and fits on one line (the registry adds the "backend 'timing': " prefix).
  auto expect_error = [&](const Options& options, const std::string& expected_start) {
    const std::string message = error_of(options);
    EXPECT_EQ(message.substr(0, expected_start.size()), expected_start) << message;
    EXPECT_EQ(message.find("backend 'timing'", 1), std::string::npos) << "prefix doubled: " << message;
    EXPECT_EQ(message.find("timing backend"), std::string::npos) << "prefix doubled: " << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  };
  expect_error({{"lnk", "pcie4-x16"}}, "backend 'timing': unknown option 'lnk' (known: inner, memory, link, ");
  expect_error({{"inner", "timing"}}, "backend 'timing': option inner: 'timing' cannot wrap itself");
  expect_error({{"link", "token-ring"}}, "backend 'timing': unknown link preset 'token-ring': no file ");
  EXPECT_NE(error_of({{"link", "token-ring"}}).find("known: 100gbe, cxl2, infiniband-hdr, pcie4-x16"),
            std::string::npos);
  expect_error({{"inner", "nosuch"}}, "backend 'timing': unknown backend 'nosuch' (known: local, timing)");
  expect_error({{"schedule", "sometimes"}},
               "backend 'timing': option schedule: 'sometimes' is not auto, virtual-time or none");
}

// The section (backend.params) first, string options by key over it, the
// declared defaults for what neither sets.
// One source of options: the section (from the config), or key=value
// options over the declared defaults (a backend created directly), never
// both (which would win was a second rule to remember).
TEST(TimingOptions, TheSectionOrOptionsByKeyNeverBoth) {
  stalelearn::timing::TimingBackendOptions section;
  section.set_memory("upmem");
  section.set_link("cxl2");
  google::protobuf::Any params;
  params.PackFrom(section);
  const TimingOptions parsed = ValueOrThrow(ParseTimingOptions(&params, {}));
  EXPECT_EQ(parsed.memory, "upmem");
  EXPECT_EQ(parsed.link, "cxl2");
  EXPECT_EQ(parsed.compute, "gpu-gtx580");
  const Options options = {{"link", "100gbe"}};
  EXPECT_EQ(ValueOrThrow(ParseTimingOptions(options)).link, "100gbe");
  const auto both = ParseTimingOptions(&params, options);
  ASSERT_FALSE(both.ok());
  EXPECT_EQ(both.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace stalelearn::backends::timing
