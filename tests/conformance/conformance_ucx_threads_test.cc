// The conformance suite on the 'ucx' backend over shared memory with ranks as
// threads of one process: one UCX context and worker per thread, the
// in-process bootstrap exchanging their addresses and keys.
#include "backends/ucx/register.h"
#include "tests/conformance/conformance_harness.h"

namespace stalelearn::conformance {
namespace {

INSTANTIATE_TEST_SUITE_P(UcxShm, Conformance,
                         ::testing::ValuesIn(CasesFor({"ucx_shm", "ucx", {{"tls", "shm,self"}},
                                                       backends::ucx::RegisterBackend, ThreadsLauncher(4)})),
                         ConformanceParamName);

}  // namespace
}  // namespace stalelearn::conformance
