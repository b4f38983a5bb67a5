#include "apps/lr/lr_app.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "apps/lr/register.h"
#include "framework/core/config_loader.h"
#include "framework/runtime/random_stream.h"

namespace stalelearn::apps::lr {
namespace {

double Sigmoid(double z) { return z >= 0 ? 1.0 / (1.0 + std::exp(-z)) : std::exp(z) / (1.0 + std::exp(z)); }

// log(1 + exp(z)) without overflow.
double Softplus(double z) { return z > 0 ? z + std::log1p(std::exp(-z)) : std::log1p(std::exp(z)); }

}  // namespace

LrApp::LrApp(std::string dataset, data::SparseDataset data, std::vector<std::int64_t> train,
             std::vector<std::int64_t> test, LrParams params)
    : dataset_(std::move(dataset)),
      data_(std::move(data)),
      weights_(tables_.AddFloat("weights", static_cast<std::int64_t>(data_.num_columns) + 1, 1)),
      train_(std::move(train)),
      test_(std::move(test)),
      params_(params) {
  scale_.assign(data_.rows(), 1.0f);
  if (params_.normalize) {
    for (std::size_t r = 0; r < data_.rows(); ++r) {
      double norm = 0;
      for (std::uint64_t i = data_.row_offsets[r]; i < data_.row_offsets[r + 1]; ++i) {
        norm += static_cast<double>(data_.values[i]) * data_.values[i];
      }
      if (norm > 0) scale_[r] = static_cast<float>(1.0 / std::sqrt(norm));
    }
  }
}

void LrApp::RowsOf(std::int64_t sample, std::vector<runtime::RowRef>& rows) const {
  const auto r = static_cast<std::size_t>(train_[static_cast<std::size_t>(sample)]);
  for (std::uint64_t i = data_.row_offsets[r]; i < data_.row_offsets[r + 1]; ++i) {
    rows.push_back({weights_.id, runtime::RowId{data_.columns[i]}});
  }
  rows.push_back({weights_.id, runtime::RowId{data_.num_columns}});  // bias
}

template <class Weights>
double LrApp::Margin(std::int64_t r, const Weights& weight) const {
  const auto row = static_cast<std::size_t>(r);
  double z = weight(data_.num_columns);
  for (std::uint64_t i = data_.row_offsets[row]; i < data_.row_offsets[row + 1]; ++i) {
    z += static_cast<double>(weight(data_.columns[i])) * data_.values[i] * Scale(r);
  }
  return z;
}

void LrApp::Update(std::int64_t sample, runtime::ModelView& model, runtime::KernelContext& ctx) const {
  const std::int64_t r = train_[static_cast<std::size_t>(sample)];
  const auto row = static_cast<std::size_t>(r);
  const auto weight = [&](std::uint32_t j) -> float& { return model.Row(weights_, runtime::RowId{j})[0]; };
  const double p = Sigmoid(Margin(r, weight));
  const double g = p - data_.labels[row];  // d log-loss / d margin
  const float lr = params_.learning_rate;
  for (std::uint64_t i = data_.row_offsets[row]; i < data_.row_offsets[row + 1]; ++i) {
    float& w = weight(data_.columns[i]);
    w -= lr * static_cast<float>(g * data_.values[i] * Scale(r) + params_.l2 * w);
  }
  weight(data_.num_columns) -= lr * static_cast<float>(g);
  const auto nnz = static_cast<double>(data_.row_offsets[row + 1] - data_.row_offsets[row]);
  ctx.work.flops += 6 * nnz + 20;
  ctx.work.bytes += 8 * nnz + 8;  // read the sample's indices and values, read + write the weights
  ctx.work.random_row_accesses += static_cast<std::int64_t>(nnz) + 1;
}

std::vector<double> LrApp::EvaluatePart(const runtime::TableSet& model, const runtime::EvalContext& ctx) const {
  const auto weight = [&](std::uint32_t j) { return runtime::Row(model, weights_, j)[0]; };
  double correct = 0, loss = 0, count = 0;
  const auto ranks = static_cast<std::size_t>(std::max(1, ctx.info.compute_ranks));
  for (std::size_t i = static_cast<std::size_t>(ctx.info.rank.value); i < test_.size(); i += ranks) {
    const std::int64_t r = test_[i];
    const double z = Margin(r, weight);
    const bool spam = data_.labels[static_cast<std::size_t>(r)] > 0.5f;
    correct += (z > 0) == spam ? 1 : 0;
    loss += spam ? Softplus(-z) : Softplus(z);  // -log p(y | x)
    count += 1;
  }
  return {correct, loss, count};
}

runtime::Evaluation LrApp::CombineParts(std::span<const double> sums) const {
  const double count = sums.size() == 3 ? sums[2] : 0;
  if (count == 0) return {"test_accuracy", 0, {{"test_log_loss", 0}}};
  return {"test_accuracy", sums[0] / count, {{"test_log_loss", sums[1] / count}}};
}

Result<std::unique_ptr<LrApp>> LoadLrApp(const proto::Config& config, const std::filesystem::path& file) {
  STALELEARN_ASSIGN_OR_RETURN(LrConfig lr, config::UnpackAppParams<LrConfig>(config));
  proto::Config scratch;  // a config built in code may carry no resolved section
  STALELEARN_RETURN_IF_ERROR(ResolveConfig(lr, scratch));
  STALELEARN_ASSIGN_OR_RETURN(data::SparseDataset data, data::ReadLibsvm(file));
  if (data.rows() < 2) return InvalidArgument(fmt::format("{}: needs at least 2 samples", file.string()));
  bool plus_minus = false;
  for (float& y : data.labels) {
    if (y == -1.0f || y == 1.0f) plus_minus |= y == -1.0f;
    if (y != 1.0f && y != -1.0f && y != 0.0f) {
      return InvalidArgument(fmt::format("{}: label {} is neither +1/-1 nor 1/0", file.string(), y));
    }
  }
  for (float& y : data.labels) y = y > 0 ? 1.0f : 0.0f;
  (void)plus_minus;
  // Deterministic split: a seeded shuffle of the rows, the first
  // test_fraction of it held out (at least one row each side).
  std::vector<std::int64_t> order(data.rows());
  std::iota(order.begin(), order.end(), 0);
  runtime::RandomStream random(config.data().split_seed() ^ 0x6C72ull);
  for (std::size_t i = order.size(); i > 1; --i) {
    std::swap(order[i - 1], order[static_cast<std::size_t>(random.Below(static_cast<std::int64_t>(i)))]);
  }
  const double fraction = config.data().test_fraction() > 0 ? config.data().test_fraction() : 0.2;
  const auto held = std::clamp<std::size_t>(static_cast<std::size_t>(std::llround(fraction * order.size())), 1,
                                            order.size() - 1);
  std::vector<std::int64_t> test(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(held));
  std::vector<std::int64_t> train(order.begin() + static_cast<std::ptrdiff_t>(held), order.end());
  std::ranges::sort(test);  // scoring order does not matter; a sorted set reads well in a debugger
  const std::string dataset = config.data().name().empty() ? file.filename().string() : config.data().name();
  return std::make_unique<LrApp>(dataset, std::move(data), std::move(train), std::move(test),
                                 LrParams{lr.learning_rate(), lr.l2(), lr.normalize()});
}

}  // namespace stalelearn::apps::lr
