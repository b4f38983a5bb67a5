// Matrix factorization on the real MovieLens data converges in every mode on
// the local backend (skipped, with the command to run, when the data is not
// fetched). Short runs: 5 epochs reach ~0.896 test RMSE; 20 reach ~0.877.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <optional>

#include "apps/mf/datasets.h"
#include "apps/mf/mf_app.h"
#include "framework/core/error.h"
#include "framework/data/catalog.h"
#include "tests/integration/train_support.h"

namespace stalelearn::testing {
namespace {

constexpr int kEpochs = 5;
constexpr double kRmseBound = 0.91;

std::optional<std::string_view> Env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? std::nullopt : std::optional<std::string_view>(v);
}

std::filesystem::path MovieLensFile() {
  data::DatasetCatalog catalog;
  ThrowIfError(apps::mf::RegisterDatasets(catalog));
  const data::DatasetEntry& entry = *ValueOrThrow(catalog.Find("movielens"));
  return data::DatasetPath(entry, data::ResolveDataDir(Env("STALELEARN_DATA"), Env("HOME")));
}

struct MfCase {
  const char* label;
  std::string mode;
  int staleness;
  int compute;
  int memory;
  proto::Partitioning partitioning;
};
// gtest would print the raw bytes, padding included.
void PrintTo(const MfCase& c, std::ostream* os) { *os << c.label; }

class MfConverges : public ::testing::TestWithParam<MfCase> {};

TEST_P(MfConverges, TestRmseReachesTheBound) {
  const std::filesystem::path file = MovieLensFile();
  if (!std::filesystem::exists(file)) {
    GTEST_SKIP() << file << " not fetched; run: deploy/fetch-data.sh movielens";
  }
  const MfCase c = GetParam();
  proto::Config config = TestConfig(c.mode, c.staleness, c.memory, kEpochs, 1024);
  config.mutable_cluster()->set_partitioning(c.partitioning);
  config.mutable_cluster()->set_slot_bytes(1 << 20);
  config.mutable_data()->set_name("movielens");
  const std::unique_ptr<apps::mf::MfApp> app = ValueOrThrow(apps::mf::LoadMfApp(config, file));
  const LocalRun run = RunLocal(config, *app, c.compute + c.memory);
  const proto::Report& report = run.report();
  EXPECT_EQ(report.final().metric(), "test_rmse");
  EXPECT_LE(report.final().value(), kRmseBound);
  ASSERT_EQ(report.curve_size(), kEpochs);
  EXPECT_LT(report.curve(kEpochs - 1).metric_value(), report.curve(0).metric_value()) << "no progress";
  for (const proto::RankReport& r : report.ranks()) {
    if (c.mode == "SSP" || c.mode == "BSP") {
      EXPECT_LE(r.max_observed_staleness(), c.staleness) << "rank " << r.rank();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, MfConverges,
                         ::testing::Values(MfCase{"ssp2_3x1", "SSP", 2, 3, 1, proto::RANGE},
                                           MfCase{"ssp1_2x2_hash", "SSP", 1, 2, 2, proto::HASH},
                                           MfCase{"bsp_3x1", "BSP", 0, 3, 1, proto::RANGE},
                                           MfCase{"asp_3x1", "ASP", 0, 3, 1, proto::RANGE},
                                           MfCase{"direct_3x1", "DIRECT", 0, 3, 1, proto::RANGE},
                                           MfCase{"allreduce_4", "ALLREDUCE", 0, 4, 0, proto::RANGE}),
                         [](const auto& info) { return std::string(info.param.label); });

}  // namespace
}  // namespace stalelearn::testing
