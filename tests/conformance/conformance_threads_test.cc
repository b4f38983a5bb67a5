// The conformance suite with ranks as threads: the 'local' reference backend.
// Other backends add their threaded variants in files of their own
// (conformance_harness.h).
#include "backends/local/register.h"
#include "tests/conformance/conformance_harness.h"

namespace stalelearn::conformance {
namespace {

INSTANTIATE_TEST_SUITE_P(Local, Conformance,
                         ::testing::ValuesIn(CasesFor({"local", "local", {}, backends::local::RegisterBackend,
                                                       ThreadsLauncher(4)})),
                         ConformanceParamName);

}  // namespace
}  // namespace stalelearn::conformance
