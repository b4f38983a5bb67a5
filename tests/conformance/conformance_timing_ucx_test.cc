// The conformance suite through the hardware-timing backend wrapped around
// 'ucx' over shared memory, ranks as threads: timing must not change what the
// real RMA backend guarantees.
#include "backends/timing/register.h"
#include "backends/ucx/register.h"
#include "tests/conformance/conformance_harness.h"

namespace stalelearn::conformance {
namespace {

Status RegisterUcxAndTiming(transport::BackendRegistry& registry) {
  STALELEARN_RETURN_IF_ERROR(backends::ucx::RegisterBackend(registry));
  return backends::timing::RegisterBackend(registry);
}

INSTANTIATE_TEST_SUITE_P(TimingOverUcxShm, Conformance,
                         ::testing::ValuesIn(CasesFor({"timing_ucx_shm",
                                                       "timing",
                                                       {{"inner", "ucx"}, {"inner.tls", "shm,self"}},
                                                       RegisterUcxAndTiming,
                                                       ThreadsLauncher(4)})),
                         ConformanceParamName);

}  // namespace
}  // namespace stalelearn::conformance
