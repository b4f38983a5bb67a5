#include "apps/snn/snn_app.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "apps/snn/register.h"
#include "framework/core/config_loader.h"

namespace stalelearn::apps::snn {
namespace {

// Tables are w0..wH (feed-forward, H = hidden layers), then r<l> for each
// recurrent hidden layer in order.
struct TableOf {
  int layer;
  bool recurrent;
};

TableOf Locate(const SnnShape& shape, int table) {
  if (table < shape.layers()) return {table, false};
  return {table - shape.layers(), true};
}

// A compute rank's scratch: the weights copied out of the model, the
// gradient, a forward trace and one sample's input spikes.
struct RankScratch final : runtime::LocalState {
  explicit RankScratch(const SnnNetwork& network)
      : workspace(network), weights(SnnParameters::Zeros(network.shape())), grad(weights) {}
  Workspace workspace;
  SnnParameters weights;
  SnnParameters grad;
  SpikeTrain input;
};

constexpr std::uint64_t kTestCodingSeed = 0x736E6E74657374ull;  // rate coding of test images

}  // namespace

SnnAppParams ParamsFromConfig(const SnnConfig& c, std::uint64_t seed) {
  SnnAppParams p;
  Result<std::vector<int>> widths = ParseHiddenWidths(c.hidden());
  p.shape.hidden = widths.ok() ? std::move(widths).value() : std::vector<int>{128};  // validated by ResolveConfig
  p.shape.recurrent = c.recurrent();
  p.lif.steps = c.steps();
  p.lif.beta = c.beta();
  p.lif.threshold = c.threshold();
  p.lif.slope = c.slope();
  p.lif.window = c.window();
  p.lif.max_activity = c.max_activity();
  p.lif.readout = c.readout() == "spike_count" ? Readout::kSpikeCount : Readout::kMembrane;
  p.lif.count_scale = c.count_scale();
  p.coding = c.coding() == "rate" ? Coding::kRate : Coding::kLatency;
  p.latency_cutoff = c.latency_cutoff();
  p.propagation = c.propagation() == "dense" ? Propagation::kDense : Propagation::kSparse;
  p.learning_rate = c.learning_rate();
  p.init_scale = c.init_scale();
  p.seed = seed;
  return p;
}

SnnTableList SnnTables(const SnnShape& shape) {
  SnnTableList tables;
  for (int l = 0; l < shape.layers(); ++l) {
    tables.matrices.push_back(tables.list.AddFloat(fmt::format("w{}", l), shape.fan_in(l) + 1, shape.width(l),
                                                   /*dense=*/true));
  }
  for (int l = 0; l < shape.layers(); ++l) {
    if (shape.has_recurrence(l)) {
      tables.matrices.push_back(
          tables.list.AddFloat(fmt::format("r{}", l), shape.width(l), shape.width(l), /*dense=*/true));
    }
  }
  return tables;
}

void InitialRow(const SnnAppParams& params, int table, std::int64_t row, std::span<float> values) {
  const TableOf where = Locate(params.shape, table);
  const int fan_in = where.recurrent ? params.shape.width(where.layer) : params.shape.fan_in(where.layer);
  if (!where.recurrent && row == fan_in) {  // bias
    std::fill(values.begin(), values.end(), 0.0f);
    return;
  }
  runtime::RandomStream random =
      runtime::RandomStream::For(params.seed ^ 0x736E6E696E6974ull, table, static_cast<std::int64_t>(row));
  const double scale = params.init_scale / std::sqrt(static_cast<double>(fan_in)) * (where.recurrent ? 0.5 : 1.0);
  for (float& x : values) x = static_cast<float>(random.Normal() * scale);
}

void ReadParameters(const SnnShape& shape, const runtime::TableSet& model, SnnParameters& w) {
  std::size_t table = 0;
  for (int l = 0; l < shape.layers(); ++l, ++table) {
    const std::span<const std::byte> bytes = model[table].bytes();
    std::memcpy(w.feed[static_cast<std::size_t>(l)].data(), bytes.data(), bytes.size());
  }
  for (int l = 0; l < shape.layers(); ++l) {
    if (!shape.has_recurrence(l)) continue;
    const std::span<const std::byte> bytes = model[table++].bytes();
    std::memcpy(w.recurrent[static_cast<std::size_t>(l)].data(), bytes.data(), bytes.size());
  }
}

SnnApp::SnnApp(std::string dataset, LabelledImages train, LabelledImages test, SnnAppParams params)
    : dataset_(std::move(dataset)),
      train_(std::move(train)),
      test_(std::move(test)),
      params_(std::move(params)),
      tables_(SnnTables(params_.shape)),
      network_(params_.shape, params_.lif) {}

void SnnApp::InitRow(runtime::TableId table, runtime::RowId row, runtime::RowValues values) const {
  InitialRow(params_, static_cast<int>(table.value), row.value, values.floats());
}

void SnnApp::Encode(const IdxImages& images, std::int64_t sample, runtime::RandomStream& random,
                    SpikeTrain& out) const {
  if (params_.coding == Coding::kLatency) {
    EncodeLatency(images.image(sample), images.pixels_per_image(), params_.lif.steps, params_.latency_cutoff, out);
  } else {
    EncodeRate(images.image(sample), images.pixels_per_image(), params_.lif.steps, random, out);
  }
}

void SnnApp::EncodeTrain(std::int64_t sample, runtime::RandomStream& random, SpikeTrain& out) const {
  Encode(train_.images, sample, random, out);
}

void SnnApp::EncodeTest(std::int64_t sample, SpikeTrain& out) const {
  runtime::RandomStream random = runtime::RandomStream::For(kTestCodingSeed, 0, sample);
  Encode(test_.images, sample, random, out);
}

std::unique_ptr<runtime::LocalState> SnnApp::CreateLocalState(const runtime::RankInfo&,
                                                              std::span<const std::int64_t>) const {
  return std::make_unique<RankScratch>(network_);
}

void SnnApp::UpdateBatch(std::span<const std::int64_t> samples, runtime::ModelView& model,
                         runtime::KernelContext& ctx) const {
  auto& scratch = *static_cast<RankScratch*>(ctx.state);
  const SnnShape& shape = params_.shape;
  const std::vector<runtime::TableSpec>& tables = tables_.list.specs();
  // Copy the weights out of the view, reading (the rows this batch does not
  // change are then neither copied nor diffed by the replica).
  const auto for_each_matrix = [&](auto&& visit) {
    std::uint32_t table = 0;
    for (int l = 0; l < shape.layers(); ++l) visit(table++, scratch.weights.feed[l], scratch.grad.feed[l]);
    for (int l = 0; l < shape.layers(); ++l) {
      if (shape.has_recurrence(l)) visit(table++, scratch.weights.recurrent[l], scratch.grad.recurrent[l]);
    }
  };
  for_each_matrix([&](std::uint32_t table, std::vector<float>& w, std::vector<float>&) {
    const auto width = static_cast<std::size_t>(tables[table].width);
    for (std::int64_t r = 0; r < tables[table].rows; ++r) {
      const std::span<const float> row = model.ReadRow(tables_.matrices[table], runtime::RowId{r});
      std::copy(row.begin(), row.end(), w.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(r) * width));
    }
  });
  // scratch.grad is all zeros here: it starts so, and the step below zeroes
  // each row it applies (a few rows of a large matrix change per batch).
  double multiply_adds = 0, gathered_rows = 0;
  for (std::int64_t sample : samples) {
    EncodeTrain(sample, ctx.random, scratch.input);
    const int label = TrainLabel(sample);
    const ForwardStats stats = network_.Forward(scratch.weights, scratch.input, label, params_.propagation, scratch.workspace);
    multiply_adds += stats.multiply_adds;
    multiply_adds += network_.Backward(scratch.weights, scratch.input, label, params_.propagation, scratch.workspace, scratch.grad);
    gathered_rows += params_.propagation == Propagation::kSparse ? 2 * (stats.input_spikes + stats.hidden_spikes) : 0;
  }
  // SGD on the mean gradient; rows with a zero gradient are left untouched
  // (and so never shipped); the applied rows of the gradient go back to zero.
  const float step = params_.learning_rate / static_cast<float>(samples.size());
  for_each_matrix([&](std::uint32_t table, std::vector<float>&, std::vector<float>& g) {
    const auto width = static_cast<std::size_t>(tables[table].width);
    for (std::int64_t r = 0; r < tables[table].rows; ++r) {
      float* grow = g.data() + static_cast<std::size_t>(r) * width;
      if (std::all_of(grow, grow + width, [](float x) { return x == 0.0f; })) continue;
      const std::span<float> row = model.Row(tables_.matrices[table], runtime::RowId{r});
      for (std::size_t j = 0; j < width; ++j) row[j] -= step * grow[j];
      std::fill(grow, grow + width, 0.0f);
    }
  });
  const double parameters = static_cast<double>(scratch.weights.size());
  ctx.work.flops += 2 * multiply_adds + 4 * parameters;
  ctx.work.bytes += 8 * multiply_adds + 16 * parameters;
  ctx.work.random_row_accesses += static_cast<std::int64_t>(gathered_rows);
}

