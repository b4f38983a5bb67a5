// GoogleTest harness of the conformance suite (conformance_bodies.h): one
// parameterized test, Conformance.Passes, instantiated once per backend
// variant with every case (gloo base_test's ValuesIn(transports)).
//
// A variant says which backend to create (registry name and options), how to
// register it, and how to launch ranks:
//   - ThreadsLauncher(n): n ranks as threads with the in-process bootstrap;
//   - for mpirun, a launcher that calls the body once with this process's
//     MPI bootstrap, e.g. with tests/integration/mpi_gtest_main.h:
//       [](const RankBody& body) { body(stalelearn::testing::MpiTestBootstrap()); }
//     (RunGtestUnderMpi reduces the result over ranks.)
//
// Adding a variant is one line in a test file of its own (see
// conformance_threads_test.cc for 'local'):
//   INSTANTIATE_TEST_SUITE_P(UcxShm, Conformance,
//       testing::ValuesIn(CasesFor({"ucx_shm", "ucx", {{"tls", "shm"}},
//                                   backends::ucx::RegisterBackend, ThreadsLauncher(4)})),
//       ConformanceParamName);
// Test names read Variant/Conformance.Passes/Case_label, e.g.
// Local/Conformance.Passes/OrderingCommitWord_local.
//
// Threading: the test body runs on gtest's thread; bodies run on the ranks'
// threads (or processes) and report through a thread-safe gtest sink.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "framework/transport/registry.h"
#include "tests/conformance/conformance_bodies.h"

namespace stalelearn::conformance {

// Runs the body of one rank with that rank's bootstrap.
using RankBody = std::function<void(Bootstrap&)>;
// Runs `body` on every rank of a job and returns when all ranks finished;
// throws if a rank threw.
using RankLauncher = std::function<void(const RankBody& body)>;

struct BackendVariant {
  std::string label;    // in test names: letters, digits, '_'
  std::string backend;  // registry name
  std::map<std::string, std::string> options;
  std::function<Status(transport::BackendRegistry&)> register_backends;
  RankLauncher launch;
};

// Ranks as threads of this process (RunRanks with the in-process bootstrap).
RankLauncher ThreadsLauncher(int world_size);

struct ConformanceParam {
  BackendVariant variant;
  ConformanceCase test_case;
};
// gtest prints parameters of failed tests with this: "<case> on <label>".
void PrintTo(const ConformanceParam& param, std::ostream* out);
// Every case of the suite for `variant`.
std::vector<ConformanceParam> CasesFor(const BackendVariant& variant);
// "<case>_<variant label>".
std::string ConformanceParamName(const ::testing::TestParamInfo<ConformanceParam>& info);

// Runs one case on every rank of its variant, reporting to `sink`.
// Rethrows what a rank threw, except ConformanceAbort (already reported).
void RunCase(const ConformanceParam& param, CheckSink& sink);

class Conformance : public ::testing::TestWithParam<ConformanceParam> {};

}  // namespace stalelearn::conformance
