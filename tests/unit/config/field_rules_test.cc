// The one resolver of declared field rules (framework/core/field_rules.h):
// defaults fill zero fields only, ranges and one_of name the field path in
// one line, NaN and infinities fail a range, and a sub-message is created only
// when a default inside it applies.
#include "framework/core/field_rules.h"

#include <gtest/gtest.h>

#include <cmath>

#include "framework/proto/config.pb.h"
#include "framework/sync/merge_policy_adam.pb.h"

namespace stalelearn::config {
namespace {

TEST(FieldRules, DefaultsFillZeroFieldsOnly) {
  proto::Config c;
  c.mutable_training()->set_epochs(3);
  ASSERT_TRUE(FillDeclaredDefaults(c).ok());
  EXPECT_EQ(c.training().epochs(), 3) << "a set field keeps its value";
  EXPECT_EQ(c.training().eval_every_epochs(), 1);
  EXPECT_EQ(c.training().locality(), "auto");
  EXPECT_EQ(c.cluster().partitioning(), proto::RANGE) << "an enum default by its value name";
  EXPECT_EQ(c.cluster().slot_bytes(), 4 << 20);
  EXPECT_EQ(c.training().checkpoint().keep(), 2) << "nested two levels";
  EXPECT_FALSE(c.has_faults()) << "no default inside: not created";
  EXPECT_FALSE(c.app().has_params()) << "Any is left to its owner";
}

TEST(FieldRules, DefaultsOfFloatsAreTheLiterals) {
  sync::AdamOptions adam;
  ASSERT_TRUE(FillDeclaredDefaults(adam).ok());
  EXPECT_EQ(adam.learning_rate(), 0.01f);
  EXPECT_EQ(adam.beta1(), 0.9f);
  EXPECT_EQ(adam.beta2(), 0.99f);
  EXPECT_EQ(adam.epsilon(), 1e-3f);
}

TEST(FieldRules, RangesNameThePathInOneLine) {
  sync::AdamOptions adam;
  ASSERT_TRUE(FillDeclaredDefaults(adam).ok());
  EXPECT_TRUE(CheckDeclaredRules(adam, "merge.w.adam").ok());
  const struct {
    void (*mutate)(sync::AdamOptions&);
    const char* expected;
  } cases[] = {
      {[](sync::AdamOptions& a) { a.set_beta1(1); }, "merge.w.adam.beta1 must be in [0, 1), got 1"},
      {[](sync::AdamOptions& a) { a.set_beta2(-0.5f); }, "merge.w.adam.beta2 must be in [0, 1), got -0.5"},
      {[](sync::AdamOptions& a) { a.set_learning_rate(0); }, "merge.w.adam.learning_rate must be > 0, got 0"},
      {[](sync::AdamOptions& a) { a.set_epsilon(NAN); }, "merge.w.adam.epsilon must be > 0, got nan"},
      {[](sync::AdamOptions& a) { a.set_epsilon(INFINITY); }, "merge.w.adam.epsilon must be > 0, got inf"},
  };
  for (const auto& c : cases) {
    sync::AdamOptions bad = adam;
    c.mutate(bad);
    const Status status = CheckDeclaredRules(bad, "merge.w.adam");
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << c.expected;
    EXPECT_EQ(status.message(), c.expected);
  }
}

TEST(FieldRules, IntervalsOneSidedBoundsAndOneOf) {
  proto::Config c;
  ASSERT_TRUE(FillDeclaredDefaults(c).ok());
  EXPECT_TRUE(CheckDeclaredRules(c, "").ok());
  proto::Config bad = c;
  bad.mutable_cluster()->set_ring_slots(1);
  EXPECT_EQ(CheckDeclaredRules(bad, "").message(), "cluster.ring_slots must be in [2, 4096], got 1");
  bad = c;
  bad.mutable_data()->set_test_fraction(1);
  EXPECT_EQ(CheckDeclaredRules(bad, "").message(), "data.test_fraction must be in (0, 1), got 1");
  bad = c;
  bad.mutable_training()->mutable_checkpoint()->set_keep(0);
  EXPECT_EQ(CheckDeclaredRules(bad, "").message(), "training.checkpoint.keep must be >= 1, got 0");
  bad = c;
  bad.mutable_training()->set_locality("near");
  EXPECT_EQ(CheckDeclaredRules(bad, "").message(),
            "training.locality must be \"auto\", \"grid\", \"stratified\" or \"none\", got \"near\"");
}

}  // namespace
}  // namespace stalelearn::config
