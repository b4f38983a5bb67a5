// The pieces of `stalelearn sweep` without running anything: grid parsing
// and expansion, targets, what a run's report becomes (outcome.h), and the
// CSV files made from fake reports (tables.h).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <sstream>

#include "apps/cli/sweep/grid.h"
#include "apps/cli/sweep/outcome.h"
#include "apps/cli/sweep/tables.h"

namespace stalelearn::cli::sweep {
namespace {

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(SweepGrid, ExpandsTheCartesianProductFirstAxisSlowestRepeatsInnermost) {
  const Grid grid = *ParseGrid({"consistency.staleness=0,2,4", "consistency.mode=SSP,ASP"});
  const std::vector<GridRun> runs = ExpandGrid(grid, 2, "training.straggler.seed");
  ASSERT_EQ(runs.size(), 12u);
  EXPECT_EQ(runs[0].name, "consistency.staleness=0__consistency.mode=SSP__r1");
  EXPECT_EQ(runs[1].name, "consistency.staleness=0__consistency.mode=SSP__r2");
  EXPECT_EQ(runs[2].point_name, "consistency.staleness=0__consistency.mode=ASP");
  EXPECT_EQ(runs[11].name, "consistency.staleness=4__consistency.mode=ASP__r2");
  EXPECT_EQ(runs[3].overrides, (std::vector<std::string>{"consistency.staleness=0", "consistency.mode=ASP",
                                                         "training.straggler.seed=2"}));
  std::set<std::string> names;
  for (const GridRun& r : runs) names.insert(r.name);
  EXPECT_EQ(names.size(), runs.size()) << "every run has its own directory";
}

TEST(SweepGrid, JoinedFieldsMoveTogether) {
  const Grid grid = *ParseGrid({"consistency.mode:consistency.staleness=SSP:0,SSP:2,ASP:0"});
  const std::vector<GridRun> runs = ExpandGrid(grid, 1, "");
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[1].overrides, (std::vector<std::string>{"consistency.mode=SSP", "consistency.staleness=2"}));
  EXPECT_EQ(runs[2].values, (std::vector<std::string>{"ASP:0"}));
  EXPECT_FALSE(ParseGrid({"consistency.mode:consistency.staleness=SSP:0,ASP"}).ok());
}

TEST(SweepGrid, NoAxisIsOnePointAndNoRepeatFieldAddsNoOverride) {
  const std::vector<GridRun> runs = ExpandGrid({}, 3, "");
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[2].name, "base__r3");
  EXPECT_TRUE(runs[0].overrides.empty());
}

TEST(SweepGrid, BadAxesAreOneLineErrors) {
  for (const std::vector<std::string>& bad : std::vector<std::vector<std::string>>{
           {"consistency.staleness"}, {"=1,2"}, {"a=1,,2"}, {"a=1,1"}, {"a=1", "a=2"}}) {
    const Result<Grid> grid = ParseGrid(bad);
    ASSERT_FALSE(grid.ok()) << bad.front();
    EXPECT_EQ(grid.status().message().find('\n'), std::string::npos);
    EXPECT_NE(grid.status().message().find("--grid"), std::string::npos) << grid.status().message();
  }
  EXPECT_EQ(SafeFileName("timing.preset_dir=/a b"), "timing.preset_dir=_a_b");
}

TEST(SweepTarget, ParsesDirectionAndRejectsJunk) {
  EXPECT_FALSE(ParseTarget("", "")->set);
  const Target loss = *ParseTarget("0.9", "");
  EXPECT_TRUE(loss.ReachedBy(0.9));
  EXPECT_FALSE(loss.ReachedBy(0.91));
  const Target accuracy = *ParseTarget(">=0.95", "");
  EXPECT_TRUE(accuracy.ReachedBy(0.96));
  EXPECT_FALSE(accuracy.ReachedBy(0.94));
  EXPECT_EQ(accuracy.ToString(), ">=0.95");
  EXPECT_FALSE(ParseTarget("<0.9", "").ok());
  EXPECT_FALSE(ParseTarget("fast", "").ok());
}

