// The conformance suite on the 'ucx' backend under mpirun, one rank per
// process, the MPI bootstrap exchanging addresses and keys: over shared memory
// (UCX's default within a node) and over tcp. CTest runs each variant as its
// own mpirun job with --gtest_filter (conformance_ucx.cmake);
// RunGtestUnderMpi reduces the result over the ranks.
#include "backends/ucx/register.h"
#include "tests/conformance/conformance_harness.h"
#include "tests/integration/mpi_gtest_main.h"

namespace stalelearn::conformance {
namespace {

// Every process is one rank: run the body once with this job's bootstrap.
void OnThisMpiRank(const RankBody& body) { body(stalelearn::testing::MpiTestBootstrap()); }

INSTANTIATE_TEST_SUITE_P(UcxMpiShm, Conformance,
                         ::testing::ValuesIn(CasesFor({"ucx_mpi_shm", "ucx", {}, backends::ucx::RegisterBackend,
                                                       OnThisMpiRank})),
                         ConformanceParamName);

// Ranks progress only while they wait in the suite's RMA barriers and loops.
// tcp is pinned to loopback: an interface that comes and goes (the cluster
// box's bridge, tests/cluster) must not be picked.
INSTANTIATE_TEST_SUITE_P(UcxMpiTcp, Conformance,
                         ::testing::ValuesIn(CasesFor({"ucx_mpi_tcp", "ucx", {{"tls", "tcp"}, {"net_devices", "lo"}},
                                                       backends::ucx::RegisterBackend, OnThisMpiRank})),
                         ConformanceParamName);

// A thread serves peers' RMA, so ranks need not progress while they wait.
INSTANTIATE_TEST_SUITE_P(UcxMpiTcpProgressThread, Conformance,
                         ::testing::ValuesIn(CasesFor({"ucx_mpi_tcp_progress_thread", "ucx",
                                                       {{"tls", "tcp"}, {"net_devices", "lo"}, {"progress_thread", "on"}},
                                                       backends::ucx::RegisterBackend, OnThisMpiRank})),
                         ConformanceParamName);

}  // namespace
}  // namespace stalelearn::conformance