std::vector<double> SnnApp::EvaluatePart(const runtime::TableSet& model, const runtime::EvalContext& ctx) const {
  SnnParameters weights = SnnParameters::Zeros(params_.shape);
  ReadParameters(params_.shape, model, weights);
  Workspace workspace(network_);
  SpikeTrain input;
  std::vector<double> sums(7, 0.0);
  const auto ranks = static_cast<std::int64_t>(std::max(1, ctx.info.compute_ranks));
  for (std::int64_t i = ctx.info.rank.value; i < TestSamples(); i += ranks) {
    EncodeTest(i, input);
    const ForwardStats stats = network_.Forward(weights, input, TestLabel(i), params_.propagation, workspace);
    sums[0] += stats.predicted == TestLabel(i) ? 1 : 0;
    sums[1] += stats.loss;
    sums[2] += 1;
    sums[3] += stats.hidden_spikes;
    sums[4] += stats.hidden_slots;
    sums[5] += stats.window_neurons;
    sums[6] += stats.input_spikes;
  }
  return sums;
}

runtime::Evaluation SnnApp::CombineParts(std::span<const double> sums) const {
  if (sums.size() != 7 || sums[2] == 0) return {"test_accuracy", 0, {}};
  const double slots = std::max(1.0, sums[4]);
  const double input_slots = sums[2] * params_.lif.steps * params_.shape.inputs;
  return {"test_accuracy",
          sums[0] / sums[2],
          {{"test_loss", sums[1] / sums[2]},
           {"activity", sums[3] / slots},
           {"window_fraction", sums[5] / slots},
           {"input_activity", sums[6] / input_slots}}};
}

