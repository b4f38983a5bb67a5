// `stalelearn sweep` as a user runs it: bad grids fail before any run, a
// tiny real sweep (logistic regression on a generated LIBSVM file, timing
// backend, ranks as threads; about a second) writes its tables, a rerun
// into a fresh directory gives byte-identical CSVs, and a rerun into the
// same directory runs only the runs without a report; a run past
// --run-timeout is stopped, recorded as such, and the sweep goes on.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

namespace stalelearn::cli {
namespace {

namespace fs = std::filesystem;

struct CommandRun {
  int exit_code = -1;
  std::string err;
};

std::string ReadAll(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

class SweepCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("sweep_cli_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    // 240 points, label = sign(2 x1 - x2 + 0.5 x3): separable, so accuracy climbs fast.
    std::mt19937 random(3);
    std::uniform_real_distribution<double> uniform(-1, 1);
    std::ofstream data(dir_ / "data.libsvm");
    for (int i = 0; i < 240; ++i) {
      double x[5];
      for (double& v : x) v = uniform(random);
      data << (2 * x[0] - x[1] + 0.5 * x[2] > 0 ? "+1" : "-1");
      for (int j = 0; j < 5; ++j) data << ' ' << j + 1 << ':' << x[j];
      data << '\n';
    }
    std::ofstream config(dir_ / "base.pbtxt");
    config << "seed: 7\napp { name: \"lr\" lr { learning_rate: 0.5 } }\n"
           << "data { path: \"" << (dir_ / "data.libsvm").string() << "\" test_fraction: 0.25 }\n"
           << "training { epochs: 4 samples_per_clock: 10 }\nbackend { name: \"timing\" }\n";
  }

  CommandRun Sweep(const std::string& arguments) {
    const fs::path err = dir_ / "err.txt";
    const std::string command = "'" STALELEARN_BINARY_DIR "/bin/stalelearn' sweep --config '" +
                                (dir_ / "base.pbtxt").string() + "' " + arguments + " >/dev/null 2>'" + err.string() +
                                "' </dev/null";
    const int status = std::system(command.c_str());
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, ReadAll(err)};
  }

