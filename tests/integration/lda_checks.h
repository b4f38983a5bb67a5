// Reusable bodies of the LDA app's training-level tests (lda_train_test.cc),
// with ranks as threads on the local backend; the planted-defect self-test
// (tests/selftest/) runs the count check with kKernelTakesBackWrongCount
// planted and expects its negative-count message.
//
// Each body reports through gtest (ADD_FAILURE) with a message naming the
// invariant it guards; a rank's error propagates as an exception.
// Thread-safety: call from one test thread at a time.
#pragma once

#include <memory>
#include <string>

#include "apps/lda/lda_app.h"
#include "framework/proto/config.pb.h"
#include "framework/proto/report.pb.h"
#include "tests/integration/app_api_support.h"

namespace stalelearn::testing {

// Failure messages of CheckLdaCountsExact (one per invariant).
inline constexpr const char* kLdaNegativeCountMessage =
    "an LDA count went negative: a kernel took back a count it never added";
inline constexpr const char* kLdaRowSumMessage = "an LDA count row does not sum to its training tokens";
inline constexpr const char* kLdaAssignmentMessage =
    "the final LDA counts differ from the ranks' topic assignments (exactly once, I4)";

// A mode under test (app_api_support.h: configs from ApiConfig, ranks from WorldSize).
using LdaModeCase = ApiModeCase;

// 120 documents of 60 tokens over 4 topics x 30 words (plus 20 words every
// topic uses): each document draws 80% of its tokens from one topic, the rest
// from another. Every 10th document (from the 4th) held out.
std::unique_ptr<apps::lda::LdaApp> SyntheticLda(int topics = 4, double alpha = 0.1, double beta = 0.1,
                                                apps::lda::SamplerKind sampler = apps::lda::SamplerKind::kSparse);

// "" when every evaluation of `report` kept the count invariants; else what
// broke, each problem starting with its message above.
std::string LdaCountProblems(const proto::Report& report);

// The synthetic corpus for 4 epochs in mode `c`: at every evaluation each
// word's counts sum to its training tokens, the topic totals to all of them,
// no count is negative, and the final counts equal those of every rank's
// final topic assignments; every rank's samples add up to 4 epochs.
// `sampler`: the kernel under test (the plain O(K) one is the reference the
// sparse one is checked against; its bookkeeping needs its own test).
void CheckLdaCountsExact(const LdaModeCase& c, apps::lda::SamplerKind sampler = apps::lda::SamplerKind::kSparse);

}  // namespace stalelearn::testing
