// main() of the GoogleTest binaries run under mpirun. Links MPI only through
// stalelearn_mpi (framework/transport/mpi_bootstrap.h).
#include "tests/integration/mpi_gtest_main.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "framework/core/log.h"
#include "framework/transport/mpi_bootstrap.h"

namespace stalelearn::testing {
namespace {

transport::Bootstrap* g_bootstrap = nullptr;  // set while the tests run

// Silences the default printer on ranks other than 0 so the test list and
// the summary appear once; failures are still reported on stderr.
class FailureToStderr : public ::testing::EmptyTestEventListener {
 public:
  explicit FailureToStderr(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::fprintf(stderr, "[rank %d] %s:%d: Failure\n%s\n", rank_, result.file_name() ? result.file_name() : "?",
                 result.line_number(), result.summary());
  }

 private:
  int rank_;
};

// xml:out.xml -> xml:out.rank1.xml, so ranks never write the same file.
std::string PerRankOutput(const std::string& flag, int rank) {
  const auto dot = flag.rfind('.');
  const auto colon = flag.find(':');
  if (dot == std::string::npos || (colon != std::string::npos && dot < colon)) {
    return flag + ".rank" + std::to_string(rank);
  }
  return flag.substr(0, dot) + ".rank" + std::to_string(rank) + flag.substr(dot);
}

}  // namespace

transport::Bootstrap& MpiTestBootstrap() {
  if (g_bootstrap == nullptr) {
    std::fprintf(stderr, "MpiTestBootstrap() called outside RunGtestUnderMpi\n");
    std::abort();
  }
  return *g_bootstrap;
}

int RunGtestUnderMpi(int argc, char** argv) {
  auto session = transport::MpiSession::Start(&argc, &argv);
  if (!session.ok()) {
    std::fprintf(stderr, "cannot start MPI: %s\n", session.status().ToString().c_str());
    return 1;
  }
  const int rank = (*session)->rank();
  log::SetThreadRank(rank);
  // GoogleTest opens its XML file while parsing flags, so the per-rank name
  // must be in place before InitGoogleTest: from GTEST_OUTPUT (already in the
  // flag) and from --gtest_output= on the command line.
  std::vector<std::string> args(argv, argv + argc);
  if (!GTEST_FLAG_GET(output).empty()) GTEST_FLAG_SET(output, PerRankOutput(GTEST_FLAG_GET(output), rank));
  constexpr std::string_view kOutputFlag = "--gtest_output=";
  for (auto& arg : args) {
    if (arg.starts_with(kOutputFlag)) {
      arg = std::string(kOutputFlag) + PerRankOutput(arg.substr(kOutputFlag.size()), rank);
    }
  }
  std::vector<char*> arg_pointers;
  for (auto& arg : args) arg_pointers.push_back(arg.data());
  int gtest_argc = static_cast<int>(arg_pointers.size());
  ::testing::InitGoogleTest(&gtest_argc, arg_pointers.data());

  if (rank != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new FailureToStderr(rank));
  }

  auto bootstrap = transport::MakeMpiBootstrap();
  if (!bootstrap.ok()) {
    std::fprintf(stderr, "cannot make the MPI bootstrap: %s\n", bootstrap.status().ToString().c_str());
    transport::MpiSession::Abort(1);
  }
  g_bootstrap = bootstrap->get();
  const int local_failed = RUN_ALL_TESTS() == 0 ? 0 : 1;

  // Max over ranks: every rank returns 1 if any rank failed.
  std::int64_t failed = local_failed;
  if (auto status = g_bootstrap->AllReduceMax(std::span(&failed, 1)); !status.ok()) {
    std::fprintf(stderr, "cannot reduce the test result: %s\n", status.ToString().c_str());
    failed = 1;
  }
  if (rank == 0 && failed != 0 && local_failed == 0) {
    std::printf("[  FAILED  ] a test failed on another rank (see stderr)\n");
  }
  g_bootstrap = nullptr;
  bootstrap->reset();
  return failed != 0 ? 1 : 0;
}

}  // namespace stalelearn::testing

int main(int argc, char** argv) { return stalelearn::testing::RunGtestUnderMpi(argc, argv); }
