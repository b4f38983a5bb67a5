// The report guide (docs/guide/report.md, "The trace") names the trace file's columns exactly as the runtime writes
// them (a short SSP run with output.trace set, ranks as threads).
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <sstream>

#include "tests/integration/train_support.h"

namespace stalelearn::testing {
namespace {

TEST(Readme, TraceColumnsAreTheOnesTheRuntimeWrites) {
  std::ifstream in(STALELEARN_SOURCE_DIR "/docs/guide/report.md");
  std::stringstream readme;
  readme << in.rdbuf();
  std::smatch documented;
  const std::string text = readme.str();
  ASSERT_TRUE(std::regex_search(text, documented, std::regex("`output.trace: \"FILE\"`[^#]*?header\\s*`([a-z_,]+)`")))
      << "docs/guide/report.md no longer documents the trace header after `output.trace`";

  const CountingApp app(2 * 8 * 4);
  proto::Config config = TestConfig("SSP", 1, 1, /*epochs=*/1, /*samples_per_clock=*/8);
  config.mutable_output()->set_trace("trace.csv");  // the runtime gathers it; the CLI writes the file
  const LocalRun run = RunLocal(config, app, 3);
  const std::string& csv = run.ranks.at(0).trace_csv;
  ASSERT_FALSE(csv.empty());
  EXPECT_EQ(csv.substr(0, csv.find('\n')), documented[1].str());
}

}  // namespace
}  // namespace stalelearn::testing
