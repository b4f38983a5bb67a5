// The conformance suite through the hardware-timing backend: 'timing' wraps
// 'local' (ranks as threads) and must pass everything 'local' passes, since
// it moves data through the inner backend unchanged and only keeps virtual
// time. The suite does not join the virtual-time schedule, so operations are
// charged but ranks run freely.
#include "backends/local/register.h"
#include "backends/timing/register.h"
#include "tests/conformance/conformance_harness.h"

namespace stalelearn::conformance {
namespace {

Status RegisterLocalAndTiming(transport::BackendRegistry& registry) {
  STALELEARN_RETURN_IF_ERROR(backends::local::RegisterBackend(registry));
  return backends::timing::RegisterBackend(registry);
}

INSTANTIATE_TEST_SUITE_P(TimingOverLocal, Conformance,
                         ::testing::ValuesIn(CasesFor({"timing_local",
                                                       "timing",
                                                       {{"inner", "local"}, {"memory", "hmc2"}, {"link", "pcie4-x16"}},
                                                       RegisterLocalAndTiming,
                                                       ThreadsLauncher(4)})),
                         ConformanceParamName);

}  // namespace
}  // namespace stalelearn::conformance
