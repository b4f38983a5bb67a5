#include "apps/snn/snn_bench.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>

#include "apps/snn/idx_reader.h"
#include "apps/snn/snn_app.h"
#include "apps/snn/snn_network.h"
#include "apps/snn/spike_coding.h"

namespace stalelearn::apps::snn {
namespace {

using Clock = std::chrono::steady_clock;

// CPU seconds of the calling thread: on a shared machine, wall time measures
// the neighbours too; both are reported.
double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

struct Timing {
  double wall = 0;
  double cpu = 0;
};

struct BenchOptions {
  std::vector<double> activities = {0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5};
  std::string dataset = "mnist";
  std::vector<int> hidden = {256, 256};
  int steps = 25;
  bool no_recurrent = false;
  int batch = 32;
  int train_samples = 6000;
  int timed_samples = 256;
  int test_samples = 1000;
  float learning_rate = 0.002f;
  // Larger than the app's default 2: hidden layers start active enough (about
  // 0.3 of the neurons per step) for every cap of the sweep to bind.
  float init_scale = 4.0f;
  std::uint64_t seed = 42;
  bool json = false;
};

// Adam over every parameter, one step per batch (the same for both propagations).
class Adam {
 public:
  Adam(const SnnParameters& shape_like, float learning_rate)
      : learning_rate_(learning_rate), m_(shape_like), v_(shape_like) {
    m_.SetZero();
    v_.SetZero();
  }
  void Step(SnnParameters& w, const SnnParameters& grad, float scale) {
    ++t_;
    const float c1 = 1.0f - std::pow(0.9f, static_cast<float>(t_)), c2 = 1.0f - std::pow(0.999f, static_cast<float>(t_));
    const auto apply = [&](std::vector<float>& x, const std::vector<float>& g, std::vector<float>& m, std::vector<float>& v) {
      for (std::size_t i = 0; i < x.size(); ++i) {
        const float gi = g[i] * scale;
        m[i] = 0.9f * m[i] + 0.1f * gi;
        v[i] = 0.999f * v[i] + 0.001f * gi * gi;
        x[i] -= learning_rate_ * (m[i] / c1) / (std::sqrt(v[i] / c2) + 1e-8f);
      }
    };
    for (std::size_t l = 0; l < w.feed.size(); ++l) apply(w.feed[l], grad.feed[l], m_.feed[l], v_.feed[l]);
    for (std::size_t l = 0; l < w.recurrent.size(); ++l) {
      apply(w.recurrent[l], grad.recurrent[l], m_.recurrent[l], v_.recurrent[l]);
    }
  }

 private:
  float learning_rate_;
  SnnParameters m_, v_;
  int t_ = 0;
};

struct Activity {
  double spikes = 0, slots = 0, window = 0;
  void Add(const ForwardStats& s) {
    spikes += s.hidden_spikes;
    slots += s.hidden_slots;
    window += s.window_neurons;
  }
  double fraction() const { return slots > 0 ? spikes / slots : 0; }
  double window_fraction() const { return slots > 0 ? window / slots : 0; }
};

struct Trainer {
  const SnnNetwork& network;
  const LabelledImages& images;
  float cutoff;

  // Trains on images [first, first + count) (wrapping), batch by batch;
  // returns the wall and thread CPU seconds taken.
  Timing Train(SnnParameters& w, Adam& adam, Propagation propagation, std::int64_t first, std::int64_t count,
               int batch, Activity& activity) const {
    Workspace ws(network);
    SnnParameters grad = SnnParameters::Zeros(network.shape());
    SpikeTrain input;
    const auto start = Clock::now();
    const double cpu_start = ThreadCpuSeconds();
    for (std::int64_t done = 0; done < count;) {
      grad.SetZero();
      const std::int64_t in_batch = std::min<std::int64_t>(batch, count - done);
      for (std::int64_t k = 0; k < in_batch; ++k, ++done) {
        const std::int64_t i = (first + done) % images.images.count;
        EncodeLatency(images.images.image(i), images.images.pixels_per_image(), network.params().steps, cutoff, input);
        const int label = images.labels[static_cast<std::size_t>(i)];
        activity.Add(network.Forward(w, input, label, propagation, ws));
        network.Backward(w, input, label, propagation, ws, grad);
      }
      adam.Step(w, grad, 1.0f / static_cast<float>(in_batch));
    }
    return {std::chrono::duration<double>(Clock::now() - start).count(), ThreadCpuSeconds() - cpu_start};
  }

