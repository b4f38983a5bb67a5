#include "apps/mf/mf_app.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "apps/mf/register.h"
#include "framework/core/config_loader.h"
#include "apps/mf/mf_planted_defects.h"
#include "framework/core/target_clones.h"

namespace stalelearn::apps::mf {
namespace {

constexpr float kMinRating = 0.5f;
constexpr float kMaxRating = 5.0f;

// A uniform number in [-1, 1) from (seed, table, row, column): initial values
// must be a pure function of the row (every rank computes them alone).
float UnitNoise(std::uint64_t seed, std::uint32_t table, std::int64_t row, int column) {
  std::uint64_t z = seed ^ (std::uint64_t{table} << 56) ^ (static_cast<std::uint64_t>(row) << 16) ^
                    static_cast<std::uint64_t>(column);
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<float>(static_cast<double>(z >> 11) * 0x1.0p-53 * 2.0 - 1.0);
}

}  // namespace

MfApp::MfApp(std::string dataset, std::size_t users, std::size_t items, std::vector<data::Rating> train,
             std::vector<data::Rating> test, MfParams params)
    : dataset_(std::move(dataset)),
      users_(users),
      items_(items),
      user_table_(tables_.AddFloat("user", static_cast<std::int64_t>(users), params.rank + 1)),
      item_table_(tables_.AddFloat("item", static_cast<std::int64_t>(items), params.rank + 1)),
      test_(std::move(test)),
      params_(params) {
  IndexTestRatings();
  double sum = 0;
  for (const data::Rating& r : train) sum += r.value;
  mean_ = train.empty() ? 0.0f : static_cast<float>(sum / static_cast<double>(train.size()));
  const auto sample_of = [](const data::Rating& r) {
    return Sample{static_cast<std::uint32_t>(r.user), static_cast<std::uint32_t>(r.item), r.value};
  };
  if (!params_.deal_by_user) {
    train_.reserve(train.size());
    for (const data::Rating& r : train) train_.push_back(sample_of(r));
    return;
  }
  // Grouped by user, a user's ratings in their order (a counting sort: the
  // deal is a function of the data and the seed alone, found in linear time).
  std::vector<std::int64_t> next(users_ + 1, 0);
  for (const data::Rating& r : train) ++next[static_cast<std::size_t>(r.user) + 1];
  for (std::size_t u = 0; u < users_; ++u) next[u + 1] += next[u];
  user_starts_.reserve(users_ + 1);
  for (std::size_t u = 0; u < users_; ++u) {
    if (next[u + 1] > next[u]) user_starts_.push_back(next[u]);
  }
  user_starts_.push_back(static_cast<std::int64_t>(train.size()));
  train_.resize(train.size());
  for (const data::Rating& r : train) train_[static_cast<std::size_t>(next[static_cast<std::size_t>(r.user)]++)] = sample_of(r);
}

std::int64_t MfApp::SampleGroups() const {
  return params_.deal_by_user ? static_cast<std::int64_t>(user_starts_.size()) - 1 : TrainingSamples();
}

runtime::SampleRange MfApp::GroupSamples(std::int64_t group) const {
  if (!params_.deal_by_user) return {group, group + 1};
  const auto g = static_cast<std::size_t>(group);
  return {user_starts_[g], user_starts_[g + 1]};
}

void MfApp::InitRow(runtime::TableId table, runtime::RowId row, runtime::RowValues row_values) const {
  const std::span<float> values = row_values.floats();
  // Uniform(-a, a) with a = sqrt(3) * scale has standard deviation `scale`.
  const float a = std::sqrt(3.0f) * params_.init_scale;
  for (int f = 0; f < params_.rank; ++f) values[f] = a * UnitNoise(params_.seed, table.value, row.value, f);
  values[params_.rank] = 0.0f;  // bias
}

void MfApp::RowsOf(std::int64_t sample, std::vector<runtime::RowRef>& rows) const {
  const Sample& s = train_[static_cast<std::size_t>(sample)];
  rows.push_back({user_table_.id, runtime::RowId{static_cast<std::int64_t>(s.user)}});
  rows.push_back({item_table_.id, runtime::RowId{static_cast<std::int64_t>(s.item)}});
}

namespace {

// SGD steps on rows p (user) and q (item), each k + 1 floats (bias last).
// The rows of a block of samples are fetched in one ModelView call per table
// (not one virtual call per row); steps then run in sample order, so a row
// that repeats in the block sees its earlier steps, as one at a time would.
// Built twice (AVX2 and baseline, picked at load time by the CPU): AVX2
// halves the vector operations over 20-40 factors. Without FMA, every lane
// computes exactly what the baseline does, so a run's model is bit-identical
// whichever clone runs.
STALELEARN_TARGET_CLONES_AVX2 void SgdSteps(
    std::span<const std::int64_t> samples, const MfApp::Sample* train, runtime::ModelView& model,
    runtime::FloatTable user_table, runtime::FloatTable item_table, float mean, float lr, float lambda, int k,
    int trained_factors, float item_factor_step) {
  constexpr std::size_t kBlock = 64;
  runtime::RowId users[kBlock];
  runtime::RowId items[kBlock];
  float* user_rows[kBlock];
  float* item_rows[kBlock];
  for (std::size_t start = 0; start < samples.size(); start += kBlock) {
    const std::size_t n = std::min(kBlock, samples.size() - start);
    // The next block's ratings: in a planned (cache-blocked) order sample ids
    // are scattered over the whole training set, whose records miss the cache.
    const std::size_t ahead_end = std::min(samples.size(), start + 2 * kBlock);
    for (std::size_t i = start + kBlock; i < ahead_end; ++i) __builtin_prefetch(train + samples[i]);
    for (std::size_t i = 0; i < n; ++i) {
      const MfApp::Sample& s = train[samples[start + i]];
      users[i] = runtime::RowId{static_cast<std::int64_t>(s.user)};
      items[i] = runtime::RowId{static_cast<std::int64_t>(s.item)};
    }
    model.Rows(user_table, std::span(users, n), user_rows);
    model.Rows(item_table, std::span(items, n), item_rows);
    for (std::size_t i = 0; i < n; ++i) {
      float* __restrict p = user_rows[i];
      float* __restrict q = item_rows[i];
      // Eight partial sums: a dot product the compiler vectorises without
      // reassociating one float sum (no -ffast-math needed).
      constexpr int kLanes = 8;
      float partial[kLanes] = {};
      int f = 0;
      for (; f + kLanes <= k; f += kLanes) {
        for (int l = 0; l < kLanes; ++l) partial[l] += p[f + l] * q[f + l];
      }
      float dot = 0;
      for (; f < k; ++f) dot += p[f] * q[f];
      for (int l = 0; l < kLanes; ++l) dot += partial[l];
      const float error = train[samples[start + i]].value - (mean + p[k] + q[k] + dot);
      p[k] += lr * (error - lambda * p[k]);
      q[k] += lr * (error - lambda * q[k]);
      const float lr_error = lr * error;
      const float item_lr_error = item_factor_step * lr_error;  // lr_error (bit for bit) unless planted
      const float decay = 1.0f - lr * lambda;
      for (int g = 0; g < trained_factors; ++g) {
        const float pf = p[g];
        p[g] = decay * pf + lr_error * q[g];
        q[g] = decay * q[g] + item_lr_error * pf;
      }
    }
  }
}

}  // namespace

runtime::WorkCounters MfApp::WorkOf(std::size_t samples) const {
  const double n = static_cast<double>(samples);
  const int k = params_.rank;
  runtime::WorkCounters work;
  work.flops = n * (8.0 * k + 12);
  work.bytes = n * 4.0 * (k + 1) * 4;  // two rows read and written
  work.random_row_accesses = 2 * static_cast<std::int64_t>(samples);
  return work;
}

void MfApp::Update(std::int64_t sample, runtime::ModelView& model, runtime::KernelContext& ctx) const {
  UpdateBatch(std::span(&sample, 1), model, ctx);
}

void MfApp::UpdateBatch(std::span<const std::int64_t> samples, runtime::ModelView& model,
                        runtime::KernelContext& ctx) const {
  // Planted defect (self-tests only): the factors are not trained.
  const int trained = DefectPlanted(kKernelSkipsFactors) ? 0 : params_.rank;
  // Planted defect: the item factors only decay, never follow the error.
  const float item_step = DefectPlanted(kItemFactorsNotTrained) ? 0.0f : 1.0f;
  const float step = params_.learning_rate / (1.0f + params_.learning_rate_decay * static_cast<float>(ctx.epoch));
  SgdSteps(samples, train_.data(), model, user_table_, item_table_, mean_, step, params_.regularization,
           params_.rank, trained, item_step);
  ctx.work += WorkOf(samples.size());
}

void MfApp::IndexTestRatings() {
  // A counting sort by item: a part's items are one slice of them.
  item_starts_.assign(items_ + 1, 0);
  for (const data::Rating& r : test_) ++item_starts_[static_cast<std::size_t>(r.item) + 1];
  for (std::size_t item = 1; item < item_starts_.size(); ++item) item_starts_[item] += item_starts_[item - 1];
  test_by_item_.resize(test_.size());
  std::vector<std::int64_t> slot(item_starts_.begin(), item_starts_.end() - 1);
  for (std::size_t i = 0; i < test_.size(); ++i) {
    test_by_item_[static_cast<std::size_t>(slot[static_cast<std::size_t>(test_[i].item)]++)] =
        static_cast<std::uint32_t>(i);
  }
}

int MfApp::UserParts(int parts) const {
  // The divisor p of `parts` whose cells read fewest rows: users / p + items / q.
  int best = 1;
  double best_rows = -1;
  for (int p = 1; p <= parts; ++p) {
    if (parts % p != 0) continue;
    const double rows = static_cast<double>(users_) / p + static_cast<double>(items_) / (parts / p);
    if (best_rows < 0 || rows < best_rows) {
      best = p;
      best_rows = rows;
    }
  }
  return best;
}

model::RowRange MfApp::PartRows(runtime::TableId table, std::int64_t rows, int part, int parts) const {
  const int p = UserParts(parts), q = parts / p;
  return table == user_table_.id ? model::PartOfRows(rows, part / q, p) : model::PartOfRows(rows, part % q, q);
}

double MfApp::SquaredError(const runtime::TableSet& model, const data::Rating& r) const {
  const int k = params_.rank;
  const std::span<const float> p = runtime::Row(model, user_table_, static_cast<std::int64_t>(r.user));
  const std::span<const float> q = runtime::Row(model, item_table_, static_cast<std::int64_t>(r.item));
  float prediction = mean_ + p[k] + q[k];
  for (int f = 0; f < k; ++f) prediction += p[f] * q[f];
  prediction = std::clamp(prediction, kMinRating, kMaxRating);
  const double e = static_cast<double>(r.value) - prediction;
  return e * e;
}

runtime::Evaluation MfApp::Evaluate(const runtime::TableSet& model) const {
  double squared = 0;
  for (const data::Rating& r : test_) squared += SquaredError(model, r);
  return CombineParts(std::vector<double>{squared, static_cast<double>(test_.size())});
}

std::vector<double> MfApp::EvaluatePart(const runtime::TableSet& model, const runtime::EvalContext& ctx) const {
  const auto rows_of = [&](runtime::FloatTable table, std::size_t rows) {
    const auto t = static_cast<std::size_t>(table.id.value);
    return t < ctx.part_rows.size() ? ctx.part_rows[t] : model::RowRange{0, static_cast<std::int64_t>(rows)};
  };
  const model::RowRange users = rows_of(user_table_, users_), items = rows_of(item_table_, items_);
  double squared = 0, ratings = 0;
  const std::int64_t end = item_starts_[static_cast<std::size_t>(items.last)];
  for (std::int64_t i = item_starts_[static_cast<std::size_t>(items.first)]; i < end; ++i) {
    const data::Rating& r = test_[test_by_item_[static_cast<std::size_t>(i)]];
    const auto user = static_cast<std::int64_t>(r.user);
    if (user < users.first || user >= users.last) continue;
    squared += SquaredError(model, r);
    ratings += 1;
  }
  return {squared, ratings};
}

runtime::Evaluation MfApp::CombineParts(std::span<const double> sums) const {
  const double ratings = sums.size() == 2 ? sums[1] : 0.0;
  return {"test_rmse", ratings > 0 ? std::sqrt(sums[0] / ratings) : 0.0};
}

Result<std::unique_ptr<MfApp>> LoadMfApp(const proto::Config& config, const std::filesystem::path& ratings_file) {
  STALELEARN_ASSIGN_OR_RETURN(data::RatingsTable table, data::ReadRatingsTsv(ratings_file));
  STALELEARN_ASSIGN_OR_RETURN(data::RatingsSplit split,
                              data::SplitRatings(std::move(table.ratings), config.data().test_fraction(),
                                                 config.data().split_seed()));
  if (split.train.empty()) return InvalidArgument(fmt::format("{}: no training ratings", ratings_file.string()));
  STALELEARN_ASSIGN_OR_RETURN(MfConfig mf, config::UnpackAppParams<MfConfig>(config));
  // A config built in code (tests, tools) may carry no resolved section.
  proto::Config scratch;
  STALELEARN_RETURN_IF_ERROR(ResolveConfig(mf, scratch));
  MfParams params{mf.rank(), mf.learning_rate(), mf.regularization(), mf.init_scale(), config.seed(),
                  mf.deal() == "user"};
  params.learning_rate_decay = mf.learning_rate_decay();
  const std::string dataset = config.data().name().empty() ? "movielens" : config.data().name();
  return std::make_unique<MfApp>(dataset, table.num_users(), table.num_items(), std::move(split.train),
                                 std::move(split.test), params);
}

}  // namespace stalelearn::apps::mf
