// Fails on rank 1 only. Registered with WILL_FAIL: proves that RunGtestUnderMpi
// reduces the result, so a failure on a rank other than 0 fails the run.
#include <gtest/gtest.h>

#include "tests/integration/mpi_gtest_main.h"

TEST(MpiGtestMain, FailsOnRankOneOnly) {
  EXPECT_NE(stalelearn::testing::MpiTestBootstrap().rank().value, 1) << "deliberate failure on rank 1";
}
