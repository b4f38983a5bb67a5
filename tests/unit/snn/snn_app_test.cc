// apps/snn/snn_app: the mini-batch kernel on a replica ships only the rows it
// changed, so the weight rows of input pixels that never spike in a clock
// are not shipped; the config's defaults and one-line errors; evaluation
// parts add up.
#include <gtest/gtest.h>

#include <set>

#include "apps/snn/register.h"
#include "apps/snn/snn_app.h"
#include "framework/core/error.h"
#include "framework/model/replica.h"
#include "framework/runtime/app.h"

namespace stalelearn::apps::snn {
namespace {

// 8 images of 4x4 pixels; pixels 0..3 are always dark.
LabelledImages TinyImages() {
  LabelledImages set;
  set.images.count = 8;
  set.images.rows = 4;
  set.images.columns = 4;
  for (int i = 0; i < 8; ++i) {
    for (int p = 0; p < 16; ++p) set.images.pixels.push_back(p < 4 ? 0 : static_cast<std::uint8_t>((37 * (i + p)) % 256));
    set.labels.push_back(static_cast<std::uint8_t>(i % 10));
  }
  return set;
}

SnnAppParams TinyParams() {
  SnnConfig config;
  config.set_hidden("12");
  proto::Config scratch;
  ThrowIfError(ResolveConfig(config, scratch));
  SnnAppParams params = ParamsFromConfig(config, 5);
  params.shape.inputs = 16;
  params.shape.outputs = 10;
  params.lif.steps = 8;
  params.init_scale = 6.0f;
  return params;
}

TEST(SnnApp, InputRowsWithoutSpikesAreNotShipped) {
  const SnnApp app("tiny", TinyImages(), TinyImages(), TinyParams());
  model::Replica replica(app.Tables());
  runtime::InitializeTables(app, replica.mutable_tables());
  replica.Rebase();
  const runtime::RankInfo info{model::ComputeIndex{0}, 1, 5};
  std::vector<std::int64_t> samples = {0, 1, 2, 3, 4, 5, 6, 7};
  const auto state = app.CreateLocalState(info, samples);
  runtime::RandomStream random(1);
  runtime::WorkCounters work;
  runtime::KernelContext ctx{info, 0, 0, random, state.get(), work};
  app.UpdateBatch(samples, replica, ctx);
  std::set<std::int64_t> shipped_input_rows;
  std::size_t shipped = 0;
  replica.DrainDeltas([&](runtime::TableId table, runtime::RowId row, std::span<const std::byte>) {
    ++shipped;
    if (table.value == 0) shipped_input_rows.insert(row.value);
  });
  for (std::int64_t dark = 0; dark < 4; ++dark) EXPECT_FALSE(shipped_input_rows.contains(dark)) << "row " << dark;
  EXPECT_GE(shipped_input_rows.size(), 8u) << "lit pixels' rows should change";
  EXPECT_TRUE(shipped_input_rows.contains(16)) << "the bias row changes every clock";
  EXPECT_GT(work.flops, 0);
  EXPECT_GT(shipped, shipped_input_rows.size()) << "the output layer's rows are shipped too";
}

TEST(SnnApp, EvaluationPartsAddUp) {
  const SnnApp app("tiny", TinyImages(), TinyImages(), TinyParams());
  model::TableSet model = model::MakeTableSet(app.Tables());
  runtime::InitializeTables(app, model);
  std::vector<double> total(7, 0.0);
  for (int rank = 0; rank < 3; ++rank) {
    const std::vector<double> part = app.EvaluatePart(model, {{model::ComputeIndex{rank}, 3, 5}, nullptr});
    for (std::size_t i = 0; i < total.size(); ++i) total[i] += part[i];
  }
  EXPECT_EQ(total[2], 8);
  const runtime::Evaluation e = app.CombineParts(total);
  EXPECT_EQ(e.metric, "test_accuracy");
  EXPECT_NEAR(e.value, total[0] / 8, 1e-12);
  ASSERT_EQ(e.extra.size(), 4u);
  EXPECT_EQ(e.extra[1].first, "activity");
  EXPECT_GE(e.extra[1].second, 0);
  EXPECT_LE(e.extra[1].second, 1);
}

TEST(SnnConfig, DefaultsAndOneLineErrors) {
  SnnConfig config;
  proto::Config run;
  ASSERT_TRUE(ResolveConfig(config, run).ok());
  EXPECT_EQ(config.hidden(), "128");
  EXPECT_EQ(config.steps(), 16);
  EXPECT_EQ(run.data().name(), "mnist");
  const auto error = [](auto mutate) {
    SnnConfig c;
    mutate(c);
    proto::Config r;
    return ResolveConfig(c, r).message();
  };
  EXPECT_NE(error([](SnnConfig& c) { c.set_hidden("8,8,8,8"); }).find("app.snn.hidden"), std::string::npos);
  EXPECT_NE(error([](SnnConfig& c) { c.set_hidden("64,,8"); }).find("app.snn.hidden"), std::string::npos);
  EXPECT_NE(error([](SnnConfig& c) { c.set_hidden("0"); }).find("app.snn.hidden"), std::string::npos);
  EXPECT_NE(error([](SnnConfig& c) { c.set_max_activity(1.5f); }).find("app.snn.max_activity"), std::string::npos);
  EXPECT_NE(error([](SnnConfig& c) { c.set_readout("rates"); }).find("app.snn.readout"), std::string::npos);
  EXPECT_NE(error([](SnnConfig& c) { c.set_beta(1.0f); }).find("app.snn.beta"), std::string::npos);
  EXPECT_NE(error([](SnnConfig& c) { c.set_coding("phase"); }).find("app.snn.coding"), std::string::npos);
}

}  // namespace
}  // namespace stalelearn::apps::snn
