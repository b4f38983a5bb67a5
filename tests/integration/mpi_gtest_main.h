// GoogleTest under mpirun (deploy/README.md, "MPI tests in CTest"): one process per
// rank runs the same tests. Test code reaches the job's bootstrap through
// MpiTestBootstrap(); the result is reduced over all ranks so a failure on any
// rank fails the run.
//
// Threading: everything here runs on the main thread of each rank.
#pragma once

#include "framework/transport/bootstrap.h"

namespace stalelearn::testing {

// Starts MPI, runs every test, reduces the result, finalises MPI. Returns 0
// only if every test passed on every rank. Ranks other than 0 print nothing to
// stdout (their failures still reach stderr); --gtest_output=xml:FILE becomes
// one FILE.rank<N>.xml per rank.
int RunGtestUnderMpi(int argc, char** argv);

// The MPI bootstrap of this job (a dup of MPI_COMM_WORLD), valid while
// RunGtestUnderMpi runs the tests. Collectives on it must be called by every
// rank in the same order, so tests must not skip on one rank only.
transport::Bootstrap& MpiTestBootstrap();

}  // namespace stalelearn::testing