// A report as a timing run over 2 compute + 1 memory rank writes it.
proto::Report FakeReport(std::vector<double> rmse_per_epoch, double sim_total, bool deterministic = true) {
  proto::Report report;
  report.set_epochs(static_cast<int>(rmse_per_epoch.size()));
  report.set_wall_seconds(12.5);
  report.mutable_final()->set_metric("test_rmse");
  report.mutable_final()->set_value(rmse_per_epoch.back());
  for (std::size_t e = 0; e < rmse_per_epoch.size(); ++e) {
    proto::CurvePoint* p = report.add_curve();
    p->set_epoch(static_cast<int>(e + 1));
    p->set_metric_value(rmse_per_epoch[e]);
    p->set_wall_seconds(1.0 * static_cast<double>(e + 1));
    p->set_simulated_seconds(sim_total * static_cast<double>(e + 1) / static_cast<double>(rmse_per_epoch.size()));
    (*p->mutable_metrics())["test_mae"] = rmse_per_epoch[e] / 2;
  }
  (*report.mutable_final()->mutable_metrics())["test_mae"] = rmse_per_epoch.back() / 2;
  for (int r = 0; r < 3; ++r) {
    proto::RankReport* rank = report.add_ranks();
    rank->set_rank(r);
    rank->set_role(r < 2 ? "compute" : "memory");
    rank->set_clocks(r < 2 ? 10 * report.epochs() + 1 : 0);  // 10 clocks per epoch and an initialisation clock
    rank->set_bytes_put(r < 2 ? 1000 : 0);
    rank->set_bytes_get(r < 2 ? 3000 : 0);
    rank->set_stall_seconds(r == 0 ? 2.0 : 4.0);
    rank->set_max_observed_staleness(r);
    proto::SimulatedRank* sim = report.mutable_simulated()->add_ranks();
    sim->set_rank(r);
    sim->set_compute_seconds(r < 2 ? 0.5 + r : 0);
    sim->set_merge_seconds(r < 2 ? 0 : 0.25);
    sim->set_wait_seconds(r < 2 ? 0.1 : 0.7);
  }
  report.mutable_simulated()->set_total_seconds(sim_total);
  report.mutable_simulated()->set_deterministic(deterministic);
  return report;
}

TEST(SweepOutcome, FindsTheFirstEpochAtTargetAndAveragesTheComputeRanks) {
  const Target target = *ParseTarget("<=0.9", "");
  const RunOutcome o = *Summarize(FakeReport({1.2, 0.95, 0.88, 0.85}, 8.0), target);
  EXPECT_EQ(o.metric, "test_rmse");
  EXPECT_DOUBLE_EQ(o.final_value, 0.85);
  EXPECT_EQ(o.clocks_per_epoch, 10);
  EXPECT_EQ(*o.epochs_to_target, 3);
  EXPECT_EQ(*o.clocks_to_target, 30);
  EXPECT_DOUBLE_EQ(*o.sim_seconds_to_target, 6.0);
  EXPECT_DOUBLE_EQ(*o.wall_seconds_to_target, 3.0);
  EXPECT_DOUBLE_EQ(*o.sim_compute, 1.0);  // mean of 0.5 and 1.5
  EXPECT_DOUBLE_EQ(*o.sim_merge, 0.25);   // the memory rank's
  EXPECT_DOUBLE_EQ(*o.sim_wait, 0.1);     // compute ranks only
  EXPECT_DOUBLE_EQ(o.stall_seconds, 3.0);
  EXPECT_EQ(o.bytes_put, 2000);
  EXPECT_EQ(o.max_staleness, 2);
  EXPECT_FALSE(Summarize(FakeReport({1.2, 1.1}, 1.0), target)->epochs_to_target.has_value());

  const RunOutcome mae = *Summarize(FakeReport({1.2, 0.95, 0.88}, 8.0), *ParseTarget("<=0.5", "test_mae"));
  EXPECT_EQ(mae.metric, "test_mae");
  EXPECT_EQ(*mae.epochs_to_target, 2);  // 0.475
  EXPECT_FALSE(Summarize(FakeReport({1.0}, 1.0), *ParseTarget("<=0.5", "bogus")).ok());
}

