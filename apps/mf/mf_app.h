// Biased matrix factorization trained by SGD (the StaleLearn paper's MF):
//   r(u, i) ~ mu + b_u + b_i + <p_u, q_i>
// Tables: "user" and "item", one row per user / item of width k + 1 (k
// factors, then the bias). Samples are the training ratings; the evaluation
// is test RMSE (predictions clipped to the rating range).
//
// Immutable after construction; Update/Evaluate are const and thread-safe
// (the app API's rules, framework/runtime/app.h).
#pragma once

#include <memory>
#include <vector>

#include "framework/data/ratings.h"
#include "apps/mf/mf_config.pb.h"
#include "framework/proto/config.pb.h"
#include "framework/runtime/app.h"
#include "framework/runtime/app_facets.h"

namespace stalelearn::apps::mf {

struct MfParams {
  int rank = 20;
  float learning_rate = 0.01f;
  float regularization = 0.05f;
  float init_scale = 0.1f;
  std::uint64_t seed = 1;
  bool deal_by_user = false;  // MfConfig.deal == "user"
  float learning_rate_decay = 0.0f;  // epoch e steps by learning_rate / (1 + decay * e)
};

// Facets: sample groups (dealt by user), a kernel that runs in chunks,
// evaluation in parts: the compute ranks form a grid of p user parts x q item
// parts (p q = ranks, p the divisor that reads fewest rows a rank), and each
// scores the test ratings of its cell, reading only its user part and its
// item part.
class MfApp final : public runtime::App,
                    public runtime::GroupsSamples,
                    public runtime::RunsKernelInChunks,
                    public runtime::EvaluatesInParts {
 public:
  MfApp(std::string dataset, std::size_t users, std::size_t items, std::vector<data::Rating> train,
        std::vector<data::Rating> test, MfParams params);

  std::string name() const override { return "mf"; }
  std::string dataset() const override { return dataset_; }
  std::vector<runtime::TableSpec> Tables() const override { return tables_.specs(); }
  void InitRow(runtime::TableId table, runtime::RowId row, runtime::RowValues values) const override;
  std::int64_t TrainingSamples() const override { return static_cast<std::int64_t>(train_.size()); }
  // Dealt by user: one group per user with training ratings (the samples are
  // ordered by user); else every rating is its own group.
  std::int64_t SampleGroups() const override;
  runtime::SampleRange GroupSamples(std::int64_t group) const override;
  void RowsOf(std::int64_t sample, std::vector<runtime::RowRef>& rows) const override;
  // The kernel: the clock's samples in one loop, rows fetched once per
  // sample, the SGD step in vectorisable loops, work counted once per batch.
  // Runs in chunks: it touches only its samples' rows, draws no random
  // numbers and keeps no local state.
  void UpdateBatch(std::span<const std::int64_t> samples, runtime::ModelView& model,
                   runtime::KernelContext& ctx) const override;
  // One sample's step (UpdateBatch of that sample alone).
  void Update(std::int64_t sample, runtime::ModelView& model, runtime::KernelContext& ctx) const;
  runtime::Evaluation Evaluate(const runtime::TableSet& model) const override;
  // {squared error, ratings} over the test ratings in ctx.part_rows (every
  // test rating without them); combined: test RMSE.
  std::vector<double> EvaluatePart(const runtime::TableSet& model, const runtime::EvalContext& ctx) const override;
  runtime::Evaluation CombineParts(std::span<const double> sums) const override;
  // Part k of n is cell (k / q, k % q) of the grid: user part k / q of p,
  // item part k % q of q.
  model::RowRange PartRows(runtime::TableId table, std::int64_t rows, int part, int parts) const override;
  // The grid's user parts p for n parts (a divisor of n).
  int UserParts(int parts) const;

  float global_mean() const { return mean_; }

  // A training rating as the kernel reads it: 12 bytes (data::Rating's
  // timestamp is not needed), so a clock's random walk over them touches
  // half the cache lines.
  struct Sample {
    std::uint32_t user;
    std::uint32_t item;
    float value;
  };
  runtime::FloatTable user_table() const { return user_table_; }
  runtime::FloatTable item_table() const { return item_table_; }

 private:
  std::string dataset_;
  std::size_t users_;
  std::size_t items_;
  runtime::TableList tables_;  // "user", "item": users_ (items_) rows of k + 1 floats
  runtime::FloatTable user_table_;
  runtime::FloatTable item_table_;
  runtime::WorkCounters WorkOf(std::size_t samples) const;
  double SquaredError(const runtime::TableSet& model, const data::Rating& r) const;
  void IndexTestRatings();  // fills test_by_item_ and item_starts_

  std::vector<Sample> train_;
  std::vector<std::int64_t> user_starts_;  // dealt by user: first sample of each group, then the end
  std::vector<data::Rating> test_;
  std::vector<std::uint32_t> test_by_item_;  // test_ indices ordered by item
  std::vector<std::int64_t> item_starts_;    // [item]: first of test_by_item_ with that item, then the end
  MfParams params_;
  float mean_ = 0;  // of the training ratings
};

// Reads the ratings file, splits it (data.test_fraction, data.split_seed)
// and builds the app from the config's resolved mf section.
Result<std::unique_ptr<MfApp>> LoadMfApp(const proto::Config& config, const std::filesystem::path& ratings_file);

}  // namespace stalelearn::apps::mf