  double Accuracy(const SnnParameters& w, std::int64_t count, Activity& activity) const {
    Workspace ws(network);
    SpikeTrain input;
    double correct = 0;
    const std::int64_t n = std::min(count, images.images.count);
    for (std::int64_t i = 0; i < n; ++i) {
      EncodeLatency(images.images.image(i), images.images.pixels_per_image(), network.params().steps, cutoff, input);
      const ForwardStats s = network.Forward(w, input, images.labels[static_cast<std::size_t>(i)], Propagation::kSparse, ws);
      activity.Add(s);
      correct += s.predicted == images.labels[static_cast<std::size_t>(i)] ? 1 : 0;
    }
    return n > 0 ? correct / static_cast<double>(n) : 0;
  }
};

double MaxDifference(const SnnParameters& a, const SnnParameters& b) {
  double diff = 0;
  const auto add = [&](const std::vector<float>& x, const std::vector<float>& y) {
    for (std::size_t i = 0; i < x.size(); ++i) diff = std::max(diff, std::fabs(static_cast<double>(x[i]) - y[i]));
  };
  for (std::size_t l = 0; l < a.feed.size(); ++l) add(a.feed[l], b.feed[l]);
  for (std::size_t l = 0; l < a.recurrent.size(); ++l) add(a.recurrent[l], b.recurrent[l]);
  return diff;
}

struct CapResult {
  double cap = 0;
  double dense_samples_per_s = 0, sparse_samples_per_s = 0;          // per thread CPU second
  double dense_samples_per_wall_s = 0, sparse_samples_per_wall_s = 0;
  double train_activity = 0, window_fraction = 0, test_activity = 0;
  double accuracy = -1;  // -1: not measured (--train-samples 0 still scores the untrained model)
  double max_weight_difference = 0;
};

Status Validate(const BenchOptions& o) {
  if (o.activities.empty()) return InvalidArgument("--activity needs at least one value");
  for (double a : o.activities) {
    if (!(a > 0 && a <= 1)) return InvalidArgument(fmt::format("--activity values must be in (0, 1], got {}", a));
  }
  if (o.hidden.empty() || o.hidden.size() > 3) return InvalidArgument("--hidden takes 1 to 3 widths");
  for (int h : o.hidden) {
    if (h < 1 || h > 65536) return InvalidArgument(fmt::format("--hidden widths must be in [1, 65536], got {}", h));
  }
  if (o.steps < 1 || o.steps > 10000) return InvalidArgument(fmt::format("--steps must be in [1, 10000], got {}", o.steps));
  if (!(o.init_scale > 0)) return InvalidArgument(fmt::format("--init-scale must be > 0, got {}", o.init_scale));
  if (o.batch < 1 || o.timed_samples < 1 || o.train_samples < 0 || o.test_samples < 1) {
    return InvalidArgument("--batch, --timed-samples and --test-samples must be >= 1, --train-samples >= 0");
  }
  return Status::Ok();
}

}  // namespace

Status RunSnnBench(const std::vector<std::string>& args, const std::filesystem::path& data_dir) {
  BenchOptions o;
  CLI::App cli{"stalelearn bench snn: dense against sparse spiking-network training throughput per activity cap",
               "stalelearn bench snn"};
  cli.add_option("--activity", o.activities, "max_activity caps to measure (comma-separated)")->delimiter(',');
  cli.add_option("--dataset", o.dataset, "fetched data set (mnist, fashion-mnist)");
  cli.add_option("--hidden", o.hidden, "hidden layer widths (comma-separated)")->delimiter(',');
  cli.add_option("--steps", o.steps, "time steps per sample");
  cli.add_flag("--no-recurrent", o.no_recurrent, "hidden layers without recurrent weights");
  cli.add_option("--batch", o.batch, "samples per Adam step");
  cli.add_option("--train-samples", o.train_samples, "sparse training samples per cap before scoring (0: untrained)");
  cli.add_option("--timed-samples", o.timed_samples, "samples timed per propagation and cap");
  cli.add_option("--test-samples", o.test_samples, "test images scored per cap");
  cli.add_option("--learning-rate", o.learning_rate, "Adam step size");
  cli.add_option("--seed", o.seed, "initial weights");
  cli.add_option("--init-scale", o.init_scale, "initial weights ~ N(0, init_scale^2 / fan_in): larger, more spikes");
  cli.add_flag("--json", o.json, "one JSON object on stdout");
  try {
    std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 parses a reversed vector
    cli.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    std::printf("%s", cli.help().c_str());
    return Status::Ok();
  } catch (const CLI::ParseError& e) {
    return InvalidArgument(fmt::format("bench snn: {}", e.what()));
  }
  STALELEARN_RETURN_IF_ERROR(Validate(o));
  const std::filesystem::path dir = data_dir / o.dataset;
  Result<LabelledImages> fetched =
      ReadLabelledImages(dir / "train-images-idx3-ubyte", dir / "train-labels-idx1-ubyte", 10);
  if (!fetched.ok()) {
    return fetched.status().WithContext(fmt::format("bench snn (deploy/fetch-data.sh {} fetches it)", o.dataset));
  }
  LabelledImages train = std::move(fetched).value();
  STALELEARN_ASSIGN_OR_RETURN(LabelledImages test,
                              ReadLabelledImages(dir / "t10k-images-idx3-ubyte", dir / "t10k-labels-idx1-ubyte", 10));

  SnnAppParams params;
  params.shape = SnnShape{train.images.pixels_per_image(), o.hidden, 10, !o.no_recurrent};
  params.lif.steps = o.steps;
  params.seed = o.seed;
  params.init_scale = o.init_scale;
  const float cutoff = params.latency_cutoff;
  std::vector<CapResult> results;
  for (double cap : o.activities) {
    params.lif.max_activity = static_cast<float>(cap);
    const SnnNetwork network(params.shape, params.lif);
    SnnParameters w = SnnParameters::Zeros(params.shape);
    // The app's initial weights (tables w<l>, then r<l>).
    const std::vector<runtime::TableSpec> tables = SnnTables(params.shape).list.specs();
    ReadParameters(params.shape, [&] {
      runtime::TableSet set = model::MakeTableSet(tables);
      for (std::size_t t = 0; t < tables.size(); ++t) {
        for (std::int64_t r = 0; r < tables[t].rows; ++r) {
          InitialRow(params, static_cast<int>(t), r, set[t].FloatRow(r));
        }
      }
      return set;
    }(), w);
    Adam adam(w, o.learning_rate);
    const Trainer trainer{network, train, cutoff};
    Activity trained_activity, dense_activity, sparse_activity, test_activity;
    trainer.Train(w, adam, Propagation::kSparse, 0, o.train_samples, o.batch, trained_activity);
    SnnParameters dense_w = w, sparse_w = w;
    Adam dense_adam = adam, sparse_adam = adam;
    CapResult r;
    r.cap = cap;
    const Timing dense_s =
        trainer.Train(dense_w, dense_adam, Propagation::kDense, o.train_samples, o.timed_samples, o.batch, dense_activity);
    const Timing sparse_s = trainer.Train(sparse_w, sparse_adam, Propagation::kSparse, o.train_samples, o.timed_samples,
                                          o.batch, sparse_activity);
    r.dense_samples_per_s = o.timed_samples / dense_s.cpu;
    r.sparse_samples_per_s = o.timed_samples / sparse_s.cpu;
    r.dense_samples_per_wall_s = o.timed_samples / dense_s.wall;
    r.sparse_samples_per_wall_s = o.timed_samples / sparse_s.wall;
    r.train_activity = sparse_activity.fraction();
    r.window_fraction = sparse_activity.window_fraction();
    r.max_weight_difference = MaxDifference(dense_w, sparse_w);
    const Trainer scorer{network, test, cutoff};
    r.accuracy = scorer.Accuracy(sparse_w, o.test_samples, test_activity);
    r.test_activity = test_activity.fraction();
    results.push_back(r);
    if (!o.json) {
      std::printf("cap %-6g dense %8.1f samples/cpu-s  sparse %8.1f samples/cpu-s  speedup %6.2fx  activity %.4f (test %.4f)  "
                  "window %.3f  accuracy %.4f  max |w_dense - w_sparse| %.3g\n",
                  cap, r.dense_samples_per_s, r.sparse_samples_per_s, r.sparse_samples_per_s / r.dense_samples_per_s,
                  r.train_activity, r.test_activity, r.window_fraction, r.accuracy, r.max_weight_difference);
      std::fflush(stdout);
    }
  }
  if (o.json) {
    std::string rows;
    for (const CapResult& r : results) {
      rows += fmt::format(
          "{}{{\"max_activity\":{},\"dense_samples_per_s\":{:.3f},\"sparse_samples_per_s\":{:.3f},\"speedup\":{:.3f},"
          "\"observed_activity\":{:.6f},\"test_activity\":{:.6f},\"window_fraction\":{:.6f},\"accuracy\":{:.4f},"
          "\"max_weight_difference\":{:.3g},\"dense_samples_per_wall_s\":{:.3f},\"sparse_samples_per_wall_s\":{:.3f}}}",
          rows.empty() ? "" : ",", r.cap, r.dense_samples_per_s, r.sparse_samples_per_s,
          r.sparse_samples_per_s / r.dense_samples_per_s, r.train_activity, r.test_activity, r.window_fraction,
          r.accuracy, r.max_weight_difference, r.dense_samples_per_wall_s, r.sparse_samples_per_wall_s);
    }
    std::printf(
        "{\"bench\":\"snn\",\"dataset\":\"%s\",\"inputs\":%d,\"hidden\":[%s],\"outputs\":10,\"recurrent\":%s,"
        "\"steps\":%d,\"batch\":%d,\"train_samples\":%d,\"timed_samples\":%d,\"test_samples\":%d,\"coding\":\"latency\","
        "\"results\":[%s]}\n",
        o.dataset.c_str(), params.shape.inputs, fmt::format("{}", fmt::join(o.hidden, ",")).c_str(),
        o.no_recurrent ? "false" : "true", o.steps, o.batch, o.train_samples, o.timed_samples, o.test_samples,
        rows.c_str());
  }
  return Status::Ok();
}

}  // namespace stalelearn::apps::snn
