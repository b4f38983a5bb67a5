// framework/runtime pieces that need no running ranks: roles, the sample
// schedule, the app registry; framework/metrics: the JSON report and the
// counting transport decorator.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "backends/builtin.h"
#include "framework/core/error.h"
#include "framework/metrics/counting_transport.h"
#include "framework/metrics/report_writer.h"
#include "framework/runtime/app_registry.h"
#include "framework/runtime/consistency_mode.h"
#include "framework/runtime/modes/builtin_modes.h"
#include "framework/runtime/random_stream.h"
#include "framework/runtime/roles.h"
#include "framework/runtime/sample_schedule.h"
#include "framework/transport/inprocess_bootstrap.h"

namespace stalelearn::runtime {
namespace {

TEST(Roles, MemoryLastAndMemoryFirst) {
  const RoleMap last = ValueOrThrow(RoleMap::Make(5, 2, proto::MEMORY_LAST));
  EXPECT_EQ(last.compute_ranks(), 3);
  EXPECT_EQ(last.role(transport::Rank{2}), Role::kCompute);
  EXPECT_EQ(last.role(transport::Rank{3}), Role::kMemory);
  EXPECT_EQ(last.memory_index(transport::Rank{4}), model::MemoryIndex{1});
  EXPECT_EQ(last.compute_rank(model::ComputeIndex{2}), transport::Rank{2});

  const RoleMap first = ValueOrThrow(RoleMap::Make(5, 2, proto::MEMORY_FIRST));
  EXPECT_EQ(first.role(transport::Rank{1}), Role::kMemory);
  EXPECT_EQ(first.compute_index(transport::Rank{2}), model::ComputeIndex{0});
  EXPECT_EQ(first.memory_rank(model::MemoryIndex{0}), transport::Rank{0});
}

TEST(Roles, MemorySpreadTakesTheLastRankOfEachBlock) {
  const auto memory_ranks_of = [](int world, int memory) {
    const RoleMap map = ValueOrThrow(RoleMap::Make(world, memory, proto::MEMORY_SPREAD));
    std::vector<int> ranks;
    for (int m = 0; m < map.memory_ranks(); ++m) ranks.push_back(map.memory_rank(model::MemoryIndex{m}).value);
    return ranks;
  };
  EXPECT_EQ(memory_ranks_of(6, 3), (std::vector<int>{1, 3, 5}));  // 3 hosts of 2 slots: one each
  EXPECT_EQ(memory_ranks_of(5, 2), (std::vector<int>{1, 4}));
  EXPECT_EQ(memory_ranks_of(4, 1), (std::vector<int>{3}));
  const RoleMap map = ValueOrThrow(RoleMap::Make(6, 3, proto::MEMORY_SPREAD));
  EXPECT_EQ(map.compute_rank(model::ComputeIndex{1}), transport::Rank{2});
}

TEST(Roles, NoComputeRankLeftIsAnError) {
  const Result<RoleMap> roles = RoleMap::Make(2, 2, proto::MEMORY_LAST);
  EXPECT_EQ(roles.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(roles.status().message().find("memory_ranks"), std::string::npos);
}

TEST(SampleSchedule, SharesAreDisjointCoverEverythingAndClocksLineUp) {
  constexpr std::int64_t kSamples = 1001;
  constexpr int kRanks = 3;
  std::set<std::int64_t> seen;
  std::int64_t clocks = -1;
  for (int c = 0; c < kRanks; ++c) {
    SampleSchedule schedule(kSamples, kRanks, c, 100, 9);
    if (clocks < 0) clocks = schedule.clocks_per_epoch();
    EXPECT_EQ(schedule.clocks_per_epoch(), clocks) << "ranks must agree on clocks per epoch";
    const std::vector<std::int64_t> order = schedule.EpochOrder(0);
    std::int64_t in_clocks = 0;
    for (std::int64_t k = 0; k < schedule.clocks_per_epoch(); ++k) {
      in_clocks += static_cast<std::int64_t>(schedule.ClockSamples(order, k).size());
    }
    EXPECT_EQ(in_clocks, schedule.share());
    for (std::int64_t s : order) EXPECT_TRUE(seen.insert(s).second) << "sample " << s << " dealt twice";
  }
  EXPECT_EQ(static_cast<std::int64_t>(seen.size()), kSamples);
  EXPECT_EQ(clocks, 4);  // ceil(334 / 100)
}

TEST(SampleSchedule, EpochOrderIsSeededAndChangesPerEpoch) {
  SampleSchedule a(500, 2, 1, 50, 3), b(500, 2, 1, 50, 3);
  EXPECT_EQ(a.EpochOrder(4), b.EpochOrder(4));
  EXPECT_NE(a.EpochOrder(4), a.EpochOrder(5));
  std::vector<std::int64_t> e0 = a.EpochOrder(0), e1 = a.EpochOrder(1);
  std::ranges::sort(e0);
  std::ranges::sort(e1);
  EXPECT_EQ(e0, e1) << "an epoch visits the same share";
}

TEST(AppRegistry, UnknownAppListsTheKnownOnes) {
  AppRegistry registry;
  const auto factory = [](const AppContext&) -> Result<std::unique_ptr<App>> { return Unimplemented("not needed"); };
  ASSERT_TRUE(registry.Add<proto::MergeConfig>("mf", nullptr, factory).ok());
  EXPECT_EQ(registry.Add<proto::MergeConfig>("mf", nullptr, factory).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(registry.Add<proto::MergeConfig>("x", nullptr, nullptr).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(registry.Add<proto::MergeConfig>("not a name", nullptr, factory).code(), StatusCode::kInvalidArgument);
  proto::Config config;
  const data::DatasetCatalog datasets;
  const Result<std::unique_ptr<App>> app = registry.Create("lda", AppContext{config, "/nowhere", datasets});
  EXPECT_EQ(app.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(app.status().message().find("(apps: mf)"), std::string::npos) << app.status().message();
}

TEST(ModeRegistry, BuiltinModesAndUnknownMode) {
  ModeRegistry modes;
  ASSERT_TRUE(RegisterBuiltinModes(modes).ok());
  EXPECT_EQ(modes.KnownNames(), "ALLREDUCE, ASP, BSP, DIRECT, ESSP, SSP");
  EXPECT_EQ(ValueOrThrow(modes.Find("ssp"))->name, "SSP");
  EXPECT_FALSE(ValueOrThrow(modes.Find("ALLREDUCE"))->uses_memory_ranks);
  const auto unknown = modes.Find("FAST");
  EXPECT_EQ(unknown.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(unknown.status().message().find("unknown mode 'FAST' (modes: ALLREDUCE, ASP, BSP, DIRECT, ESSP, SSP)"),
            std::string::npos);
  EXPECT_EQ(modes.Add(modes::SspMode()).code(), StatusCode::kInvalidArgument) << "registered twice";
}

TEST(RandomStream, SameSeedRankClockSameDrawsOthersDiffer) {
  RandomStream a = RandomStream::For(7, 1, 3), b = RandomStream::For(7, 1, 3);
  RandomStream c = RandomStream::For(7, 2, 3), d = RandomStream::For(7, 1, 4);
  const std::uint64_t first = a.Next();
  EXPECT_EQ(first, b.Next());
  EXPECT_NE(first, c.Next());
  EXPECT_NE(first, d.Next());
  // Below(n) stays in range and covers it (a broken reduction would not).
  std::vector<int> seen(10, 0);
  for (int i = 0; i < 10000; ++i) ++seen[static_cast<std::size_t>(a.Below(10))];
  for (int n : seen) EXPECT_GT(n, 850);
  double mean = 0;
  for (int i = 0; i < 20000; ++i) mean += a.Normal() / 20000;
  EXPECT_NEAR(mean, 0.0, 0.05);
}

TEST(ReportWriter, WritesSnakeCaseJsonWithEveryField) {
  proto::Report report;
  report.set_app("mf");
  report.set_mode("SSP");
  report.mutable_final()->set_metric("test_rmse");
  report.mutable_final()->set_value(0.87);
  proto::RankReport* rank = report.add_ranks();
  rank->set_rank(3);
  rank->set_role("memory");
  rank->set_bytes_merged(123);
  const std::string json = ValueOrThrow(metrics::ReportToJson(report));
  for (const char* key : {"\"compute_ranks\"", "\"memory_ranks\"", "\"wall_seconds\"", "\"model_checksum\"",
                          "\"max_observed_staleness\"", "\"rejected_batches\"", "\"bytes_put\"", "\"stall_seconds\"",
                          "\"batches_merged\"", "\"bytes_merged\"", "\"curve\"", "\"final\""}) {
    EXPECT_NE(json.find(key), std::string::npos) << key << " missing in " << json;
  }
  EXPECT_EQ(json.find("computeRanks"), std::string::npos) << "camelCase leaked";
  // 64-bit counts are JSON numbers, not the proto3 mapping's quoted strings.
  EXPECT_NE(json.find("\"bytes_merged\": 123"), std::string::npos) << json;
  EXPECT_EQ(json.find("\"bytes_merged\": \"123\""), std::string::npos) << json;

  const std::filesystem::path path = std::filesystem::temp_directory_path() / "stalelearn_report_test.json";
  ASSERT_TRUE(metrics::WriteReportFile(report, path.string()).ok());
  std::ifstream in(path);
  const std::string written((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const proto::Report back = ValueOrThrow(metrics::ReportFromJson(written));
  EXPECT_EQ(back.ranks(0).bytes_merged(), 123);
  EXPECT_EQ(back.final().value(), 0.87);
  std::filesystem::remove(path);

  EXPECT_EQ(metrics::WriteReportFile(report, "/nonexistent-dir/r.json").code(), StatusCode::kInvalidArgument);
  // Where the report could not go at the end of a run, it survives in a temporary file.
  const std::string saved = ValueOrThrow(metrics::WriteReportToTemporaryFile(report));
  EXPECT_NE(saved.find("stalelearn-report-"), std::string::npos) << saved;
  std::ifstream saved_in(saved);
  const std::string saved_json((std::istreambuf_iterator<char>(saved_in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(ValueOrThrow(metrics::ReportFromJson(saved_json)).ranks(0).bytes_merged(), 123);
  std::filesystem::remove(saved);
  EXPECT_TRUE(metrics::CheckWritable(path.string(), "--report").ok());
  EXPECT_FALSE(std::filesystem::exists(path)) << "the check must not create the report";
  EXPECT_EQ(metrics::CheckWritable("/nonexistent-dir/r.json", "--report").code(), StatusCode::kInvalidArgument);
}

TEST(CountingTransport, CountsWhatTheRankSendsAndFetches) {
  auto group = ValueOrThrow(transport::InProcessGroup::Create(1));
  auto bootstrap = ValueOrThrow(group->MakeBootstrap(transport::Rank{0}));
  const std::map<std::string, std::string> options;
  const transport::BackendContext context{*bootstrap, options, backends::BuiltinRegistry()};
  auto inner = ValueOrThrow(backends::BuiltinRegistry().Create("local", context));
  metrics::CountingTransport counting(*inner);
  auto region = ValueOrThrow(counting.Register(256, transport::Access::kAll));
  auto remote = ValueOrThrow(counting.Import(transport::Rank{0}, region->key()));
  std::vector<std::byte> buffer(100);
  ASSERT_TRUE(transport::PutBlocking(counting, buffer.data(), 100, *remote, 0, std::chrono::seconds(1)).ok());
  ASSERT_TRUE(transport::PutBlocking(counting, buffer.data(), 8, *remote, 128, std::chrono::seconds(1)).ok());
  ASSERT_TRUE(transport::GetBlocking(counting, buffer.data(), 64, *remote, 0, std::chrono::seconds(1)).ok());
  ASSERT_TRUE(transport::FetchAddBlocking(counting, *remote, 128, 1, std::chrono::seconds(1)).ok());
  // A refused put moved nothing and is not counted.
  EXPECT_FALSE(counting.Put(buffer.data(), 100, *remote, 250).ok());
  const metrics::TransportCounters c = counting.counters();
  EXPECT_EQ(c.puts, 2);
  EXPECT_EQ(c.bytes_put, 108);
  EXPECT_EQ(c.gets, 1);
  EXPECT_EQ(c.bytes_get, 64);
  EXPECT_EQ(c.atomics, 1);
}

}  // namespace
}  // namespace stalelearn::runtime