std::vector<SweepRun> FakeSweep(const Grid& grid, const Target& target, bool deterministic = true) {
  // mode x repeats 3: ASP slow to converge, SSP fast, BSP in between.
  const std::map<std::string, std::vector<std::vector<double>>> curves = {
      {"BSP", {{1.0, 0.85, 0.8}, {1.0, 0.95, 0.85}, {1.0, 0.95, 0.92}}},
      {"SSP", {{0.85, 0.8, 0.8}, {0.95, 0.85, 0.8}, {0.88, 0.8, 0.8}}},
      {"ASP", {{1.0, 1.0, 0.95}, {1.0, 0.99, 0.98}, {0.99, 0.97, 0.96}}}};
  const std::map<std::string, double> makespan = {{"BSP", 6.0}, {"SSP", 3.0}, {"ASP", 2.0}};
  std::vector<SweepRun> runs;
  for (const GridRun& run : ExpandGrid(grid, 3, "seed")) {
    const std::string& mode = run.values[0];
    runs.push_back({run, *Summarize(FakeReport(curves.at(mode)[run.repeat - 1], makespan.at(mode), deterministic),
                                    target)});
  }
  return runs;
}

TEST(SweepTables, ResultsHaveOneRowPerRunWithEveryColumnAndNoWallClockWhenDeterministic) {
  const Grid grid = *ParseGrid({"consistency.mode=BSP,SSP,ASP"});
  const Target target = *ParseTarget("<=0.9", "");
  const std::vector<std::string> lines = Lines(ResultsCsv(grid, target, FakeSweep(grid, target)));
  ASSERT_EQ(lines.size(), 10u);
  EXPECT_EQ(lines[0],
            "consistency.mode,repeat,run,metric,target,status,final,epochs_to_target,clocks_to_target,sim_seconds_to_target,"
            "sim_seconds,sim_compute_s,sim_transfer_s,sim_merge_s,sim_wait_s,bytes_put,bytes_get,max_staleness");
  EXPECT_EQ(lines[1], "BSP,1,consistency.mode=BSP__r1,test_rmse,<=0.9,ok,0.8,2,20,4,6,1,0,0.25,0.1,2000,6000,2");
  EXPECT_EQ(lines[9], "ASP,3,consistency.mode=ASP__r3,test_rmse,<=0.9,ok,0.96,,,,2,1,0,0.25,0.1,2000,6000,2");
  EXPECT_EQ(WallCsv(grid, FakeSweep(grid, target)).find("wall_seconds"), std::string("consistency.mode,repeat,run,").size());

  const std::string with_wall = ResultsCsv(grid, target, FakeSweep(grid, target, /*deterministic=*/false));
  EXPECT_NE(Lines(with_wall)[0].find(",wall_seconds_to_target,wall_seconds,stall_seconds"), std::string::npos);
  EXPECT_NE(Lines(with_wall)[1].find(",2,12.5,3"), std::string::npos) << Lines(with_wall)[1];
}