  fs::path dir_;
};

TEST_F(SweepCli, BadGridFieldsAndValuesAreOneLineAndExit2BeforeAnyRun) {
  const struct {
    const char* grid;
    const char* expected;
  } cases[] = {
      {"--grid consistency.bogus=1,2", "bogus"},
      {"--grid consistency.staleness=2,x", "consistency.staleness"},
      {"--grid consistency.mode=SSP,NOPE", "NOPE"},
      {"--grid backend.timing.memory=hmc2,no-such-memory", "no-such-memory"},
      {"--grid consistency.staleness", "--grid"},
      {"--grid consistency.mode=SSP,BSP --baseline consistency.mode=DIRECT", "DIRECT"},
      {"--grid consistency.mode=SSP --target fast", "--target"},
  };
  for (const auto& c : cases) {
    const fs::path out = dir_ / "out";
    const CommandRun run = Sweep(std::string(c.grid) + " --out '" + out.string() + "'");
    EXPECT_EQ(run.exit_code, 2) << c.grid << ": " << run.err;
    EXPECT_EQ(Count(run.err, "\n"), 1) << c.grid << ": " << run.err;
    EXPECT_NE(run.err.find(c.expected), std::string::npos) << c.grid << ": " << run.err;
    EXPECT_FALSE(fs::exists(out / "runs")) << c.grid << ": nothing may run before every point is checked";
  }
}

TEST_F(SweepCli, TinySweepWritesTablesRerunsIdenticallyAndResumes) {
  const std::string grid =
      "--set consistency.staleness=2 --grid consistency.mode=BSP,SSP --repeats 2 --repeat-seed seed --target '>=0.8' "
      "--baseline consistency.mode=BSP --ranks 2:1 --out ";
  const fs::path a = dir_ / "a", b = dir_ / "b";
  const CommandRun first = Sweep(grid + "'" + a.string() + "'");
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const std::string results = ReadAll(a / "results.csv");
  EXPECT_EQ(Count(results, "\n"), 5) << results;
  EXPECT_EQ(results.find("consistency.mode,repeat,run,metric,target,status,final,"), 0u) << results;
  EXPECT_EQ(Count(results, ",>=0.8,ok,"), 4) << results;
  EXPECT_EQ(Count(results, ",test_accuracy,>=0.8,"), 4) << results;
  EXPECT_EQ(results.find("wall_seconds"), std::string::npos) << "deterministic tables carry no wall clock";
  EXPECT_EQ(Count(ReadAll(a / "summary.csv"), "\n"), 3);
  EXPECT_EQ(Count(ReadAll(a / "speedup.csv"), "\npoint,SSP,BSP,simulated,"), 1) << ReadAll(a / "speedup.csv");
  EXPECT_EQ(Count(ReadAll(a / "wall.csv"), "\n"), 5);
  for (const char* run : {"consistency.mode=BSP__r1", "consistency.mode=BSP__r2", "consistency.mode=SSP__r1",
                          "consistency.mode=SSP__r2"}) {
    EXPECT_TRUE(fs::exists(a / "runs" / run / "report.json")) << run;
    EXPECT_FALSE(fs::exists(a / "runs" / run / "report.partial.json")) << run;
  }
  if (std::system("command -v gnuplot >/dev/null 2>&1") == 0) {
    for (const char* plot : {"metric_vs_clock", "metric_vs_time", "to_target_vs_consistency.mode"}) {
      EXPECT_GT(fs::file_size(a / "plots" / (std::string(plot) + ".png")), 1000u) << plot;
      EXPECT_GT(fs::file_size(a / "plots" / (std::string(plot) + ".svg")), 1000u) << plot;
    }
  }

  const CommandRun again = Sweep(grid + "'" + b.string() + "'");
  ASSERT_EQ(again.exit_code, 0) << again.err;
  for (const char* csv : {"results.csv", "summary.csv", "curves.csv", "speedup.csv"}) {
    EXPECT_EQ(ReadAll(a / csv), ReadAll(b / csv)) << csv << " differs between two runs of the same sweep";
  }

  // Resume: with one report removed (and a half-written one in its place),
  // only that run runs again.
  const fs::path kept = a / "runs" / "consistency.mode=SSP__r1" / "report.json";
  const auto kept_time = fs::last_write_time(kept);
  fs::remove(a / "runs" / "consistency.mode=BSP__r2" / "report.json");
  std::ofstream(a / "runs" / "consistency.mode=BSP__r2" / "report.partial.json") << "{\"app\": \"l";
  const CommandRun resumed = Sweep(grid + "'" + a.string() + "'");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_EQ(Count(resumed.err, "recorded before"), 3) << resumed.err;
  EXPECT_EQ(fs::last_write_time(kept), kept_time);
  EXPECT_TRUE(fs::exists(a / "runs" / "consistency.mode=BSP__r2" / "report.json"));
  EXPECT_EQ(ReadAll(a / "results.csv"), results);

  // Another --set in the same directory would mix runs of two sweeps.
  const CommandRun other = Sweep("--set training.epochs=3 " + grid + "'" + a.string() + "'");
  EXPECT_EQ(other.exit_code, 2) << other.err;
  EXPECT_NE(other.err.find("another base config"), std::string::npos) << other.err;
}

TEST_F(SweepCli, RunPastTheTimeoutIsStoppedRecordedAndTheSweepGoesOn) {
  // A data file that is a FIFO nobody writes: that run blocks in open()
  // forever, whatever the machine's speed; the other point trains normally.
  const fs::path fifo = dir_ / "never.libsvm";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const fs::path out = dir_ / "out";
  const std::string grid = "--grid data.path=" + fifo.string() + "," + (dir_ / "data.libsvm").string() +
                           " --target '>=0.8' --ranks 2:1 --no-plots --run-timeout 5 --out '" + out.string() + "'";
  const CommandRun first = Sweep(grid);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const std::string results = ReadAll(out / "results.csv");
  EXPECT_EQ(Count(results, "\n"), 3) << results;
  EXPECT_EQ(Count(results, ",test_accuracy,>=0.8,timeout,,"), 1) << results;  // every value empty
  EXPECT_EQ(Count(results, ",test_accuracy,>=0.8,ok,"), 1) << results;
  EXPECT_NE(results.find("never.libsvm__r1,test_accuracy,>=0.8,timeout,"), std::string::npos) << results;
  const std::string summary = ReadAll(out / "summary.csv");
  EXPECT_NE(summary.find(",runs,reached,timed_out,diverged,"), std::string::npos) << summary;
  EXPECT_NE(summary.find(",1,0,1,0,"), std::string::npos) << summary;
  EXPECT_NE(summary.find(",1,1,0,0,"), std::string::npos) << summary;

  // Resumed under the same timeout: the timed-out run is not tried again.
  const CommandRun resumed = Sweep(grid);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_EQ(Count(resumed.err, "recorded before, timed out"), 1) << resumed.err;
  EXPECT_EQ(Count(resumed.err, "recorded before, test_accuracy"), 1) << resumed.err;
  EXPECT_EQ(ReadAll(out / "results.csv"), results);

  EXPECT_EQ(Sweep("--grid consistency.staleness=1 --run-timeout -3 --out '" + out.string() + "'").exit_code, 2);
}

TEST_F(SweepCli, DivergedRunIsRecordedAndTheSweepGoesOn) {
  // A learning rate of 1e38 overflows the weights at the first merge: train
  // fails with "diverged: ..."; the sweep records it and runs the next point.
  const fs::path out = dir_ / "out";
  const std::string grid =
      "--grid app.lr.learning_rate=1e38,0.5 --ranks 2:1 --no-plots --out '" + out.string() + "'";
  const CommandRun first = Sweep(grid);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const std::string results = ReadAll(out / "results.csv");
  EXPECT_NE(results.find("\n1e38,1,app.lr.learning_rate=1e38__r1,test_accuracy,,diverged,,,,,,,,,,,,"),
            std::string::npos)
      << results;
  EXPECT_NE(results.find("\n0.5,1,app.lr.learning_rate=0.5__r1,test_accuracy,,ok,0.9"), std::string::npos) << results;
  EXPECT_NE(ReadAll(out / "summary.csv").find("\n1e38,1,0,0,1,"), std::string::npos) << ReadAll(out / "summary.csv");
  const CommandRun resumed = Sweep(grid);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_EQ(Count(resumed.err, "recorded before, diverged"), 1) << resumed.err;
  EXPECT_EQ(ReadAll(out / "results.csv"), results);
}

}  // namespace
}  // namespace stalelearn::cli
