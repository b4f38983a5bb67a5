// The `stalelearn` program as a user runs it: what `version` reports, what
// `bench rma` measures, and the one-line errors for backend options. Runs the
// built binary (STALELEARN_BINARY_DIR/bin/stalelearn) with ranks as threads.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

namespace stalelearn::cli {
namespace {

namespace fs = std::filesystem;

struct CommandRun {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::string ReadAll(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

CommandRun Stalelearn(const std::string& arguments) {
  const fs::path dir = fs::path(::testing::TempDir()) / "stalelearn_cli_test";
  fs::create_directories(dir);
  const fs::path out = dir / "out.txt", err = dir / "err.txt";
  const std::string command = "'" STALELEARN_BINARY_DIR "/bin/stalelearn' " + arguments + " >'" + out.string() +
                              "' 2>'" + err.string() + "' </dev/null";
  const int status = std::system(command.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, ReadAll(out), ReadAll(err)};
}

TEST(Cli, VersionNamesTheUcxAndMpiLibrariesItRunsWith) {
  const CommandRun run = Stalelearn("version");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_TRUE(std::regex_search(run.out, std::regex("^stalelearn [0-9]+\\.[0-9]+\\.[0-9]+ \\(protobuf ")))
      << run.out;
  EXPECT_TRUE(std::regex_search(run.out, std::regex("\nUCX ([0-9]+\\.[0-9]+\\.[0-9]+|: not built)\n"))) << run.out;
  EXPECT_TRUE(std::regex_search(run.out, std::regex("\nMPI: [^\n]*[0-9]+\\.[0-9]+[^\n]*\n$"))) << run.out;
}

TEST(Cli, BenchRmaLatencyIsAMeasuredMedianRoundTripNotOneOverTheRate) {
  const CommandRun run = Stalelearn("bench rma --backend local --op put --size 4096 --iters 300 --warmup 10 --window 64 --json");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  std::smatch latency, samples, rate;
  ASSERT_TRUE(std::regex_search(run.out, latency, std::regex("\"latency_us\": ([0-9.]+)"))) << run.out;
  ASSERT_TRUE(std::regex_search(run.out, samples, std::regex("\"latency_samples\": ([0-9]+)"))) << run.out;
  ASSERT_TRUE(std::regex_search(run.out, rate, std::regex("\"rate_mops\": ([0-9.]+)"))) << run.out;
  EXPECT_EQ(std::stoi(samples[1]), 300) << "one timed round trip per measured operation, up to 1000";
  EXPECT_GT(std::stod(latency[1]), 0.0);
  EXPECT_GT(std::stod(rate[1]), 0.0);
  const CommandRun text = Stalelearn("bench rma --backend local --op fadd --iters 50 --warmup 0");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("(median of 50 fetch-add round trips)"), std::string::npos) << text.out;
}

// Every backend rejects an unknown option with one line naming the backend
// once, and exit code 2 (bad input).
TEST(Cli, UnknownBackendOptionIsOneCleanLine) {
  const struct {
    const char* backend;
    const char* expected;
  } cases[] = {
      {"local", "stalelearn: error: backend 'local': unknown option 'bogus' (the local backend takes no options)\n"},
      {"timing", "stalelearn: error: backend 'timing': unknown option 'bogus' (known: inner, memory, link, compute, "
                 "preset_dir, schedule, inner.<key>)\n"},
#ifdef STALELEARN_WITH_UCX
      {"ucx", "stalelearn: error: backend 'ucx': unknown option 'bogus' (known: net_devices, progress_thread, tls)\n"},
#endif
  };
  for (const auto& c : cases) {
    const CommandRun run = Stalelearn(std::string("bench rma --op put --size 8 --iters 1 --backend ") + c.backend +
                               " --backend-option bogus=1");
    EXPECT_EQ(run.exit_code, 2) << c.backend;
    EXPECT_EQ(run.err, c.expected) << c.backend;
  }
}

}  // namespace
}  // namespace stalelearn::cli
