// The app API's core and facets (framework/runtime/app.h, app_facets.h):
// the kernel is required at compile time (an app without one is abstract),
// facets are found by AppFacets::Of, typed table handles reach the right
// table with the right element type, and InitRow's default is zeros.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "framework/model/replica.h"
#include "framework/runtime/app.h"
#include "framework/runtime/app_facets.h"

namespace stalelearn::runtime {
namespace {

// Everything but a kernel.
class NoKernel : public App {
 public:
  std::string name() const override { return "no-kernel"; }
  std::string dataset() const override { return "synthetic"; }
  std::vector<TableSpec> Tables() const override { return {}; }
  std::int64_t TrainingSamples() const override { return 0; }
  void RowsOf(std::int64_t, std::vector<RowRef>&) const override {}
};

// A per-sample app that does not write its Update.
class NoUpdate : public SampleKernelApp {
 public:
  std::string name() const override { return "no-update"; }
  std::string dataset() const override { return "synthetic"; }
  std::vector<TableSpec> Tables() const override { return {}; }
  std::int64_t TrainingSamples() const override { return 0; }
  void RowsOf(std::int64_t, std::vector<RowRef>&) const override {}
};

// Two tables through handles, a per-sample kernel, sample groups of two.
class Counts final : public SampleKernelApp, public GroupsSamples {
 public:
  std::string name() const override { return "counts"; }
  std::string dataset() const override { return "synthetic"; }
  std::vector<TableSpec> Tables() const override { return tables_.specs(); }
  std::int64_t TrainingSamples() const override { return 8; }
  void RowsOf(std::int64_t s, std::vector<RowRef>& rows) const override {
    rows.push_back({hits_.id, RowId{s % 4}});
    rows.push_back({sums_.id, RowId{s % 2}});
  }
  void Update(std::int64_t s, ModelView& model, KernelContext&) const override {
    model.Row(hits_, RowId{s % 4})[0] += 1;
    model.Row(sums_, RowId{s % 2})[1] += 0.5f;
  }
  std::int64_t SampleGroups() const override { return 4; }
  SampleRange GroupSamples(std::int64_t g) const override { return {2 * g, 2 * g + 2}; }

  TableList tables_;
  IntTable hits_ = tables_.AddInt("hits", 4, 1);
  FloatTable sums_ = tables_.AddFloat("sums", 2, 2);
};

// A mini-batch app with local state and parts.
class Parts final : public App, public HasLocalState, public EvaluatesInParts {
 public:
  std::string name() const override { return "parts"; }
  std::string dataset() const override { return "synthetic"; }
  std::vector<TableSpec> Tables() const override { return {}; }
  std::int64_t TrainingSamples() const override { return 0; }
  void RowsOf(std::int64_t, std::vector<RowRef>&) const override {}
  void UpdateBatch(std::span<const std::int64_t>, ModelView&, KernelContext&) const override {}
  std::unique_ptr<LocalState> CreateLocalState(const RankInfo&, std::span<const std::int64_t>) const override {
    return std::make_unique<LocalState>();
  }
  std::vector<double> EvaluatePart(const TableSet&, const EvalContext& ctx) const override {
    return {static_cast<double>(ctx.info.compute_ranks)};
  }
  Evaluation CombineParts(std::span<const double> sums) const override { return {"ranks", sums[0]}; }
};

// The kernel requirement, checked by the compiler.
static_assert(!RunnableApp<NoKernel>, "an app without a kernel must not be buildable");
static_assert(!RunnableApp<NoUpdate>, "a per-sample app must write Update");
static_assert(RunnableApp<Counts>);
static_assert(RunnableApp<Parts>);

TEST(AppCore, FacetsAreFoundOnce) {
  const Counts counts;
  const AppFacets a = AppFacets::Of(counts);
  EXPECT_EQ(a.groups, static_cast<const GroupsSamples*>(&counts));
  EXPECT_EQ(a.local_state, nullptr);
  EXPECT_FALSE(a.evaluates_in_parts());
  EXPECT_FALSE(a.initializes_from_data());
  EXPECT_FALSE(a.kernel_runs_in_chunks());
  EXPECT_EQ(a.SampleGroups(counts), 4);
  EXPECT_EQ(a.GroupSamples(3).begin, 6);

  const Parts parts;
  const AppFacets b = AppFacets::Of(parts);
  EXPECT_TRUE(b.evaluates_in_parts());
  EXPECT_EQ(b.SampleGroups(parts), 0);
  EXPECT_EQ(b.GroupSamples(5).end, 6) << "without the facet each sample is its own group";
  const auto state = b.CreateLocalState(RankInfo{}, {});
  ASSERT_NE(state, nullptr);
  const Result<std::vector<std::byte>> saved = b.SaveLocalState(parts, state.get());
  ASSERT_FALSE(saved.ok());
  EXPECT_EQ(saved.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(saved.status().message().find("app 'parts'"), std::string::npos) << saved.status().message();
  EXPECT_TRUE(b.SaveLocalState(parts, nullptr).ok());
  // Evaluate's default for an app in parts: its one part over the whole model.
  EXPECT_EQ(parts.Evaluate({}).value, 1.0);
}

TEST(AppCore, TypedHandlesReachTheirTablesAndInitRowDefaultsToZeros) {
  const Counts app;
  EXPECT_EQ(app.hits_.id.value, 0u);
  EXPECT_EQ(app.sums_.id.value, 1u);
  EXPECT_EQ(app.Tables()[0].type, ElementType::kInt32);
  EXPECT_EQ(app.Tables()[1].type, ElementType::kFloat32);
  TableSet model = model::MakeTableSet(app.Tables());
  InitializeTables(app, model);
  model::Replica replica(app.Tables());
  WorkCounters work;
  RandomStream random = RandomStream::For(1, 0, 0);
  KernelContext ctx{RankInfo{}, 0, 0, random, nullptr, work};
  const std::vector<std::int64_t> samples = {0, 1, 2, 3, 4, 5, 6, 7};
  app.UpdateBatch(samples, replica, ctx);
  const TableSet& after = replica.tables();
  for (std::int64_t r = 0; r < 4; ++r) EXPECT_EQ(Row(after, app.hits_, r)[0], 2);
  for (std::int64_t r = 0; r < 2; ++r) {
    EXPECT_EQ(Row(after, app.sums_, r)[0], 0.0f);
    EXPECT_EQ(Row(after, app.sums_, r)[1], 2.0f);
  }
  EXPECT_EQ(Row(model, app.sums_, 1)[1], 0.0f);
}

}  // namespace
}  // namespace stalelearn::runtime
