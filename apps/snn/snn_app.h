// The spiking network app: a (recurrent) LIF network (snn_network.h) trained
// by BPTT with a surrogate gradient on images encoded as spike trains
// (MNIST, Fashion-MNIST: IDX files, idx_reader.h).
//
// Tables: per layer l, "w<l>" with one row per input neuron plus the bias row
// (fan_in + 1 rows, width = the layer's width), and per recurrent hidden
// layer "r<l>" (width x width). All are dense tables (TableSpec::dense): the
// kernel reads the weights without touching them (ModelView::ReadRow) and
// asks for a row only to write it, so the replica diffs and ships only rows
// whose gradient is non-zero; the rows of inputs that did not spike in any
// sample of the clock are neither sent nor diffed. The mini-batch kernel (one
// clock's samples) runs forward and backward per sample, sums the gradient
// and takes a compute-side SGD step of learning_rate on the mean gradient,
// row by row, writing only rows whose gradient is non-zero. The memory ranks
// merge those deltas with each table's merge policy (apps/snn/*.pbtxt: Adam).
// Evaluation in parts: each compute rank scores every k-th test image; the
// parts add up to test accuracy, loss and the observed activities (fraction
// of hidden neurons spiking per step, fraction inside the surrogate window,
// input spikes per input neuron and step).
//
// Immutable after construction; every method is const and thread-safe
// (framework/runtime/app.h). A compute rank's scratch is its LocalState.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "apps/snn/idx_reader.h"
#include "apps/snn/snn_config.pb.h"
#include "apps/snn/snn_network.h"
#include "apps/snn/spike_coding.h"
#include "framework/proto/config.pb.h"
#include "framework/runtime/app.h"
#include "framework/runtime/app_facets.h"

namespace stalelearn::apps::snn {

struct SnnAppParams {
  SnnShape shape;
  LifParams lif;
  Coding coding = Coding::kLatency;
  float latency_cutoff = 0.1f;
  Propagation propagation = Propagation::kSparse;
  float learning_rate = 0.05f;
  float init_scale = 2.0f;
  std::uint64_t seed = 0;  // initial weights
};

// Resolved (defaults filled, validated) SnnConfig as typed parameters.
SnnAppParams ParamsFromConfig(const SnnConfig& config, std::uint64_t seed);

// The initial weight of an element: N(0, init_scale^2 / fan_in) drawn from a
// stream keyed by (seed, table, row); bias rows start at zero.
void InitialRow(const SnnAppParams& params, int table, std::int64_t row, std::span<float> values);

// The app's tables for `shape`: w0..wH (one per layer), then r<l> for each
// recurrent hidden layer; `matrices` holds their handles in that order.
struct SnnTableList {
  runtime::TableList list;
  std::vector<runtime::FloatTable> matrices;
};
SnnTableList SnnTables(const SnnShape& shape);

// Facets: local state (the rank's scratch), evaluation in parts.
class SnnApp final : public runtime::App, public runtime::HasLocalState, public runtime::EvaluatesInParts {
 public:
  SnnApp(std::string dataset, LabelledImages train, LabelledImages test, SnnAppParams params);

  std::string name() const override { return "snn"; }
  std::string dataset() const override { return dataset_; }
  std::vector<runtime::TableSpec> Tables() const override { return tables_.list.specs(); }
  void InitRow(runtime::TableId table, runtime::RowId row, runtime::RowValues values) const override;
  std::int64_t TrainingSamples() const override { return train_.images.count; }
  void RowsOf(std::int64_t, std::vector<runtime::RowRef>&) const override {}  // dense tables only
  // The local state is scratch space rewritten by every batch: a checkpoint holds nothing of it.
  Result<std::vector<std::byte>> SaveLocalState(const runtime::LocalState*) const override {
    return std::vector<std::byte>{};
  }
  Status RestoreLocalState(std::span<const std::byte>, runtime::LocalState*) const override { return Status::Ok(); }
  std::unique_ptr<runtime::LocalState> CreateLocalState(const runtime::RankInfo& info,
                                                        std::span<const std::int64_t> samples) const override;
  void UpdateBatch(std::span<const std::int64_t> samples, runtime::ModelView& model,
                   runtime::KernelContext& ctx) const override;

  // {correct, loss, count, hidden spikes, hidden slots, window neurons, input spikes}.
  std::vector<double> EvaluatePart(const runtime::TableSet& model, const runtime::EvalContext& ctx) const override;
  // test_accuracy; test_loss, activity, window_fraction, input_activity as further metrics.
  runtime::Evaluation CombineParts(std::span<const double> sums) const override;

  const SnnAppParams& params() const { return params_; }
  const SnnNetwork& network() const { return network_; }
  // The spike train of training image `sample` (rate coding draws from `random`).
  void EncodeTrain(std::int64_t sample, runtime::RandomStream& random, SpikeTrain& out) const;
  void EncodeTest(std::int64_t sample, SpikeTrain& out) const;
  int TrainLabel(std::int64_t sample) const { return train_.labels[static_cast<std::size_t>(sample)]; }
  int TestLabel(std::int64_t sample) const { return test_.labels[static_cast<std::size_t>(sample)]; }
  std::int64_t TestSamples() const { return test_.images.count; }

 private:
  void Encode(const IdxImages& images, std::int64_t sample, runtime::RandomStream& random, SpikeTrain& out) const;

  std::string dataset_;
  LabelledImages train_;
  LabelledImages test_;
  SnnAppParams params_;
  SnnTableList tables_;
  SnnNetwork network_;
};

// Copies the model's tables (replica rows or a full TableSet) into `w`.
void ReadParameters(const SnnShape& shape, const runtime::TableSet& model, SnnParameters& w);

// Loads the train and test IDX pairs of the data set directory (`images_file`
// is its train-images file, the catalog's path), keeps the first train_limit
// / test_limit images, and builds the app from the resolved snn section.
Result<std::unique_ptr<SnnApp>> LoadSnnApp(const proto::Config& config, const std::filesystem::path& images_file);

}  // namespace stalelearn::apps::snn
