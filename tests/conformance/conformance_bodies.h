// The transport conformance suite (framework/README.md, "The transport contract"; issue 3):
// one set of test bodies that every backend passes, skipping only what its
// Capabilities say it does not guarantee (framework/README.md, convention 5).
//
// A body is a collective function run by every rank of a job on its own
// RankEnv (rank_env.h). It uses only the Transport and Bootstrap interfaces,
// so the same body runs
//   (a) with ranks as threads of one process (in-process bootstrap), and
//   (b) under mpirun with one rank per process (MPI bootstrap),
// and its result is reduced over ranks by the runner.
//
// How a backend joins the suite (conformance_harness.h has the details):
//   1. In a test file of its own, instantiate the suite with a variant:
//        INSTANTIATE_TEST_SUITE_P(UcxShm, Conformance,
//            testing::ValuesIn(CasesFor({"ucx_shm", "ucx", {{"tls", "shm"}},
//                                        backends::ucx::RegisterBackend, ThreadsLauncher(4)})),
//            ConformanceParamName);
//      (launcher: ThreadsLauncher(n) for ranks as threads, or a lambda that
//      calls the body with the MPI bootstrap for a run under mpirun.)
//   2. Build it with stalelearn_add_conformance_threads_test (threads) or
//      stalelearn_add_mpi_test linking stalelearn_conformance (mpirun), in a
//      conformance_<backend>.cmake next to this file (conformance_ucx.cmake,
//      conformance_timing.cmake) that tests/conformance/CMakeLists.txt
//      includes if present.
//   3. conformance_selftest checks that the cases still catch the defects
//      they exist for; a new case adds its defect to defective_transport.h.
//
// What the contract asks beyond transport.h, and this suite checks:
//   - Import of a rank's own region works (atomics on one word come from
//     every rank, the owner included);
//   - destroying a Transport is local, never collective (teardown test);
//   - with target_must_progress, every waiting loop of the suite progresses.
#pragma once

#include <span>
#include <string_view>

#include "tests/conformance/rank_env.h"

namespace stalelearn::conformance {

// Put then get, 1 byte to 16 MiB, aligned and unaligned offsets; the bytes
// around the target range stay untouched.
void PutGetIntegrity(RankEnv& env);
// Operations issued before Flush (puts and atomics, requests kept or
// dropped) are complete at the target when it returns; FlushAll likewise.
void FlushCompletesEverything(RankEnv& env);
// Writers publish payload, then fence or flush, then a commit word (put or
// atomic); rank 0 reads commit words with acquire loads and must always see
// the whole payload: 100,000 rounds over all writers. Twice in 64 rounds (a
// fence and a flush round) the writer waits for the reader's acknowledgement
// (a put back), so a payload that lags its commit word is caught whatever the
// thread timing.
void OrderingCommitWord(RankEnv& env);
// Atomic adds and fetch-adds from every rank on one word give exact totals;
// fetch-add hands out every ticket exactly once.
void AtomicContention(RankEnv& env);
// Compare-swap from every rank on the same word: exactly one winner per word.
void CompareSwapElection(RankEnv& env);
// The RMA barrier of RankEnv: nobody leaves before everybody arrived.
void BarrierOverRma(RankEnv& env);
// Writes to remote-read-only memory and reads of remote-write-only memory are
// refused with kPermissionDenied (Capabilities::enforces_remote_access).
void AccessRights(RankEnv& env);
// Bad keys, bad ranks, addresses and sizes outside a region, unaligned
// atomics: an error status, never a crash; the transport works afterwards.
void ErrorsAreStatuses(RankEnv& env);
// Transports, regions and remote regions destroyed in different orders on
// different ranks; leaks show under AddressSanitizer.
void TeardownInAnyOrder(RankEnv& env);

struct ConformanceCase {
  std::string_view name;
  void (*body)(RankEnv&);
  int min_world_size;  // skipped below
};
// Every case of the suite, in a fixed order.
std::span<const ConformanceCase> ConformanceCases();

}  // namespace stalelearn::conformance
