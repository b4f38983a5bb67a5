// Sparse binary logistic regression trained by SGD (per sample):
//   p(y = 1 | x) = sigmoid(<w, x> + b)
// Table "weights": one float row of width 1 per feature, plus the bias as
// the last row, so a sample touches only the rows of its nonzero features
// (a wide, sparse table: the StaleLearn case). Samples are the training rows
// of a LIBSVM file (labels +1/-1 or 1/0), split deterministically into
// train and test (data.test_fraction, data.split_seed).
// Evaluation in parts: each compute rank scores its share of the test set
// (every k-th test row); the parts add up to accuracy and log-loss.
//
// Immutable after construction; every method is const and thread-safe
// (framework/runtime/app.h).
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "apps/lr/lr_config.pb.h"
#include "framework/data/libsvm.h"
#include "framework/proto/config.pb.h"
#include "framework/runtime/app.h"
#include "framework/runtime/app_facets.h"

namespace stalelearn::apps::lr {

struct LrParams {
  float learning_rate = 0.2f;
  float l2 = 1e-6f;
  bool normalize = false;
};

// A per-sample kernel; facets: evaluation in parts, a kernel that runs in chunks.
class LrApp final : public runtime::SampleKernelApp,
                    public runtime::EvaluatesInParts,
                    public runtime::RunsKernelInChunks {
 public:
  // `train`/`test`: row indices into `data`; labels in `data` are {0, 1}.
  LrApp(std::string dataset, data::SparseDataset data, std::vector<std::int64_t> train,
        std::vector<std::int64_t> test, LrParams params);

  std::string name() const override { return "lr"; }
  std::string dataset() const override { return dataset_; }
  std::vector<runtime::TableSpec> Tables() const override { return tables_.specs(); }
  std::int64_t TrainingSamples() const override { return static_cast<std::int64_t>(train_.size()); }
  void RowsOf(std::int64_t sample, std::vector<runtime::RowRef>& rows) const override;
  void Update(std::int64_t sample, runtime::ModelView& model, runtime::KernelContext& ctx) const override;
  // (Runs in chunks: it touches only its sample's rows, draws no random
  // numbers and keeps no local state.)

  // {correct, sum of log-losses, count} over this rank's share of the test set.
  std::vector<double> EvaluatePart(const runtime::TableSet& model, const runtime::EvalContext& ctx) const override;
  // test_accuracy, with test_log_loss as a further metric.
  runtime::Evaluation CombineParts(std::span<const double> sums) const override;

  std::size_t features() const { return data_.num_columns; }
  // The data (labels mapped to {0, 1}) and its split: row indices of the
  // training samples (sample i is row train_rows()[i]) and of the test set.
  const data::SparseDataset& data() const { return data_; }
  const std::vector<std::int64_t>& train_rows() const { return train_; }
  const std::vector<std::int64_t>& test_rows() const { return test_; }

 private:
  // <w, x> + b of row `r` on the weights `w` (features + 1 floats).
  template <class Weights>
  double Margin(std::int64_t r, const Weights& weight) const;
  float Scale(std::int64_t r) const { return scale_[static_cast<std::size_t>(r)]; }

  std::string dataset_;
  data::SparseDataset data_;
  runtime::TableList tables_;  // "weights": one float per feature, then the bias
  runtime::FloatTable weights_;
  std::vector<std::int64_t> train_;
  std::vector<std::int64_t> test_;
  std::vector<float> scale_;  // per data row: 1, or 1 / ||x|| when normalizing
  LrParams params_;
};

// Reads the LIBSVM file, maps labels to {0, 1} (kInvalidArgument naming the
// file if a label is neither +-1 nor 0/1), splits it and builds the app from
// the config's resolved lr section.
Result<std::unique_ptr<LrApp>> LoadLrApp(const proto::Config& config, const std::filesystem::path& file);

}  // namespace stalelearn::apps::lr