TEST(SweepTables, SummaryTakesMedianMinMaxOverRepeatsAndCountsUnreachedAsLate) {
  const Grid grid = *ParseGrid({"consistency.mode=BSP,SSP,ASP"});
  const Target target = *ParseTarget("<=0.9", "");
  const std::vector<std::string> lines = Lines(SummaryCsv(grid, FakeSweep(grid, target)));
  ASSERT_EQ(lines.size(), 4u);
  const auto starts = [](const std::string& line, const std::string& prefix) {
    EXPECT_EQ(line.rfind(prefix, 0), 0u) << line;
  };
  starts(lines[0], "consistency.mode,runs,reached,timed_out,diverged,final_median,final_min,final_max,epochs_to_target_median,");
  // BSP: finals 0.8, 0.85, 0.92; epochs to 0.9: 2, 3, never -> median 3, min 2, max empty.
  starts(lines[1], "BSP,3,2,0,0,0.85,0.8,0.92,3,2,,30,20,,6,4,,6,");
  // SSP reaches at epochs 1, 2, 1.
  starts(lines[2], "SSP,3,3,0,0,0.8,0.8,0.8,1,1,2,10,10,20,1,1,2,3,");
  // ASP never does: every to-target cell is empty.
  starts(lines[3], "ASP,3,0,0,0,0.96,0.95,0.98,,,,,,,,,,2,2,2,");
  EXPECT_DOUBLE_EQ(Median({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(Median({4, 1, 2, 3}), 2.5);
  EXPECT_TRUE(std::isinf(Median({1, std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity()})));
}

TEST(SweepTables, ADivergedRunsNaNIsAnEmptyCellAndLeftOutOfTheMedian) {
  const Grid grid = *ParseGrid({"consistency.staleness=16"});
  const Target target = *ParseTarget("<=0.9", "");
  std::vector<SweepRun> runs;
  for (const GridRun& run : ExpandGrid(grid, 3, "seed")) {
    const double last = run.repeat == 2 ? std::nan("") : 0.8 + 0.01 * run.repeat;
    runs.push_back({run, *Summarize(FakeReport({1.0, 0.95, last}, 3.0), target)});
  }
  const std::string diverged = Lines(ResultsCsv(grid, target, runs))[2];
  EXPECT_NE(diverged.find("__r2,test_rmse,<=0.9,ok,,,,,"), std::string::npos) << diverged;
  // finals 0.81, NaN, 0.83: median of the two numbers; the NaN run never reached the target.
  EXPECT_EQ(Lines(SummaryCsv(grid, runs))[1].rfind("16,3,2,0,0,0.82,0.81,0.83,3,3,,", 0), 0u) << Lines(SummaryCsv(grid, runs))[1];
}

TEST(SweepTables, RunsWithoutAReportHaveAStatusEmptyValuesAndCountAsNeverReaching) {
  const Grid grid = *ParseGrid({"consistency.staleness=4"});
  const Target target = *ParseTarget("<=0.9", "");
  const std::vector<GridRun> expanded = ExpandGrid(grid, 3, "seed");
  std::vector<SweepRun> runs = {{expanded[0], *Summarize(FakeReport({1.0, 0.85}, 2.0), target)},
                                {expanded[1], FailedOutcome(RunStatus::kTimedOut, target, 30)},
                                {expanded[2], FailedOutcome(RunStatus::kDiverged, target, 1)}};
  const std::vector<std::string> lines = Lines(ResultsCsv(grid, target, runs));
  EXPECT_EQ(lines[2], "4,2,consistency.staleness=4__r2,,<=0.9,timeout,,,,,,,,,,,,");
  EXPECT_EQ(lines[3], "4,3,consistency.staleness=4__r3,,<=0.9,diverged,,,,,,,,,,,,");
  // One of three reached (epoch 2); the others count as infinitely late: the median is empty.
  EXPECT_EQ(Lines(SummaryCsv(grid, runs))[1].rfind("4,3,1,1,1,0.85,0.85,0.85,,2,,", 0), 0u)
      << Lines(SummaryCsv(grid, runs))[1];
}

TEST(SweepTables, SpeedupDividesTheBaselinesMedianTimeAndEndsWithTheGeometricMean) {
  const Grid grid = *ParseGrid({"consistency.mode=BSP,SSP,ASP"});
  const Target target = *ParseTarget("<=0.9", "");
  const Baseline baseline = *ParseBaseline("consistency.mode=BSP", grid);
  const std::vector<std::string> lines = Lines(SpeedupCsv(grid, baseline, FakeSweep(grid, target)));
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_EQ(lines[0], "row,consistency.mode,baseline,time,seconds,baseline_seconds,speedup,seconds_to_target,"
                      "baseline_seconds_to_target,speedup_to_target");
  // SSP: makespan 3 against 6; to target: median 1 epoch of 3 s/3 = 1 s against BSP's 3 epochs x 2 s = 6 s.
  EXPECT_EQ(lines[1], "point,SSP,BSP,simulated,3,6,2,1,6,6");
  EXPECT_EQ(lines[2], "point,ASP,BSP,simulated,2,6,3,,6,");
  EXPECT_EQ(lines[3], "geomean,SSP,BSP,simulated,,,2,,,6");
  EXPECT_EQ(lines[4], "geomean,ASP,BSP,simulated,,,3,,,");
  EXPECT_FALSE(ParseBaseline("consistency.mode=DIRECT", grid).ok());
  EXPECT_FALSE(ParseBaseline("consistency.staleness=0", grid).ok());
}

}  // namespace
}  // namespace stalelearn::cli::sweep