Result<std::unique_ptr<SnnApp>> LoadSnnApp(const proto::Config& config, const std::filesystem::path& images_file) {
  STALELEARN_ASSIGN_OR_RETURN(SnnConfig snn, config::UnpackAppParams<SnnConfig>(config));
  proto::Config scratch;  // a config built in code may carry no resolved section
  STALELEARN_RETURN_IF_ERROR(ResolveConfig(snn, scratch));
  const std::filesystem::path dir = images_file.parent_path();
  constexpr int kClasses = 10;
  STALELEARN_ASSIGN_OR_RETURN(
      LabelledImages train,
      ReadLabelledImages(dir / "train-images-idx3-ubyte", dir / "train-labels-idx1-ubyte", kClasses));
  STALELEARN_ASSIGN_OR_RETURN(LabelledImages test, ReadLabelledImages(dir / "t10k-images-idx3-ubyte",
                                                                      dir / "t10k-labels-idx1-ubyte", kClasses));
  if (train.images.pixels_per_image() != test.images.pixels_per_image()) {
    return InvalidArgument(fmt::format("{}: train images are {}x{}, test images {}x{}", dir.string(), train.images.rows,
                                       train.images.columns, test.images.rows, test.images.columns));
  }
  const auto keep = [](LabelledImages& set, std::int64_t limit) {
    if (limit <= 0 || limit >= set.images.count) return;
    set.images.count = limit;
    set.images.pixels.resize(static_cast<std::size_t>(limit) * static_cast<std::size_t>(set.images.pixels_per_image()));
    set.labels.resize(static_cast<std::size_t>(limit));
  };
  keep(train, snn.train_limit());
  keep(test, snn.test_limit());
  if (train.images.count < 1 || test.images.count < 1) {
    return InvalidArgument(fmt::format("{}: needs at least one training and one test image", dir.string()));
  }
  SnnAppParams params = ParamsFromConfig(snn, config.seed());
  params.shape.inputs = train.images.pixels_per_image();
  params.shape.outputs = kClasses;
  const std::string dataset = config.data().name().empty() ? dir.filename().string() : config.data().name();
  return std::make_unique<SnnApp>(dataset, std::move(train), std::move(test), std::move(params));
}

}  // namespace stalelearn::apps::snn
